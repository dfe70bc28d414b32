// Assembles a seventh labelled corpus of everyday messages ("Messages,
// seventh set" in docs/PRIVACY.md): 24 templates written for it, filled
// with values of @faker-js/faker 10.6.0 (MIT) in eight locales —
// Ghanaian and Nigerian English, Vietnamese, Turkish, Brazilian
// Portuguese and Indonesian, which earlier sets use too, and Tamil and
// Chinese as written in Taiwan, which no other set uses — in the evaluation format of toolgate eval pii
// (offsets in code points). The output is the same for every run. The
// templates, the locales and the labels were fixed before anything was
// generated; the set is checked by program only (checkRecord in
// common.mjs), never read, and scored once with the rules fixed.
//
// The labels follow the convention of messages5.mjs.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages7,common}.mjs . && node messages7.mjs messages7.json
import { fakerEN_GH, fakerEN_NG, fakerVI, fakerTR, fakerPT_BR, fakerID_ID, fakerTA_IN, fakerZH_TW } from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see postalAddress in
// common.mjs).
const locales = [
  ["gh", fakerEN_GH, "c,p"], ["ng", fakerEN_NG, "c,p"], ["vi", fakerVI, "c,p"], ["tr", fakerTR, "pc"],
  ["br", fakerPT_BR, "c,p"], ["id", fakerID_ID, "cp"], ["ta", fakerTA_IN, "c,p"], ["tw", fakerZH_TW, "cp"],
];

const T = [
  "Reminder: {name} collects the spare keys from {street} on {date}.",
  "The warehouse in {city} will ship the order to {addr}.",
  "Please forward my post to this address until March:\n{block}",
  "{hon} {last} has asked for a copy of the invoice; email {email}.",
  "Our representative in {region}, {name}, can be reached on {phone}.",
  "Accounts payable: {company}, {addrc}",
  "Plumber booked for {street}; {first} will let him in.",
  "Photos from the trip to {country} and {city} are in the shared folder.",
  "The courier left the parcel with a neighbour at {addr}.",
  "Thanks {first}, see you in {city2} next week!",
  "Name: {name}\nPhone: {phone}\nAddress: {addr}",
  "{company} is hiring in {city}; ask {first2} for details.",
  "Return address:\n{blockc}",
  "Dear {hon} {last}, the documents were signed on {date}.",
  "The school bus now stops at {street} instead of the library.",
  "{name} from {company} joins the call from {country}.",
  "New billing address for {name}: {addrc}",
  "Road closed between {city} and {city2} until {date}.",
  "Can {first} pick up the cake at {street} before the party?",
  "Hotel booked in {city} for {hon} {last}; confirmation sent to {email}.",
  "Registered seat of {company}:\n{block}",
  "The tenant at {addr} reported a leak to {first2}.",
  "Volunteers from {region} meet at {street} on {date}.",
  "Send the samples to {name}, {addrc}.",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261204, stride: 3 });
