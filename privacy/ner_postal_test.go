package privacy

import (
	"strings"
	"testing"
)

// TestStreetBeforePostalTail: a street line whose street type no list
// knows is an address when the rest of the line is the tail of a postal
// address (a postal code and a town, or a town with a state code and a
// postal code), and the whole address is one span. The sentences are
// written for this test.
func TestStreetBeforePostalTail(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		// House number, street of an unknown type, town, state, postcode.
		{"She now lives at 4417 Marrow Sprigs, Kellington, OH 43215.", []string{"ADDRESS:4417 Marrow Sprigs, Kellington, OH 43215"}},
		{"Send it to 12 Tolland Reaches, Brackwood, NS B3H 4R2 please.", []string{"ADDRESS:12 Tolland Reaches, Brackwood, NS B3H 4R2"}},
		// The same as a block under a heading.
		{"Please post it to:\n4417 Marrow Sprigs\nKellington, OH 43215", []string{"ADDRESS:4417 Marrow Sprigs\nKellington, OH 43215"}},
		// Town and a postal code of letters and digits without a state.
		{"The office moved to 8 Quenby Meadows, Harlow Marsh NE4 7QT last year.", []string{"ADDRESS:8 Quenby Meadows, Harlow Marsh NE4 7QT"}},
		// Street words of another language, the number after them, then
		// the postcode and the town.
		{"Ms. Dorne now lives at Vicolo Stretto Bassi 14, 40121 Castelvetro.", []string{"PERSON:Ms.", "PERSON:Dorne", "ADDRESS:Vicolo Stretto Bassi 14, 40121 Castelvetro"}},
		{"Our supplier sits at Corredor Olmedo 97, 28013 Villafranca del Campo.", []string{"ADDRESS:Corredor Olmedo 97, 28013 Villafranca del Campo"}},
	})
	// Without the postal tail, capitalised words after a number stay no
	// street.
	for _, text := range []string{
		"In 2001 Harlow Marsh won the cup, and 12 Tolland Reaches were sold.",
		"We sold 40 Acme Widgets, 12 Brass Fittings and 3 Copper Pipes.",
		"Chapter 12 Tolland Reaches, Brackwood tells the rest.",
		"Order 4417 Marrow Sprigs, Kellington, OH before noon.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestDashedFirm: a firm named after two partners joined by a spaced dash
// is one organisation; given names, places and words of the sentence on
// either side of a dash are not. The sentences are written for this test.
func TestDashedFirm(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The contract with Hollis - Brandtner was signed.", []string{"ORGANIZATION:Hollis - Brandtner"}},
		{"Invoices go to Quarrington - Pelletier, our new supplier.", []string{"ORGANIZATION:Quarrington - Pelletier"}},
	})
	for _, text := range []string{
		"Ask Maria - John knows the answer.",
		"We flew Berlin - Madrid last week.",
		"Opening hours: Monday - Friday.",
		"The new Hollis Brandtner - Pelletier report is out.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ORGANIZATION:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestTownWithQualifier: the town of an address keeps a lower-case word of
// its own language after it and a region in brackets; an English word
// after it does not join. The sentences are written for this test.
func TestTownWithQualifier(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Please send it to Strada Fonda 12, 40121 Sorvico terme.", []string{"ADDRESS:Strada Fonda 12, 40121 Sorvico terme"}},
		{"Our office: Lindenweg 4, 57368 Halle (Saale).", []string{"ADDRESS:Lindenweg 4, 57368 Halle (Saale)"}},
		{"Please send it to Strada Fonda 12, 40121 Sorvico today.", []string{"ADDRESS:Strada Fonda 12, 40121 Sorvico"}},
		{"Ship to Strada Fonda 12, 40121 Sorvico and call me.", []string{"ADDRESS:Strada Fonda 12, 40121 Sorvico"}},
	})
}

