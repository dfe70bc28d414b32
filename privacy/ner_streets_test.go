package privacy

import (
	"strings"
	"testing"
)

// TestStreetTypesOfAnyLanguage: after a house number, capitalised words
// that end with a street type of libpostal's lists (Skyway, Lk, Knolls)
// are a street line, though no closed list of the recognizer holds the
// type. The sentences are written for this test.
func TestStreetTypesOfAnyLanguage(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Pick me up from 4810 Quillon Skyway at noon.", []string{"ADDRESS:4810 Quillon Skyway"}},
		{"I'm waiting at 77 Marden Knolls now.", []string{"ADDRESS:77 Marden Knolls"}},
		{"The depot at 3 Ebbrook Lk opens at nine.", []string{"ADDRESS:3 Ebbrook Lk"}},
	})
	// A count before common words that end like a street type is no
	// street, nor is a number before a single street type.
	for _, text := range []string{
		"We planted 40 Maple Groves and 12 Cherry Orchards.",
		"The 24 Hour Fitness Club is closed.",
		"We sold 12 Sunny Vistas last spring.",
		"Gate 4 Skyway is closed.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestPostalCodeForms: postal codes of national forms beyond digits and
// the British, Canadian and Dutch codes: a country prefix joined to the
// digits and two dashed groups after two letters (a Ghanaian digital
// address) complete the address they end. The sentences are written for
// this test.
func TestPostalCodeForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Ship it to 14 Larkwell Street, Odumase GT-204-7781 by noon.", []string{"ADDRESS:14 Larkwell Street, Odumase GT-204-7781"}},
		{"Return address:\n9 Tamsin Road\nAsokore EN-1147-2093", []string{"ADDRESS:9 Tamsin Road\nAsokore EN-1147-2093"}},
		{"Write to Kalnu iela 12, LV3001 Jelgava, please.", []string{"ADDRESS:Kalnu iela 12, LV3001 Jelgava"}},
	})
	// Letters and digits that are no postal code after a town stay out
	// of the address, and alone they are none.
	for _, text := range []string{
		"Flight LH4410 leaves at six.",
		"The part AK-039-5028-77 is out of stock.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestStreetLineForms: street lines written with a street type of another
// language before the name ("Jln. Kenari"), a word for "number" before the
// house number ("no 5", "Nr. 5"), or a lower-case street type and a comma
// before the number ("Şirin pr., 41"), and a country in the address's own
// language at its end, on a line of its own or before the rest of the
// sentence. The sentences are written for this test.
func TestStreetLineForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Send it to Jln. Kenari no 5, Tarakan 77114.", []string{"ADDRESS:Jln. Kenari no 5, Tarakan 77114"}},
		{"Our office: Lindenweg Nr. 5, 3011 Bern.", []string{"ADDRESS:Lindenweg Nr. 5, 3011 Bern"}},
		{"Please forward my mail to Sabirov pr., 41, AZ2001 Quba, Gurcustan until further notice.", []string{"ADDRESS:Sabirov pr., 41, AZ2001 Quba, Gurcustan"}},
		{"Mailing address:\nMammadli küçəsi, 17\nAZ1010 Lerik\nGurcustan", []string{"ADDRESS:Mammadli küçəsi, 17\nAZ1010 Lerik\nGurcustan"}},
		// An abbreviated street type that is also an English word ("sh").
		{"Mailing address:\nTovuz sh., 8\nAZ1010 Lerik\nGurcustan", []string{"ADDRESS:Tovuz sh., 8\nAZ1010 Lerik\nGurcustan"}},
		{"The parcel goes to Parc des Tilleuls 12b, 5032 Gembloux.", []string{"ADDRESS:Parc des Tilleuls 12b, 5032 Gembloux"}},
	})
	// "no" and a number after a name that is no street, a lower-case
	// word and a number after a comma with no postal address after it.
	for _, text := range []string{
		"Ask Tom no 5 times, he said.",
		"Ivanov pr., 41 people came.",
		"Parc Asterix 2 was a fun film.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestStreetLineUnitsAndParticles: a street of the USPS suffixes (River,
// Lodge), a Romanian "Str" before the name with a block for the house
// number ("Bloc 12/3"), a lower-case particle before the name ("van"), and
// a form's next label ("Postcode:") that is no town. The sentences are
// written for this test.
func TestStreetLineUnitsAndParticles(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Meet me at 4120 Orrin River at dawn.", []string{"ADDRESS:4120 Orrin River"}},
		{"The van hit a wall near Str Tudora, Bloc 12/3 on the way home.", []string{"ADDRESS:Str Tudora, Bloc 12/3"}},
		{"Drop it at 31 van Wyksdorp Lane, please.", []string{"ADDRESS:31 van Wyksdorp Lane"}},
		{"Address: 77 Quarrow Lodge\nPostcode: 4102\nCity: Brennley", []string{"ADDRESS:77 Quarrow Lodge", "ADDRESS:4102", "LOCATION:Brennley"}},
	})
}

