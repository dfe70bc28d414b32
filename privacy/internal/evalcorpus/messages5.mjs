// Assembles a fifth labelled corpus of everyday messages ("Messages,
// fifth set" in docs/PRIVACY.md): 24 templates written for it, filled
// with values of @faker-js/faker 10.6.0 (MIT) in eight locales that none
// of forms.mjs, messages.mjs, messages3.mjs and messages4.mjs uses —
// generic English, Australian English (ocker), Armenian, Georgian,
// Hebrew, Arabic, Korean and Urdu — in the evaluation format of toolgate
// eval pii (offsets in code points). The output is the same for every
// run. The templates, the locales and the labels were fixed before
// anything was generated; the set is checked by program only
// (checkRecord in common.mjs), never read, and scored once with the rules fixed.
//
// The labels follow the convention stated in messages.mjs and
// messages3.mjs: a written postal address (street line, postcode, town,
// and the country written with them, on one line or as a block under a
// heading) is one ADDRESS value; a street line alone is ADDRESS; a town,
// region or country outside an address is LOCATION; a name is PERSON and
// an honorific before it a PERSON value of its own; companies are
// ORGANIZATION, e-mail addresses EMAIL_ADDRESS, phone numbers
// PHONE_NUMBER, dates DATE_TIME. No address block stands right under a
// line holding only a name.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages5,common}.mjs . && node messages5.mjs messages5.json
import { fakerEN, fakerEN_AU_ocker, fakerHY, fakerKA_GE, fakerHE, fakerAR, fakerKO, fakerUR } from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see postalAddress in
// common.mjs).
const locales = [
  ["en", fakerEN, "csp"], ["au", fakerEN_AU_ocker, "csp"], ["hy", fakerHY, "pc"], ["ka", fakerKA_GE, "pc"],
  ["he", fakerHE, "cp"], ["ar", fakerAR, "c,p"], ["ko", fakerKO, "c,p"], ["ur", fakerUR, "c,p"],
];

const T = [
  "Your parcel is out for delivery to {addr}. Track it in the courier app.",
  "Ticket 4471: customer {name} reports that the router at {street} keeps dropping.",
  "Calendar: lunch with {first} from {company} in {city}, {date}.",
  "Forwarding address after the move:\n{blockc}",
  "{hon} {last} asked whether the clinic in {city} takes walk-ins.",
  "Wire transfer beneficiary: {company}, {addrc}.",
  "Flat for rent near {street}, quiet building, ask for {first} on {phone}.",
  "Itinerary: fly from {city} to {city2}, then take the train across {region}.",
  "School pickup list: {name} (parent), emergency number {phone}.",
  "Returned mail: the card we sent to {addr} came back unopened.",
  "Reply to {email} if the meeting in {country} moves again.",
  "{company} has opened a branch on {street}; {name} runs it.",
  "Signed for by {name} at the front desk on {date}.",
  "Registered office:\n{block}",
  "Hi all, the {region} trip is confirmed. {first2} will bring the maps.",
  "The gallery in {city} shows works from {country} until {date}.",
  "Please update my billing address to {addrc}. Thanks, {first}",
  "Meet {first} outside {street} at half past six.",
  "Lease holder: {hon} {last}\nProperty:\n{block}",
  "{name} left {company} and now consults from {city}.",
  "Grandpa's old house at {addr} was sold last week.",
  "Visa appointment for {name} at the consulate in {city2} on {date}.",
  "Complaint from {hon} {last}: the bins at {street} were not collected.",
  "Sent from {city}. Call {phone} or write to {email}.",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261202, stride: 3 });