// TestFirmForms: legal forms of several countries end an organisation's
// name, and partners listed after a word of business and a colon are a
// firm, while a list after another colon is people. The sentences are
// written for this test.
func TestFirmForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The invoice from Tarnby Møbler ApS is late.", []string{"ORGANIZATION:Tarnby Møbler ApS"}},
		{"We ordered from Quellbrunn OHG again.", []string{"ORGANIZATION:Quellbrunn OHG"}},
		{"Payment to Varga Kft is due.", []string{"ORGANIZATION:Varga Kft"}},
		{"Current employer: Quill, Marrowby and Tesk", []string{"ORGANIZATION:Quill, Marrowby and Tesk"}},
		{"New supplier: Quill, Marrowby und Tesk", []string{"ORGANIZATION:Quill, Marrowby und Tesk"}},
		{"Present: Quill, Marrowby and Tesk", []string{"PERSON:Quill", "PERSON:Marrowby", "PERSON:Tesk"}},
	})
}

// TestDottedFirmForms: legal forms written with dots or a slash end an
// organisation's name. The sentences are written for this test.
func TestDottedFirmForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Payment from Novacek s.r.o. arrived today.", []string{"ORGANIZATION:Novacek s.r.o."}},
		{"The letter from Kowalczyk Sp. z o.o. was forwarded.", []string{"ORGANIZATION:Kowalczyk Sp. z o.o."}},
		{"We buy from Horvatic d.o.o. and from Ferrando S.p.A. now.", []string{"ORGANIZATION:Horvatic d.o.o.", "ORGANIZATION:Ferrando S.p.A."}},
		{"Ask Bangsbo Trading A/S about it.", []string{"ORGANIZATION:Bangsbo Trading A/S"}},
		{"Quintero Ruiz S.L. sent the bill.", []string{"ORGANIZATION:Quintero Ruiz S.L."}},
	})
}

// TestPostalFormsStream: a stream cut at any point rewrites the sentences
// of the tests above as the whole text is rewritten.
func TestPostalFormsStream(t *testing.T) {
	for _, text := range []string{
		"She now lives at 4417 Marrow Sprigs, Kellington, OH 43215.",
		"The office moved to 8 Quenby Meadows, Harlow Marsh NE4 7QT last year.",
		"Our supplier sits at Corredor Olmedo 97, 28013 Villafranca del Campo.",
		"The contract with Hollis - Brandtner was signed.",
		"Please send it to Strada Fonda 12, 40121 Sorvico terme.",
		"Our office: Lindenweg 4, 57368 Halle (Saale).",
		"Current employer: Quill, Marrowby and Tesk",
		"The letter from Kowalczyk Sp. z o.o. was forwarded.",
		"We buy from Horvatic d.o.o. and from Ferrando S.p.A. now.",
		"Ask Bangsbo Trading A/S about it.",
		"The bill from Novacek spol. s r.o. is paid.",
		"The quote from Dorvaux et Pelletier arrived.",
		"Viewings with Anna from Marrowby and Sons.",
		"Applicant: Tom Ekins\nLocation: Brannock Vale",
		"Our office is at Vranovská 12, 602 00 Brnov now.",
		"Send it to 14 Marrow Sprigs, Kelapur 560 001 please.",
		"Registered office: Kalna iela 7, LV-1050 Rigava, Latvija. Director: none.",
		"Water damage at Aleea Trandafirilor, Bloc 12, 400123 Dorna was reported.",
		"Please post it to:\n4417 Marrow Sprigs\nKellington, OH 43215",
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

// TestPlaceFields: the value of a form field that asks for a place is a
// place, whatever the name looks like. The forms are written for this
// test.
func TestPlaceFields(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Applicant: Tom Ekins\nLocation: Brannock Vale", []string{"PERSON:Tom Ekins", "LOCATION:Brannock Vale"}},
		{"City: Harlowmere\nCountry: Norland", []string{"LOCATION:Harlowmere", "LOCATION:Norland"}},
		{"Place of birth: Quenby", []string{"LOCATION:Quenby"}},
		{"Contact: Quenby", []string{"PERSON:Quenby"}},
	})
}

