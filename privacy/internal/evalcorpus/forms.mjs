// Assembles a labelled corpus of everyday messages (support tickets,
// letters, forms, e-mails) from the templates below, written for it, and
// values of @faker-js/faker 10.6.0 (MIT) in sixteen locales, in the
// evaluation format of toolgate eval pii (offsets in code points). Each
// placeholder is one labelled span: a street line, a postcode, a unit or a
// whole postal address is ADDRESS, a city or a country LOCATION, a name
// PERSON, a company ORGANIZATION. The output is the same for every run.
//
//	mkdir -p /tmp/forms && cd /tmp/forms && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{forms,common}.mjs . && node forms.mjs forms.json
//
// docs/PRIVACY.md (Evaluation) reports the scores on the templates of odd
// number (template_id % 2 == 1); only the others were read for errors.
import { fakerEN_US, fakerEN_GB, fakerDE, fakerDE_AT, fakerFR, fakerIT, fakerES, fakerNL, fakerPL, fakerPT_PT, fakerSV, fakerEN_CA, fakerEN_AU, fakerEN_IE, fakerDA, fakerFI } from "@faker-js/faker";
import fs from "node:fs";
import { fill } from "./common.mjs";

const locales = [
  ["us", fakerEN_US], ["gb", fakerEN_GB], ["de", fakerDE], ["at", fakerDE_AT], ["fr", fakerFR], ["it", fakerIT],
  ["es", fakerES], ["nl", fakerNL], ["pl", fakerPL], ["pt", fakerPT_PT], ["se", fakerSV], ["ca", fakerEN_CA],
  ["au", fakerEN_AU], ["ie", fakerEN_IE], ["dk", fakerDA], ["fi", fakerFI],
];

// Street line, postcode and city, and the block of a postal address in
// the locale's order.
function addr(code, f) {
  const street = f.location.streetAddress(false);
  const postcode = f.location.zipCode();
  const city = f.location.city();
  let block, line;
  switch (code) {
    case "us": case "ca": case "au": {
      const st = f.location.state({ abbreviated: true });
      block = `${street}\n${city}, ${st} ${postcode}`; line = `${street}, ${city}, ${st} ${postcode}`; break;
    }
    case "gb": case "ie":
      block = `${street}\n${city}\n${postcode}`; line = `${street}, ${city} ${postcode}`; break;
    default:
      block = `${street}\n${postcode} ${city}`; line = `${street}, ${postcode} ${city}`;
  }
  return { street, postcode, city, block, line };
}

const T = [
  "Hi, my order still hasn't arrived. It should go to {street}, {postcode} {city}. Thanks, {name}",
  "Dear {name},\n\nThank you for your letter of last week. We have updated your records.\n\nKind regards,\n{name2}\n{company}",
  "Please change the delivery address on my account to {address1}. The old one is no longer valid.",
  "{name}\n{address}\n{country}",
  "Ticket #{n}: customer {name} reports that the parcel sent to {city} was damaged on arrival.",
  "From: {name} <{email}>\nSubject: invoice question\n\nHello, I was charged twice for the same booking. Could someone from {company} call me back on {phone}?",
  "I moved from {city} to {city2} in March, so please send the new card to {street}, {postcode} {city2}.",
  "Name: {name}\nAddress: {street}\nPostcode: {postcode}\nCity: {city}\nCountry: {country}",
  "Our technician {first} will visit {street} between 9 and 12 on Tuesday.",
  "Hello {first}, your reservation at the hotel in {city} is confirmed for two nights.",
  "Mr. {last} from {company} asked us to forward the contract to {name}.",
  "The meeting with {company} has been moved to their office in {city}, {country}.",
  "Can you ship to {country}? I live in {city} and would like to order three boxes.",
  "Shipping label\nTo: {name}\n{address}",
  "Ms. {last} called about the refund. She now lives at {address1}.",
  "{name} has worked at {company} since 2019 and is based in {city}.",
  "Please note my new address: {street}, {unit}, {postcode} {city}.",
  "Hi team, {name} from {company} will join the call tomorrow to discuss the {city} office.",
  "The package for {name} was left with a neighbour at {street}.",
  "Emergency contact: {name}, {phone}, {address1}",
  "We are sorry to hear about your stay in {city}. {first}, a manager, will contact you within two days.",
  "Dear Sir or Madam,\n\nI am writing to complain about the service at your branch in {city}. My account number is on file under {name}.\n\nYours faithfully,\n{name2}",
  "Booking for {name}: pick-up at {street}, {city}, drop-off at the airport.",
  "{company} has opened a new warehouse near {city}.",
  "I'm {first} {last} and I'd like to cancel my subscription. I've moved to {country}.",
  "Invoice address:\n{company}\n{address}\n{country}",
  "Could you tell {first} that the keys are at reception? Thanks, {first2}",
  "Your driver {first} is on the way to {street}.",
  "Applicant: {name}\nCurrent employer: {company}\nLocation: {city}",
  "The conference in {city} was organised by {company} and opened by {name}.",
  "Return the form to {name}, {company}, {address1}.",
  "hi, i live in {city} and my name is {name}, can u help me with my order",
  "Good morning, this is {name} calling from {city}. Please call me back.",
  "Replacement parts were sent to {address1} on Friday; {first} signed for them.",
  "Patient {name} was transferred from the clinic in {city} to the hospital in {city2}.",
  "We visited {city} and {city2} on our trip to {country} last summer.",
  "New supplier: {company}, {street}, {postcode} {city}, {country}.",
  "Please add {name} and {name2} to the mailing list.",
  "The tenant at {street}, {unit} reported a leak. Landlord: {name}.",
  "Thanks {first}! I'll pass the documents to {name} at {company} tomorrow.",
];

let seed = 20261201;
const out = [];
for (let i = 0; i < 800; i++) {
  const ti = i % T.length;
  const [code, f] = locales[(i * 7 + Math.floor(i / T.length)) % locales.length];
  f.seed(seed + i);
  const a = addr(code, f);
  const a2city = f.location.city();
  const first = f.person.firstName(), last = f.person.lastName();
  const vals = {
    name: [`${first} ${last}`, "PERSON"], name2: [`${f.person.firstName()} ${f.person.lastName()}`, "PERSON"],
    first: [first, "PERSON"], first2: [f.person.firstName(), "PERSON"], last: [last, "PERSON"],
    street: [a.street, "ADDRESS"], postcode: [a.postcode, "ADDRESS"], unit: [f.location.secondaryAddress(), "ADDRESS"],
    city: [a.city, "LOCATION"], city2: [a2city, "LOCATION"], country: [f.location.country(), "LOCATION"],
    company: [f.company.name(), "ORGANIZATION"], address: [a.block, "ADDRESS"], address1: [a.line, "ADDRESS"],
    email: [f.internet.email({ firstName: first, lastName: last }), "EMAIL_ADDRESS"],
    phone: [f.phone.number(), "PHONE_NUMBER"], n: [String(f.number.int({ min: 10000, max: 99999 })), null],
  };
  const { text, spans } = fill(T[ti], vals);
  out.push({ full_text: text, spans, template_id: ti, locale: code });
}
fs.writeFileSync(process.argv[2], JSON.stringify(out));
console.log(out.length, out.reduce((n, r) => n + r.spans.length, 0));
