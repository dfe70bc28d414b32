// Assembles a third labelled corpus of everyday messages ("Messages,
// third set" in docs/PRIVACY.md): 24 templates written for it, filled with
// values of @faker-js/faker 10.6.0 (MIT) in eleven locales that neither
// forms.mjs nor messages.mjs uses, in the evaluation format of toolgate
// eval pii (offsets in code points). The output is the same for every
// run. It was generated and its labels checked by program only (never
// read) before it was first scored, and no rule was changed after; its
// errors have been read since, and messages4.mjs holds the unseen set.
//
// The labels follow the convention stated in messages.mjs: a written
// postal address (street line, postcode, town, and the country written
// with them, on one line or as a block under a heading) is one ADDRESS
// value; a street line alone is ADDRESS; a town written after a street
// line without a postcode, and a town, region or country outside an
// address, is LOCATION; a name is PERSON and an honorific before it a
// PERSON value of its own; companies are ORGANIZATION, e-mail addresses
// EMAIL_ADDRESS, phone numbers PHONE_NUMBER, dates DATE_TIME. No address
// block stands right under a line holding only a name.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages3,common}.mjs . && node messages3.mjs messages3.json
import {
  fakerAF_ZA, fakerID_ID, fakerTR, fakerRO_MD, fakerZU_ZA, fakerYO_NG, fakerFR_SN, fakerCY, fakerAZ, fakerVI, fakerEN_NP,
} from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see address below).
const locales = [
  ["za-af", fakerAF_ZA, "c,p"], ["id", fakerID_ID, "cp"], ["tr", fakerTR, "pc"], ["md", fakerRO_MD, "pc"],
  ["za-zu", fakerZU_ZA, "c,p"], ["ng-yo", fakerYO_NG, "cp"], ["sn", fakerFR_SN, "pc"], ["cy", fakerCY, "cp"],
  ["az", fakerAZ, "pc"], ["vn", fakerVI, "c,p"], ["np", fakerEN_NP, "cp"],
];


const T = [
  "Can you pick me up from {street} at six? Love, {first}",
  "Our courier will collect the parcel from {addr} tomorrow morning.",
  "Reference letter for {name}: she worked with us at {company} in {city} for three years.",
  "New contact saved: {name}, {phone}.",
  "Quick update from {city}: the shipment for {company} cleared customs.",
  "Meeting notes: {first} and {first2} agreed to visit the {city} site next week.",
  "Mailing address:\n{blockc}",
  "Hi {first}, the doctor's office moved to {addr}. Same phone number.",
  "{name} was born in {city} and now lives in {country}.",
  "Please invoice {company}, attention of {hon} {last}, {addr}.",
  "The rental car must be returned to {street} before noon.",
  "My flight from {city} was cancelled, so I will arrive in {city2} a day late. {first}",
  "Hey, it's {first}. I'm at {street} now, where are you?",
  "Welcome aboard, {name}! Your badge will be ready at the {city} office.",
  "Order shipped to {name}, {addr}. Questions: {email}",
  "Our partners at {company} and {company2} will host the workshop in {city}.",
  "Witness statement: {hon} {last} saw the accident near {street} on {date}.",
  "Please forward my mail to {addrc} until further notice.",
  "{first}, can you call {company} about the delivery to {city}? Their number is {phone}.",
  "Student {name} transferred from a school in {region} to one in {city}.",
  "Correspondence address:\n{block}",
  "Thanks again, {first}! Say hi to everyone in {city} from me and {first2}.",
  "The warehouse at {addr} closes at five. Ask for {name} at the gate.",
  "Vendor onboarding\nCompany: {company}\nContact: {name}\nEmail: {email}\nRegistered address: {addrc}",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261203, stride: 5 });