// TestPostcodeForms: postal codes written in groups (Czech and Slovak
// "602 00", Indian "560 001") or with a country prefix ("LV-1050"), and
// street words of more languages after the name. The addresses are
// written for this test.
func TestPostcodeForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Our office is at Vranovská 12, 602 00 Brnov now.", []string{"ADDRESS:Vranovská 12, 602 00 Brnov"}},
		{"Send it to 14 Marrow Sprigs, Kelapur 560 001 please.", []string{"ADDRESS:14 Marrow Sprigs, Kelapur 560 001"}},
		{"Send it to Kalna iela 7, LV-1050 Rigava please.", []string{"ADDRESS:Kalna iela 7, LV-1050 Rigava"}},
		{"Leave it at Kovačeva cesta 9 if nobody answers.", []string{"ADDRESS:Kovačeva cesta 9"}},
		{"Leave it at Ostrova laukums 3 if nobody answers.", []string{"ADDRESS:Ostrova laukums 3"}},
	})
	// Numbers in groups that are no postal code: a phone number, counts.
	for _, text := range []string{
		"Call Vranov on 602 004 118 today.",
		"Ship to Vranovská 12 by 602 00 units.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.Contains(f, "602") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestTwoPartnerFirms: two partners joined by a conjunction of another
// language, or a name and "Sons" (in several languages), are a firm; two
// given names, or names joined by "and", stay people. The sentences are
// written for this test.
func TestTwoPartnerFirms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The quote from Dorvaux et Pelletier arrived.", []string{"ORGANIZATION:Dorvaux et Pelletier"}},
		{"We ordered from Quellbrunn und Tesk again.", []string{"ORGANIZATION:Quellbrunn und Tesk"}},
		{"Viewings with Anna from Marrowby and Sons.", []string{"PERSON:Anna", "ORGANIZATION:Marrowby and Sons"}},
		{"Ask Ferrando e Hijos about it.", []string{"ORGANIZATION:Ferrando e Hijos"}},
		{"The invoice from Tesk Gruppen is late.", []string{"ORGANIZATION:Tesk Gruppen"}},
		{"Payment from Novacek v.o.s. arrived.", []string{"ORGANIZATION:Novacek v.o.s."}},
	})
	for _, text := range []string{
		"Marie et Paul arrived late.",
		"Quellbrunn and Tesk arrived late.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ORGANIZATION:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}

// TestAddressEnds: a country in the language of the address after its
// town, a unit word of Romanian ("Bloc") after a street without a house
// number, and street-name endings of more languages. The addresses are
// written for this test.
func TestAddressEnds(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Registered office: Kalna iela 7, LV-1050 Rigava, Latvija. Director: none.", []string{"ADDRESS:Kalna iela 7, LV-1050 Rigava, Latvija"}},
		{"Our office is at Strada Fonda 12, 40121 Sorvico, Itálie.", []string{"ADDRESS:Strada Fonda 12, 40121 Sorvico, Itálie"}},
		{"Water damage at Aleea Trandafirilor, Bloc 12, 400123 Dorna was reported.", []string{"ADDRESS:Aleea Trandafirilor, Bloc 12, 400123 Dorna"}},
		{"The courier could not find Kerkdreef 67 yesterday.", []string{"ADDRESS:Kerkdreef 67"}},
		{"The courier could not find Kirkestræde 4 yesterday.", []string{"ADDRESS:Kirkestræde 4"}},
	})
	// A given name after the town is no country.
	checkEmbedded(t, []embeddedCase{
		{"I sent it to Strada Fonda 12, 40121 Sorvico, Anna.", []string{"ADDRESS:Strada Fonda 12, 40121 Sorvico", "PERSON:Anna"}},
	})
}

// TestDottedFormSpol: the Czech form written in two words ("spol. s r.o.").
func TestDottedFormSpol(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The bill from Novacek spol. s r.o. is paid.", []string{"ORGANIZATION:Novacek spol. s r.o."}},
	})
}
