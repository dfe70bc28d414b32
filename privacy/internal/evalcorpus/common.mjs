// What the corpus generators (forms.mjs, messages.mjs, messages3.mjs to
// messages9.mjs) share: filling a template with labelled values, and the postal
// addresses and dates of the messages sets. Copy it next to a generator
// when running one.

// postalAddress returns a street line of locale f with the rest of its
// postal address in the locale's order: "pc" street, postcode town; "cp"
// street, town postcode; "csp" street, town, province code and postcode;
// "c,p" street, town, postcode.
export function postalAddress(order, f) {
  const street = f.location.streetAddress(false);
  const postcode = f.location.zipCode();
  const city = f.location.city();
  let rest;
  switch (order) {
    case "pc": rest = `${postcode} ${city}`; break;
    case "cp": rest = `${city} ${postcode}`; break;
    case "csp": rest = `${city}, ${f.location.state({ abbreviated: true })} ${postcode}`; break;
    default: rest = `${city}, ${postcode}`;
  }
  return { street, line: `${street}, ${rest}`, block: `${street}\n${rest}` };
}

const months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

// writtenDate returns a date between 2021 and 2027 in one of four forms.
export function writtenDate(f) {
  const d = f.date.between({ from: "2021-01-01", to: "2027-12-31" });
  const y = d.getUTCFullYear(), m = d.getUTCMonth(), day = d.getUTCDate();
  const pad = (n) => String(n).padStart(2, "0");
  switch (f.number.int({ min: 0, max: 3 })) {
    case 0: return `${day} ${months[m]} ${y}`;
    case 1: return `${months[m]} ${day}, ${y}`;
    case 2: return `${y}-${pad(m + 1)}-${pad(day)}`;
    default: return `${pad(day)}.${pad(m + 1)}.${y}`;
  }
}

// fill replaces each {name} of tpl by vals[name][0] and returns the text
// with a span for every value whose type vals[name][1] is not null
// (offsets in code points, as toolgate eval pii reads them).
export function fill(tpl, vals) {
  let text = "", last = 0, m;
  const spans = [];
  const re = /\{(\w+)\}/g;
  while ((m = re.exec(tpl)) !== null) {
    text += tpl.slice(last, m.index);
    const [v, typ] = vals[m[1]];
    const start = [...text].length;
    text += v;
    if (typ) spans.push({ entity_type: typ, entity_value: v, start_position: start, end_position: start + [...v].length });
    last = m.index + m[0].length;
  }
  text += tpl.slice(last);
  return { text, spans };
}

// The values of the messages sets' templates for one record, drawn from
// f (a faker seeded for the record) in the order the sets were first
// generated with, so that their output stays the same: a name and its
// parts, a postal address of the locale's order (street line, one-line
// address and block, with the country or without), places, companies, an
// e-mail address, a phone number and a date, each with its label.
export function messageValues(order, f) {
  const a = postalAddress(order, f);
  const first = f.person.firstName(), last = f.person.lastName();
  const country = f.location.country();
  return {
    name: [`${first} ${last}`, "PERSON"], first: [first, "PERSON"], first2: [f.person.firstName(), "PERSON"],
    last: [last, "PERSON"], hon: [f.helpers.arrayElement(["Mr.", "Ms.", "Mrs.", "Dr."]), "PERSON"],
    street: [a.street, "ADDRESS"], addr: [a.line, "ADDRESS"], block: [a.block, "ADDRESS"],
    addrc: [`${a.line}, ${country}`, "ADDRESS"], blockc: [`${a.block}\n${country}`, "ADDRESS"],
    city: [f.location.city(), "LOCATION"], city2: [f.location.city(), "LOCATION"],
    region: [regionOf(f), "LOCATION"], country: [country, "LOCATION"],
    company: [f.company.name(), "ORGANIZATION"], company2: [f.company.name(), "ORGANIZATION"],
    email: [f.internet.email({ firstName: first, lastName: last }), "EMAIL_ADDRESS"],
    phone: [f.phone.number(), "PHONE_NUMBER"], date: [writtenDate(f), "DATE_TIME"],
  };
}

// A state or region; a country for locales that have none.
function regionOf(f) {
  try { return f.location.state(); } catch { return f.location.country(); }
}

// checkRecord fails the run when a record's labels do not fit its text:
// a value that is empty, holds a brace or white space at an end, a span
// whose text is not its value, or spans that overlap.
export function checkRecord(r) {
  const cps = [...r.full_text];
  let end = -1;
  for (const s of r.spans) {
    const v = cps.slice(s.start_position, s.end_position).join("");
    if (v === "" || v !== s.entity_value || /[{}]/.test(v) || v.trim() !== v || s.start_position < end) {
      throw new Error(`bad span in template ${r.template_id}, locale ${r.locale}`);
    }
    end = s.end_position;
  }
}

// writeMessages generates a messages set of n texts and writes it to
// path: text i fills template i mod T.length with the values of locale
// (i * stride + i / T.length) mod locales.length, its generator seeded
// with seed + i, so that every template meets every locale and the output
// is the same for every run. Each record is checked with checkRecord.
export function writeMessages(fs, path, { T, locales, seed, stride, n = 480 }) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const ti = i % T.length;
    const [code, f, order] = locales[(i * stride + Math.floor(i / T.length)) % locales.length];
    f.seed(seed + i);
    const vals = messageValues(order, f);
    const { text, spans } = fill(T[ti], vals);
    const r = { full_text: text, spans, template_id: ti, locale: code };
    checkRecord(r);
    out.push(r);
  }
  fs.writeFileSync(path, JSON.stringify(out));
  console.log(out.length, out.reduce((k, r) => k + r.spans.length, 0));
}