// TestNamesAroundAddressesAndOffices: unknown words right before a comma
// and a street address are the person it is for, not a place; a role
// before a given name is cut off the name; "the X office" of a known
// place and "the X site" are places. The sentences are written for this
// test.
func TestNamesAroundAddressesAndOffices(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Parcel shipped to Qhawe Ndabezitha, 18 Harwick Road.", []string{"PERSON:Qhawe Ndabezitha", "ADDRESS:18 Harwick Road"}},
		{"Student Maria Keller moved up a year.", []string{"PERSON:Maria Keller"}},
		{"Your badge is ready at the Lisbon office.", []string{"LOCATION:Lisbon"}},
		{"We agreed to visit the Vrelnik site next week.", []string{"LOCATION:Vrelnik"}},
	})
	// A firm's office and a known town before an address stay what they
	// were.
	checkEmbedded(t, []embeddedCase{
		{"Meet me at the Zentrix office.", []string{"ORGANIZATION:Zentrix"}},
	})
}

// TestAbbreviatedStreetUnderHeading: under a heading that announces an
// address, a short capitalised abbreviation, a name, a word for "number"
// and the number, with a town and postal code on the next line, are one
// address; an honorific in its place is not. The sentences are written
// for this test.
func TestAbbreviatedStreetUnderHeading(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Correspondence address:\nKp. Melati no 4\nTarakan 77114", []string{"ADDRESS:Kp. Melati no 4\nTarakan 77114"}},
	})
	for _, text := range []string{
		"Correspondence address:\nMr. Melati no 4 times",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestStreetOfOneWordAfterPreposition: a street of one word of its own
// language and its number after a word that says where ("from", "near")
// is a street line; a version, a time or a count after such a word is
// not. A street type that also ends names starts a street before a name
// and a number ("Cesta v Gorice 12"), and small words of a town's language
// join the town ("Valea lui Mihai"). The sentences are written for this
// test.
func TestStreetOfOneWordAfterPreposition(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The bus leaves from Tvrdinska 14 at noon.", []string{"ADDRESS:Tvrdinska 14"}},
		{"A flat near Brekkemyra 9, Solvik is free.", []string{"ADDRESS:Brekkemyra 9", "LOCATION:Solvik"}},
		{"Registered office: Cesta v Gorice 12, 1000 Ljubljana.", []string{"ADDRESS:Cesta v Gorice 12, 1000 Ljubljana"}},
		{"Send it to Strada Morii 4, 505100 Valea lui Mihai.", []string{"ADDRESS:Strada Morii 4, 505100 Valea lui Mihai"}},
	})
	for _, text := range []string{
		"We upgraded from Ubuntu 22.04 last week.",
		"The train from Zvornik 5 minutes ago was late.",
		"Drive 5 miles north.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestNoStreetLookAlikes: phone extensions, honorifics, times, events,
// years and shouted words are no street lines, though their words are
// street types of some language or their shapes are those of streets. The
// sentences are written for this test.
func TestNoStreetLookAlikes(t *testing.T) {
	for _, text := range []string{
		"Call Mira Tanaka ext. 40211 for details.",
		"Please ask Dr. Okafor 2 questions.",
		"The advisory lasts till 6:00 PM CST tonight.",
		"A man was hurt working on Qatar 2022 stadiums.",
		"He moved from Zorvik 1998 onwards.",
		"They shouted RUN RUN RUN at us.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestPlacesAfterThroughAndBranches: a run after "through" is a place, as
// is one before "branch"; a name after "questions to" is a person. The
// sentences are written for this test.
func TestPlacesAfterThroughAndBranches(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"We drove through Vrelnik and on to the coast.", []string{"LOCATION:Vrelnik"}},
		{"She moved to the Tarnvik branch last year.", []string{"LOCATION:Tarnvik"}},
		{"Questions to Ovrin Kastelic, please.", []string{"PERSON:Ovrin Kastelic"}},
	})
}

