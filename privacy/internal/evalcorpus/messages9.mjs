// Assembles a ninth labelled corpus of everyday messages ("Messages,
// ninth set" in docs/PRIVACY.md): 24 templates written for it, filled
// with values of @faker-js/faker 10.6.0 (MIT) in eight locales that other
// sets use in other templates — Swiss German, Belgian French and Dutch,
// Czech, Greek, Russian, Hungarian and Canadian English — in the
// evaluation format of toolgate eval pii (offsets in code points). The
// output is the same for every run. The templates, the locales and the
// labels were fixed before anything was generated; the set is checked by
// program only (checkRecord in common.mjs), never read, and scored once
// with the rules fixed.
//
// The labels follow the convention of messages5.mjs.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages9,common}.mjs . && node messages9.mjs messages9.json
import { fakerDE_CH, fakerFR_BE, fakerNL_BE, fakerCS_CZ, fakerEL, fakerRU, fakerHU, fakerEN_CA } from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see postalAddress in
// common.mjs).
const locales = [
  ["ch", fakerDE_CH, "pc"], ["be-fr", fakerFR_BE, "pc"], ["be-nl", fakerNL_BE, "pc"], ["cz", fakerCS_CZ, "pc"],
  ["gr", fakerEL, "pc"], ["ru", fakerRU, "pc"], ["hu", fakerHU, "pc"], ["ca", fakerEN_CA, "csp"],
];

const T = [
  "Quick reminder: {name} still owes us the keys to {street}.",
  "The courier could not find {addr} and returned the parcel to {company}.",
  "New tenant at {street}: {hon} {last}, phone {phone}.",
  "{first} will drive from {city} to {city2} on {date}.",
  "Return label:\n{name}\n{block}",
  "Our warehouse moved. The new address is {addrc}.",
  "Can {first} pick up the documents at {street} before {date}?",
  "Board meeting of {company} in {city}, chaired by {hon} {last}.",
  "Emergency contact for {name}: {first2}, {phone}, {addr}",
  "Photos from our trip through {region} and {country} are online, says {first}.",
  "Send the replacement part to\n{blockc}",
  "{name} ({email}) asked to change the billing address to {addr}.",
  "The van for {company} is parked outside {street}.",
  "Born on {date} in {city}, {name} has lived in {country} since childhood.",
  "Ticket 5521: the customer at {addr} reports a broken heater.",
  "Forwarding address for {hon} {last}:\n{block}",
  "{first} and {first2} are opening a bakery in {city2}.",
  "Dear {hon} {last}, your appointment on {date} is confirmed.",
  "Deliveries for {company} now go to {addrc}, not to the old depot.",
  "I'm staying with {first} at {street} until {date}.",
  "Customer {name} called from {phone} about an order sent to {city}.",
  "Please update the register: {company}, {addr}.",
  "The conference in {region} is sponsored by {company}.",
  "Lost wallet found near {street}; owner {name} was told by e-mail at {email}.",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261206, stride: 3 });
