// Assembles a fourth labelled corpus of everyday messages ("Messages,
// fourth set" in docs/PRIVACY.md): 26 templates written for it, filled
// with values of @faker-js/faker 10.6.0 (MIT) in nine locales that none of
// forms.mjs, messages.mjs and messages3.mjs uses, in the evaluation format
// of toolgate eval pii (offsets in code points). The output is the same
// for every run. The templates, the locales and the labels were fixed
// before anything was generated; the set was checked by program only
// (checkRecord in common.mjs), never read, and scored once with the rules fixed.
//
// The labels follow the convention stated in messages.mjs and
// messages3.mjs: a written postal address (street line, postcode, town,
// and the country written with them, on one line or as a block under a
// heading) is one ADDRESS value; a street line alone is ADDRESS; a town
// written after a street line without a postcode, and a town, region or
// country outside an address, is LOCATION; a name is PERSON and an
// honorific before it a PERSON value of its own; companies are
// ORGANIZATION, e-mail addresses EMAIL_ADDRESS, phone numbers
// PHONE_NUMBER, dates DATE_TIME. No address block stands right under a
// line holding only a name.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages4,common}.mjs . && node messages4.mjs messages4.json
import {
  fakerSR_RS_latin, fakerUZ_UZ_latin, fakerKU_kmr_latin, fakerEO, fakerEL, fakerRU, fakerUK, fakerMK, fakerMN_MN_cyrl,
} from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see postalAddress in
// common.mjs).
const locales = [
  ["rs", fakerSR_RS_latin, "pc"], ["uz", fakerUZ_UZ_latin, "c,p"], ["ku", fakerKU_kmr_latin, "pc"],
  ["eo", fakerEO, "pc"], ["gr", fakerEL, "pc"], ["ru", fakerRU, "c,p"], ["ua", fakerUK, "c,p"], ["mk", fakerMK, "pc"],
  ["mn", fakerMN_MN_cyrl, "c,p"],
];

const T = [
  "Hi {first}, I left the spare keys with the porter at {street}. Call me when you land.",
  "Delivery instructions: ring twice at {addr} and leave the box by the door.",
  "{name} from {company} will join the call from {city} at ten.",
  "Note to self: send the lease to {hon} {last} at {addrc} before Friday.",
  "We spent a week in {city} and two days driving around {region}. Photos soon, {first}",
  "Ship to:\n{block}",
  "Our new showroom opens at {street}, {city} next month.",
  "Contact card\nName: {name}\nPhone: {phone}\nEmail: {email}",
  "{first} and {first2} are moving to {country} in the spring.",
  "Dear {hon} {last},\n\nthank you for your order. It will be sent to {addr}.\n\nKind regards,\n{company}",
  "Lost wallet found near {street}; the owner, {name}, picked it up on {date}.",
  "Is the {company} office in {city} still open on Saturdays?",
  "Invoice address: {addrc}\nAttn: {name}",
  "{first}, the taxi is waiting outside {street}.",
  "The conference moved from {city} to {city2}; {name} has the new tickets.",
  "Billing contact: {hon} {last} ({email}), {company}.",
  "Postal address for the claim:\n{blockc}",
  "Good news from {city}: {company} signed the contract with {company2} today.",
  "Can you forward this to {name}? Her number is {phone}.",
  "Emergency contact: {name}, {phone}, {addr}",
  "My grandmother was born in {region} and grew up in {city}.",
  "Please collect the documents from {addr} after {date}.",
  "Thanks, {first}! Tell {first2} the dinner in {city} was lovely.",
  "Supplier: {company}\nRepresentative: {name}\nOffice: {addrc}",
  "Reminder for {first}: dentist at {street} on {date}.",
  "Hey {first}, {name} says the warehouse at {addr} needs a new lock.",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261209, stride: 3 });