// TestStreetFormsStream: a stream cut at any point rewrites the sentences
// of the tests above as the whole text is rewritten.
func TestStreetFormsStream(t *testing.T) {
	for _, text := range []string{
		"Pick me up from 4810 Quillon Skyway at noon.",
		"Ship it to 14 Larkwell Street, Odumase GT-204-7781 by noon.",
		"Write to Kalnu iela 12, LV3001 Jelgava, please.",
		"Send it to Jln. Kenari no 5, Tarakan 77114.",
		"Please forward my mail to Sabirov pr., 41, AZ2001 Quba, Gurcustan until further notice.",
		"Mailing address:\nTovuz sh., 8\nAZ1010 Lerik\nGurcustan",
		"The van hit a wall near Str Tudora, Bloc 12/3 on the way home.",
		"Parcel shipped to Qhawe Ndabezitha, 18 Harwick Road.",
		"The bus leaves from Tvrdinska 14 at noon.",
		"Registered office: Cesta v Gorice 12, 1000 Ljubljana.",
		"Send it to Strada Morii 4, 505100 Valea lui Mihai.",
		"The advisory lasts till 6:00 PM CST tonight.",
		// A street type that is also a word never part of a name ("By")
		// starts no street, so the stream need not hold it.
		"Post it to: By Havnen 4, 2100 Nordby",
	} {
		want := oneShot(t, text, ModeTokens, NoTypes())
		for i := 0; i <= len(text); i++ {
			if got, _ := streamed(t, text, []int{i}, ModeTokens, NoTypes()); got != want {
				t.Errorf("split at %d of %q:\n got %q\nwant %q", i, text, got, want)
				break
			}
		}
	}
}

