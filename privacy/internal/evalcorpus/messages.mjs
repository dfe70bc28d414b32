// Assembles a second labelled corpus of everyday messages ("Messages,
// second set" in docs/PRIVACY.md): 30 templates written for it — chat,
// notes, letters, forms, e-mails — filled with values of @faker-js/faker
// 10.6.0 (MIT) in twenty locales that forms.mjs does not use, in the
// evaluation format of toolgate eval pii (offsets in code points). The
// output is the same for every run. Every template was scored once before
// any of it was read for errors; it has been read for errors since, and
// messages3.mjs holds the unseen set.
//
// The labels follow the convention of the scanner's documentation and of
// the dev set's whole addresses, fixed before the corpus was first scored:
//   - a written postal address (a street line with its postcode and town,
//     and the country when written with them), on one line or as a block
//     after a heading line, is one ADDRESS value;
//   - a street line alone is ADDRESS; a town written after a street line
//     without a postcode is a LOCATION of its own;
//   - a town, region or country outside an address is LOCATION;
//   - a name (given, family or both) is PERSON, and an honorific before it
//     ("Dr.") is a PERSON value of its own;
//   - a company is ORGANIZATION, an e-mail address EMAIL_ADDRESS, a phone
//     number PHONE_NUMBER, a date DATE_TIME.
// No template puts an address block right under a line holding only a
// name, the layout whose labelling differs between datasets.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages,common}.mjs . && node messages.mjs messages.json
import {
  fakerEN_ZA, fakerEN_IN, fakerEN_NG, fakerEN_GH, fakerNB_NO, fakerCS_CZ, fakerSK, fakerHR, fakerHU, fakerRO,
  fakerSL_SI, fakerPT_BR, fakerES_MX, fakerFR_CH, fakerFR_BE, fakerDE_CH, fakerNL_BE, fakerFR_CA, fakerLV, fakerFR_LU,
} from "@faker-js/faker";
import fs from "node:fs";
import { fill, postalAddress, writtenDate } from "./common.mjs";

// Each locale with the order of its postal address: "pc" is
// street, postcode town; "cp" street, town postcode; "csp" street, town,
// province code and postcode; "c,p" street, town, postcode.
const locales = [
  ["za", fakerEN_ZA, "c,p"], ["in", fakerEN_IN, "cp"], ["ng", fakerEN_NG, "cp"], ["gh", fakerEN_GH, "cp"],
  ["no", fakerNB_NO, "pc"], ["cz", fakerCS_CZ, "pc"], ["sk", fakerSK, "pc"], ["hr", fakerHR, "pc"],
  ["hu", fakerHU, "pc"], ["ro", fakerRO, "pc"], ["si", fakerSL_SI, "pc"], ["br", fakerPT_BR, "c,p"],
  ["mx", fakerES_MX, "pc"], ["ch-fr", fakerFR_CH, "pc"], ["be-fr", fakerFR_BE, "pc"], ["ch-de", fakerDE_CH, "pc"],
  ["be-nl", fakerNL_BE, "pc"], ["ca-fr", fakerFR_CA, "csp"], ["lv", fakerLV, "pc"], ["lu", fakerFR_LU, "pc"],
];


const T = [
  "Hey {first}, are you still coming to {city} this weekend? Let me know by tonight.",
  "Delivery note: leave the box at {street} if nobody answers. Contact {name} on {phone}.",
  "Hi all, please welcome {name}, who joins the finance team from {company} next month.",
  "Claim {n}: the policy holder {name} reports water damage at {addr}. Inspection booked for {date}.",
  "Our new office is at {addr}. Visitors should ask for {first} at reception.",
  "Please post the signed copy to:\n{block}",
  "{name} <{email}> wrote:\n> Could we move the workshop in {city} to a later date?",
  "Note from the front desk: {hon} {last} phoned about the appointment on {date}. Call back on {phone}.",
  "Flat to let near {street}, {city}. Viewings with {first} from {company}.",
  "We drove from {city} through {region} and stayed two nights in {city2}.",
  "My sister {first} lives in {country} now, so the parcel goes to her address: {addr}.",
  "{company} confirms the transfer of {name} to the {city} branch, effective {date}.",
  "Reminder: the school trip leaves from {street} at 8 am. Questions to {name}, {email}.",
  "lol {first} just told me she's moving to {city}",
  "Billing details\nName: {name}\nCompany: {company}\nAddress: {addr}\nPhone: {phone}",
  "Could you ask {hon} {last} whether the invoice from {company} has been paid?",
  "The courier could not find {street}. The customer, {name}, says it is behind the station in {city}.",
  "Thanks for staying with us in {city}, {first}! We hope to see you again.",
  "Registered office: {addrc}. Director: {name}.",
  "Patient {name}, born {date}, was referred by {hon} {last2} of the clinic in {city}.",
  "I met {first} and {first2} at the conference in {city} last year; both work for {company} now.",
  "Return address:\n{block}\nSender: {name}",
  "Can someone at {company} send the samples to {name}, {addr}?",
  "We are flying from {city} to {city2} on {date} and renting a car in {country}.",
  "Profile updated: {name}, {email}, {phone}, {addr}.",
  "ok so {first} said the party is at her place, {street}, bring snacks",
  "The supplier {company} in {city} has changed its bank details; {name} from accounts will check.",
  "Dear {hon} {last},\n\nyour new card will be sent to {addr} within ten working days.\n\nBest wishes,\n{name}\n{company}",
  "Volunteers needed in {city} and {city2}. Sign up with {name} ({email}).",
  "Tenant: {name}\nProperty: {addr}\nStart of lease: {date}\nAgent: {company}",
];

const seed = 20261202;
const out = [];
for (let i = 0; i < 600; i++) {
  const ti = i % T.length;
  const [code, f, order] = locales[(i * 3 + Math.floor(i / T.length)) % locales.length];
  f.seed(seed + i);
  const a = postalAddress(order, f);
  const first = f.person.firstName(), last = f.person.lastName();
  const vals = {
    name: [`${first} ${last}`, "PERSON"], first: [first, "PERSON"], first2: [f.person.firstName(), "PERSON"],
    last: [last, "PERSON"], last2: [f.person.lastName(), "PERSON"],
    hon: [f.helpers.arrayElement(["Mr.", "Ms.", "Mrs.", "Dr."]), "PERSON"],
    street: [a.street, "ADDRESS"], addr: [a.line, "ADDRESS"], block: [a.block, "ADDRESS"],
    addrc: [`${a.line}, ${f.location.country()}`, "ADDRESS"],
    city: [f.location.city(), "LOCATION"], city2: [f.location.city(), "LOCATION"],
    region: [f.location.state(), "LOCATION"], country: [f.location.country(), "LOCATION"],
    company: [f.company.name(), "ORGANIZATION"],
    email: [f.internet.email({ firstName: first, lastName: last }), "EMAIL_ADDRESS"],
    phone: [f.phone.number(), "PHONE_NUMBER"], date: [writtenDate(f), "DATE_TIME"],
    n: [String(f.number.int({ min: 100000, max: 999999 })), null],
  };
  const { text, spans } = fill(T[ti], vals);
  out.push({ full_text: text, spans, template_id: ti, locale: code });
}
fs.writeFileSync(process.argv[2], JSON.stringify(out));
console.log(out.length, out.reduce((n, r) => n + r.spans.length, 0));
