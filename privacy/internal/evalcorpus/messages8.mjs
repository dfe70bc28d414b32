// Assembles an eighth labelled corpus of everyday messages ("Messages,
// eighth set" in docs/PRIVACY.md): 24 templates written for it, filled
// with values of @faker-js/faker 10.6.0 (MIT) in eight locales — US,
// British, Irish and Australian English, Dhivehi, Canadian French,
// Mexican Spanish and Croatian; Dhivehi is used by no other set — in the evaluation format of toolgate eval pii (offsets in
// code points). The output is the same for every run. The templates, the
// locales and the labels were fixed before anything was generated; the
// set is checked by program only (checkRecord in common.mjs), never read,
// and scored once with the rules fixed.
//
// The labels follow the convention of messages5.mjs.
//
//	mkdir -p /tmp/msgs && cd /tmp/msgs && npm pack @faker-js/faker@10.6.0
//	mkdir -p node_modules/@faker-js/faker && tar xzf faker-js-faker-10.6.0.tgz -C node_modules/@faker-js/faker --strip-components=1
//	cp "$OLDPWD"/privacy/internal/evalcorpus/{messages8,common}.mjs . && node messages8.mjs messages8.json
import { fakerEN_US, fakerEN_GB, fakerEN_IE, fakerEN_AU, fakerDV, fakerFR_CA, fakerES_MX, fakerHR } from "@faker-js/faker";
import fs from "node:fs";
import { writeMessages } from "./common.mjs";

// Each locale with the order of its postal address (see postalAddress in
// common.mjs).
const locales = [
  ["us", fakerEN_US, "csp"], ["gb", fakerEN_GB, "cp"], ["ie", fakerEN_IE, "cp"], ["au", fakerEN_AU, "csp"],
  ["dv", fakerDV, "c,p"], ["ca", fakerFR_CA, "csp"], ["mx", fakerES_MX, "c,p"], ["hr", fakerHR, "pc"],
];

const T = [
  "Hey, it's {first}. I left the charger at {street}, can you grab it?",
  "Patient {name}, born {date}, was referred to the clinic in {city}.",
  "Change of address for policy 88-1204: {addrc}",
  "{hon} {last} will present the results in {city} on {date}.",
  "Please courier the signed copy to\n{block}\nAttn: {name}",
  "Job posting: {company} is looking for a driver based in {region}.",
  "The alarm company has {phone} as the contact for {street}.",
  "Booked a table for {first} and {first2} near the station in {city2}.",
  "Complaint forwarded to {company}; the customer lives at {addr}.",
  "My cousin {name} just moved to {country}.",
  "Pay the deposit to {company}, {addrc}, before {date}.",
  "Who is meeting {hon} {last} at the airport in {city}?",
  "Mailing list update: {name} <{email}>, {addr}",
  "The festival in {region} was cancelled, {first} says.",
  "Key holder for {street}: {name}, {phone}.",
  "Shipment 4410 goes from {city} to:\n{blockc}",
  "Lunch with the {company} team on {date} at their office on {street}.",
  "{first}, your package is waiting at {addr}.",
  "Notes from the call with {name}: budget approved, next visit to {country}.",
  "The lease for {street} ends on {date}; {hon} {last} wants to renew.",
  "Invoice address:\n{company}\n{block}",
  "Wedding in {city}! RSVP to {email} by {date}.",
  "Tell {first2} the plumber comes to {addr} tomorrow.",
  "Travelling {city} to {city2} via {region} with {name}.",
];

writeMessages(fs, process.argv[2], { T, locales, seed: 20261205, stride: 3 });