// TestHonorificNameCount: an honorific that is also a street type ("Dr."
// for Drive), a name and a number that counts the lower-case noun after
// it are a person and a count, not a street line; a street named after a
// doctor, with its number and the rest of its address, stays one. The
// sentences are written for this test.
func TestHonorificNameCount(t *testing.T) {
	for _, text := range []string{
		"Ask Dr. Okafor 2 questions.",
		"Tell Dr. Mbeki 3 stories tonight.",
		"Bring Dr. Haugen 2 coffees, please.",
		"Ask Dr Okafor 2 questions",
		"Lisbon Dr. Costa 5 bottles short, says the note.",
		"Please give Dr. Varga 10 minutes.",
	} {
		fs := embeddedFindings(t, text)
		for _, f := range fs {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
		if !strings.Contains(strings.Join(fs, "|"), "PERSON:") {
			t.Errorf("%q: no person in %v", text, fs)
		}
	}
	checkEmbedded(t, []embeddedCase{
		{"Write to Calle Dr. Fleming 12, 28036 Madrid.", []string{"ADDRESS:Calle Dr. Fleming 12, 28036 Madrid"}},
		{"Visit 12 Dr. Okafor Road today", []string{"ADDRESS:12 Dr. Okafor Road"}},
	})
}

// TestStreetTypeAndComma: street lines of forms where a comma stands
// between the street and its number: a street type in lower case before
// the name ("проспект Мира, 25") or after it ("Кленовая площадь, 8"), and
// a word that no list holds in the place of the type when the rest of a
// postal address follows ("Tursunov ko'chasi, 12, Samarqand, 140100").
// The sentences are written for this test.
func TestStreetTypeAndComma(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Delivery: проспект Мира, 25, Казань, 420015", []string{"ADDRESS:проспект Мира, 25, Казань, 420015"}},
		{"Meet me at Кленовая площадь, 8 at five.", []string{"ADDRESS:Кленовая площадь, 8"}},
		{"Send it to Tursunov ko'chasi, 12, Samarqand, 140100 soon.", []string{"ADDRESS:Tursunov ko'chasi, 12, Samarqand, 140100"}},
		{"Ship to:\nнаб. Речная, 3\nТверь, 170100", []string{"ADDRESS:наб. Речная, 3\nТверь, 170100"}},
		// A capitalised abbreviation of up to three letters, counted as
		// letters, not bytes.
		{"Send it to Παρ. Κοραή 12, 546 21 Θεσσαλονίκη.", []string{"ADDRESS:Παρ. Κοραή 12, 546 21 Θεσσαλονίκη"}},
	})
	// A count after a street type, or a word that is no street type
	// before a comma and a number, makes no street line.
	for _, text := range []string{
		"Ivanov ulica, 3 times over.",
		"Петров сказал, 5 раз подряд.",
		"Meet Tursunov later, 12 of us are coming.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestStreetFormsSpanishCompassAndSaints: forms of street lines that were
// cut short or missed (each case failed before): a Spanish or Italian
// street with a comma before its number, "s/n" for a street without one,
// Mexican abbreviations of street types, a compass point after the house
// number, a street type abbreviated after another, "St." in a town's
// name, and an address block under a sentence that introduces it (one
// span, as under "address:"), while a block under a name line is still
// labelled line by line.
func TestStreetFormsSpanishCompassAndSaints(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Ship the boxes to Avenida Juárez, 118, Puebla, 72000 tomorrow.", []string{"ADDRESS:Avenida Juárez, 118, Puebla, 72000"}},
		{"The studio moved to Via Garibaldi, 41 in May.", []string{"ADDRESS:Via Garibaldi, 41"}},
		{"Her office: Calle Hidalgo s/n, Oaxaca, 68000", []string{"ADDRESS:Calle Hidalgo s/n, Oaxaca, 68000"}},
		{"Deliver to Priv. Los Pinos 14, Morelia, 58000", []string{"ADDRESS:Priv. Los Pinos 14, Morelia, 58000"}},
		{"Send it to Calz. Independencia s/n.\nGuadalajara, 44100", []string{"ADDRESS:Calz. Independencia s/n.\nGuadalajara, 44100"}},
		{"The shop at 2210 W Elm Street, Dayton, OH 45402 opens at nine.", []string{"ADDRESS:2210 W Elm Street, Dayton, OH 45402"}},
		{"We stayed at 88 NE 5th Avenue, Portland, OR 97212.", []string{"ADDRESS:88 NE 5th Avenue, Portland, OR 97212"}},
		{"Drop it at 41 Harbour View Rd, Wollongong, NSW 2500.", []string{"ADDRESS:41 Harbour View Rd, Wollongong, NSW 2500"}},
		{"The van goes to 7 Mill Lane, St. Albans AL1 2AA today.", []string{"ADDRESS:7 Mill Lane, St. Albans AL1 2AA"}},
		{"Please post the keys to\n16 Rowan Crescent\nLeeds LS6 2AB", []string{"ADDRESS:16 Rowan Crescent\nLeeds LS6 2AB"}},
		{"Maria Lopez\n16 Rowan Crescent\nLeeds LS6 2AB", []string{"PERSON:Maria Lopez", "ADDRESS:16 Rowan Crescent", "LOCATION:Leeds", "ADDRESS:LS6 2AB"}},
		{"He got 3 E grades and 2 W scores.", nil},
	})
	// A year after the comma is no house number.
	for _, text := range []string{"We met on Via Roma, 2019 was a good year.", "On Calle Ancha, 1998 was the best summer."} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestStreetNameFirstOnItsOwnLine: a street line that starts with the
// street's name (no house number first) on a line of its own under an
// introduction is a street line, also when its name is a surname; before, its first word
// was refused as a street word because a line break stood before it,
// and such a block was found only at the very start of the text.
func TestStreetNameFirstOnItsOwnLine(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Address:\nNovakova 12\n10000 Zagreb", []string{"ADDRESS:Novakova 12\n10000 Zagreb"}},
		{"Deliver to:\nKowalska 8\n00-950 Warszawa", []string{"ADDRESS:Kowalska 8\n00-950 Warszawa"}},
		{"Our new address:\nHauptstraße 5\n10115 Berlin", []string{"ADDRESS:Hauptstraße 5\n10115 Berlin"}},
	})
}

