// Assembles a sixth labelled corpus of everyday messages ("Messages,
// sixth set" in docs/PRIVACY.md): 24 templates written for it, filled
// with values of @faker-js/faker 10.6.0 (MIT) in eight locales — Indian
// and South African English (used by forms.mjs too), and Persian, Central
// Kurdish (Sorani), Thai, Nepali, Japanese and Chinese, which no other set
// uses — in the
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
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages6,common}.mjs . && node messages6.mjs messages6.json
import { fakerEN_IN, fakerEN_ZA, fakerFA, fakerKU_ckb, fakerTH, fakerNE, fakerJA, fakerZH_CN } from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see postalAddress in
// common.mjs).
const locales = [
  ["in", fakerEN_IN, "c,p"], ["za", fakerEN_ZA, "c,p"], ["fa", fakerFA, "c,p"], ["ckb", fakerKU_ckb, "c,p"],
  ["th", fakerTH, "c,p"], ["ne", fakerNE, "c,p"], ["ja", fakerJA, "pc"], ["zh", fakerZH_CN, "cp"],
];

const T = [
  "Driver update: {first} will drop the keys at {street} before noon.",
  "New tenant on file: {name}, moving in on {date}.",
  "Our team in {city} hosts the {region} workshop next month.",
  "Invoice to be posted to:\n{blockc}",
  "{hon} {last} called about the refund; call back on {phone}.",
  "Pickup point changed to {addr}, same opening hours.",
  "The conference moved from {city} to {city2} because of the weather.",
  "Supplier: {company}. Contact person: {name}, {email}.",
  "Can someone water the plants at {street} while {first} is in {country}?",
  "Emergency contact for {first2}: {name}, {phone}.",
  "Membership card returned, wrong address: {addrc}",
  "Happy birthday {first}! Greetings from all of us in {city}.",
  "{company} signed the lease for {street} on {date}.",
  "Delivery failed at {addr}; the courier tries again tomorrow.",
  "Dear {hon} {last}, your appointment in {city2} is confirmed for {date}.",
  "Office moved. New address:\n{block}",
  "{name} reviewed the contract from {company} and sent comments to {email}.",
  "We drove through {region} and stopped for lunch in {city}.",
  "Customer {name} (account 55102) lives at {addr}.",
  "Letters for {first} go to {street} until the end of the year.",
  "Trip notes: {country} first, then {city}; ask {first2} for the tickets.",
  "Billing contact: {hon} {last}\nAddress:\n{block}",
  "Found a wallet near {street}; the card says {name}.",
  "Shipping from {company}, {addrc}, to our store in {city}.",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261203, stride: 3 });