// TestCountryOfSeveralWordsEndsAddress: the country that closes an
// address in the address's own language may be several words, with small
// words between them and another name in brackets; a person's name after
// the address stays a person.
func TestCountryOfSeveralWordsEndsAddress(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Ship to Radićeva 12, 10000 Zagreb, Bosna i Hercegovina", []string{"ADDRESS:Radićeva 12, 10000 Zagreb, Bosna i Hercegovina"}},
		{"Deliver to:\nCalle Sol 4\n28013 Madrid\nReino Unido", []string{"ADDRESS:Calle Sol 4\n28013 Madrid\nReino Unido"}},
		{"Send it to 5 Ross Road, Stanley, 00100, Islas Malvinas (Falklands).", []string{"ADDRESS:5 Ross Road, Stanley, 00100, Islas Malvinas (Falklands)"}},
		{"Send to 12 Main Street, Springfield, IL 62704, Maria Lopez", []string{"ADDRESS:12 Main Street, Springfield, IL 62704", "PERSON:Maria Lopez"}},
		// Before a clause of the sentence after a comma; a known country
		// with another name in brackets.
		{"Wire it to Storgatan 4, 11455 Stockholm, Švedska, before noon.", []string{"ADDRESS:Storgatan 4, 11455 Stockholm, Švedska"}},
		{"Mail it to 3 Ross Road, Stanley, 00100, Falkland Islands (Islas Malvinas)", []string{"ADDRESS:3 Ross Road, Stanley, 00100, Falkland Islands (Islas Malvinas)"}},
	})
}

// TestSlashHouseNumbers: a house number with its flat after a slash
// ("Długa 12/4", as in Poland, Croatia, Russia, Armenia) or a unit before
// the number ("3/45 Smith Street", as in Australia) is one house number;
// before, the street line ended at the slash and the rest of the address
// was cut off. A date written with slashes stays a date.
func TestSlashHouseNumbers(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Send to ul. Długa 12/4, 00-950 Warszawa", []string{"ADDRESS:ul. Długa 12/4, 00-950 Warszawa"}},
		{"Ship to Radićeva 12/3, 10000 Zagreb", []string{"ADDRESS:Radićeva 12/3, 10000 Zagreb"}},
		{"The flat is at 3/45 Smith Street, Bondi NSW 2026.", []string{"ADDRESS:3/45 Smith Street, Bondi NSW 2026"}},
		{"Meet me on 12/05/2024 at Main Street.", []string{"DATE_TIME:12/05/2024", "ADDRESS:Main Street"}},
	})
}

// TestPostalCodeOfUnknownForm: after a street line and its town, a code
// of capitals and digits that no known form matches is the postal code
// (a country whose form the recognizer lacks, or a code mistyped); a
// state and its number stay two parts, and a product code before a word
// of the sentence is no postal code.
func TestPostalCodeOfUnknownForm(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Send to 4 Jalan Sultan, Bandar Seri Begawan BS8811.", []string{"ADDRESS:4 Jalan Sultan, Bandar Seri Begawan BS8811"}},
		{"The parcel goes to 9 Kings Road, George Town KY1-1104 on Monday.", []string{"ADDRESS:9 Kings Road, George Town KY1-1104", "DATE_TIME:Monday"}},
		{"The fitter comes to 5 Harcourt Parade, Little Hadham HG93 12K tomorrow.", []string{"ADDRESS:5 Harcourt Parade, Little Hadham HG93 12K"}},
		{"Send to 4 Main Street, Springfield X2000 printer.", []string{"ADDRESS:4 Main Street", "LOCATION:Springfield"}},
	})
}

// TestStreetOfCommonWords: after words that announce an address, a house
// number and capitalised common words ending in a street type of some
// language are a street line ("at 493 Maple Center"), but not when the
// number is an hour or a year (a year after "in" or "since" is no house
// number even before a street type: "In 2019 Golden State Park opened"),
// nor without such words (a count).
func TestStreetOfCommonWords(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"I left the charger at 493 Maple Center, can you grab it?", []string{"ADDRESS:493 Maple Center"}},
		{"The plumber comes to 2210 Willow Crossing tomorrow.", []string{"ADDRESS:2210 Willow Crossing"}},
	})
	for _, text := range []string{"We meet at 5 Happy Hour Center.", "In 2019 Golden State Park opened.", "Since 1998 Hyde Park has hosted it.",
		"We planted 40 Maple Groves and 12 Cherry Orchards."} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") && strings.ContainsAny(f, "0123456789") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}
