package privacy

import (
	"strings"
	"testing"
)

// embeddedFindings returns what the embedded recognizer alone finds in
// text, as "TYPE:value" strings.
func embeddedFindings(t *testing.T, text string) []string {
	t.Helper()
	fs, err := NewScanner(&ScannerOptions{Recognizers: []Recognizer{Embedded()}}).Scan(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, string(f.Type)+":"+text[f.Start:f.End])
	}
	return got
}

type embeddedCase struct {
	text string
	want []string
}

func checkEmbedded(t *testing.T, cases []embeddedCase) {
	t.Helper()
	for _, tc := range cases {
		if got := embeddedFindings(t, tc.text); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", tc.text, got, tc.want)
		}
	}
}

// TestPlaceForms: places of several words with small words of their own
// language inside, known towns whose names are common English words or
// end like streets, towns that are given names after words of travel,
// and towns that no list knows but that are named like English towns.
// The sentences are written for this test.
func TestPlaceForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		// Small words of the place's language inside its name.
		{"I'm in Vrensko pri Tarnu right now.", []string{"LOCATION:Vrensko pri Tarnu"}},
		{"They live in Kelsby upon Marrow.", []string{"LOCATION:Kelsby upon Marrow"}},
		{"The office in Newcastle upon Tyne is closing.", []string{"LOCATION:Newcastle upon Tyne"}},
		{"I'm in Sutton in Ashfield today.", []string{"LOCATION:Sutton in Ashfield"}},
		// The increment sign typed for a Greek capital delta.
		{"Greetings from ΜΕΓΑ∆ΙΑ tonight.", []string{"LOCATION:ΜΕΓΑ∆ΙΑ"}},
		// Known towns of common words, or ending in a street word.
		{"I'm in Mount Pleasant, at the fair", []string{"LOCATION:Mount Pleasant"}},
		{"We moved to Grand Rapids in 2019.", []string{"LOCATION:Grand Rapids"}},
		{"The new store in Sherwood Park is hiring.", []string{"LOCATION:Sherwood Park"}},
		// Given names that are towns, after words of travel.
		{"Have you ever been to Regina?", []string{"LOCATION:Regina"}},
		{"We're heading to Austin next month.", []string{"LOCATION:Austin"}},
		{"My hometown is Eugene.", []string{"LOCATION:Eugene"}},
		{"Jackson is a great place to raise kids.", []string{"LOCATION:Jackson"}},
		{"Kelso is a small town near the border.", []string{"LOCATION:Kelso"}},
		{"Is Hobart in Australia?", []string{"LOCATION:Hobart", "LOCATION:Australia"}},
		// Unknown towns after a preposition of place, or named like towns.
		{"I'm travelling around Vrenstad and Tarnby.", []string{"LOCATION:Vrenstad", "LOCATION:Tarnby"}},
		{"Lake Marrowby is beautiful.", []string{"LOCATION:Lake Marrowby"}},
		{"We visited Port Lisa and East Jennifer.", []string{"LOCATION:Port Lisa", "LOCATION:East Jennifer"}},
		{"The fair moved to Hollisburgh and Carverville.", []string{"LOCATION:Hollisburgh", "LOCATION:Carverville"}},
		{"Is there a better band than Sjöberg and Cantu?", []string{"PERSON:Sjöberg", "PERSON:Cantu"}},
		// Words of places around an unknown town.
		{"The road between Tarnby and Kelso is closed.", []string{"LOCATION:Tarnby", "LOCATION:Kelso"}},
		{"We live just north of Kelso.", []string{"LOCATION:Kelso"}},
		{"Tarnby police are investigating.", []string{"LOCATION:Tarnby"}},
		{"Dayton, OH is where I grew up.", []string{"LOCATION:Dayton"}},
		{"Population of Tarnby is small.", []string{"LOCATION:Tarnby"}},
		// "i'm in" in text without capitals, split by the tokenizer.
		{"i'm in vrenstad for a business trip", []string{"LOCATION:vrenstad"}},
		// A month after a word of time is no name nor place.
		{"I'm visiting Adelaide in March.", []string{"LOCATION:Adelaide"}},
		{"She's staying in Hamilton East until June.", []string{"LOCATION:Hamilton East"}},
		{"The festival is held in Florence every June.", []string{"LOCATION:Florence"}},
		{"June called me yesterday.", []string{"PERSON:June"}},
		// A noun of places before "of" is no organisation word.
		{"Capital of Kazakhstan is hard to spell.", []string{"LOCATION:Kazakhstan"}},
	})
}

// TestAddressJoins: an address after a colon that follows the word
// "address", a street that holds its number after a name joined by
// "and", and a town with its district number inside an address.
func TestAddressJoins(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Please return it to Tove and Brekkeveien 41 soon.", []string{"ADDRESS:Tove and Brekkeveien 41"}},
		{"My new address for the invoices: Orla and 3 Quarry Lane", []string{"ADDRESS:Orla and 3 Quarry Lane"}},
		{"Send it to 9 Kelvin Road, Vrenstad 4, Norway 33104 please", []string{"ADDRESS:9 Kelvin Road, Vrenstad 4, Norway 33104"}},
		// Text without capitals: an unknown word between commas before a
		// country is the town of the address.
		{"please send it to 12 mill lane, vrenstad, norway 4021", []string{"ADDRESS:12 mill lane, vrenstad, norway 4021"}},
		// A town line that goes on as a sentence ends at its first
		// lower-case word.
		{"Please return to 4 Mill Lane\n Apt. 9\n Vrenstad\n Norway in case of trouble.", []string{"ADDRESS:4 Mill Lane\n Apt. 9\n Vrenstad\n Norway"}},
		// Not after a colon of another clause.
		{"Seating plan: Helen and Oak Road 12 guests", []string{"PERSON:Helen", "ADDRESS:Oak Road 12"}},
	})
}

// TestOrganizationPrecision: job titles are no organisations, whatever
// words of institutions they hold, and a title before a name is not part
// of the name; a single unknown word after a job and "at", or after
// "shares of", is an employer.
func TestOrganizationPrecision(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Please forward this to the Marketing Manager today.", nil},
		{"Ann Lee is our new Research Scientist.", []string{"PERSON:Ann Lee"}},
		{"Contact the Data Protection Officer for questions.", nil},
		{"We need a Senior Data Analyst.", nil},
		{"The Finance Director Ann Lee approved it.", []string{"PERSON:Ann Lee"}},
		{"She works as a Software Engineer at Vitalchek.", []string{"ORGANIZATION:Vitalchek"}},
		{"I'm the Vice President of Sales at Initech.", []string{"ORGANIZATION:Initech"}},
		{"A nurse at Lisbon General told me.", []string{"ORGANIZATION:Lisbon General"}},
		{"He is a nurse at Lisbon now.", []string{"LOCATION:Lisbon"}},
		{"I bought shares of Zentrix last year.", []string{"ORGANIZATION:Zentrix"}},
		// Family names that are job nouns stay names.
		{"Ann Baker and Tom Cook came.", []string{"PERSON:Ann Baker", "PERSON:Tom Cook"}},
	})
}

// TestChatWords: words of chat written with a capital at the start of a
// message, and words with a letter written three times, are no names;
// a list of family names after a verb of meeting is people, not a firm.
func TestChatWords(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Lol that was me", nil},
		{"Omg Tove is here", []string{"PERSON:Tove"}},
		{"YASSSS this is great", nil},
		{"Sooo tired today", nil},
		{"I met Kowalski, Berg and Novak at the bar.", []string{"PERSON:Kowalski", "PERSON:Berg", "PERSON:Novak"}},
		{"We hired Kowalski, Berg and Novak for the audit.", []string{"ORGANIZATION:Kowalski, Berg and Novak"}},
	})
}

// TestStreetForms: German and Hungarian street types written as words of
// their own, a lower-case street type without a number (a noun of the
// sentence), an adjective of nationality, and a list of addresses whose
// "and" is no state code.
func TestStreetForms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Pedestrians enter on Freistädter Strasse 61 now.", []string{"ADDRESS:Freistädter Strasse 61"}},
		{"The shop is on Petőfi rakpart 12 by the river.", []string{"ADDRESS:Petőfi rakpart 12"}},
		{"There's a nice new Thai place downtown.", nil},
		{"We ate at the Danish bakery.", nil},
		{"My addresses are 4 Kelvin Road Suite 2 Vrenstad Norway, and 9 Mill Lane", []string{"ADDRESS:4 Kelvin Road Suite 2 Vrenstad Norway", "ADDRESS:9 Mill Lane"}},
	})
}

// TestSmallTowns: places of 500 inhabitants or more that are no given
// name, family name or common word are known places, with no cue around
// them.
func TestSmallTowns(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Waanrode is lovely in the spring.", []string{"LOCATION:Waanrode"}},
		{"The bus to Meigem, Belgium was late.", []string{"LOCATION:Meigem", "LOCATION:Belgium"}},
	})
}

// TestLanguages: a language after "in", "into" or a verb of speaking is
// no place and no name.
func TestLanguages(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Can you reply in English please?", nil},
		{"The form is in Spanish.", nil},
		{"She speaks Danish and lives in Vrenstad.", []string{"LOCATION:Vrenstad"}},
	})
}

// TestOrganizationLists: a person named after an organisation in a list
// stays a person; record labels and studios end organisation names.
func TestOrganizationLists(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"I worked at Globex Inc and Maria was my boss.", []string{"ORGANIZATION:Globex Inc", "PERSON:Maria"}},
		{"The deal between Initech LLC and Tom Baker fell through.", []string{"ORGANIZATION:Initech LLC", "PERSON:Tom Baker"}},
		{"The song was released by Brelvox Records in 1965.", []string{"ORGANIZATION:Brelvox Records"}},
		{"Zentrix Labs and Quillory Systems merged.", []string{"ORGANIZATION:Zentrix Labs", "ORGANIZATION:Quillory Systems"}},
	})
}

// TestIdentifierWords: words inside passwords and identifiers and
// hyphenated common words are no names; a family name of
// two letters at the end of a sentence keeps no dot; names joined by "&"
// are a firm, given names so joined are people.
func TestIdentifierWords(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The leaked password was SecureP@ss8901 again.", nil},
		{"His password !Open4Dayz was reused.", nil},
		{"Thanks to Jay & Trish for the photos.", []string{"PERSON:Jay", "PERSON:Trish"}},
		{"Follow-up questions came later.", nil},
		{"The account belongs to Dennis Yu.", []string{"PERSON:Dennis Yu"}},
		{"The firm Sterling & Associates called.", []string{"ORGANIZATION:Sterling & Associates"}},
		{"We'll meet at BrightLoop, 24 Mill Lane, Vrenstad", []string{"ORGANIZATION:BrightLoop", "ADDRESS:24 Mill Lane", "LOCATION:Vrenstad"}},
	})
}

// TestApostropheAtEnd: a name followed by an apostrophe that ends the text
// (a closing quote, a possessive cut off) is read without looking past
// the last word.
func TestApostropheAtEnd(t *testing.T) {
	for _, text := range []string{"We'll see you on 'Border Patrol'", "Ask Maria Lopez'", "Thanks to Acme Corp'"} {
		embeddedFindings(t, text)
	}
}

// TestPeoplesAndFaiths: words for a nation, a people or a faith, alone or
// in the plural, are no person's name; a family name of the same spelling
// still is one, and a name after such a word is found. The sentences are
// written for this test.
func TestPeoplesAndFaiths(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Talks between Palestinians and Israelis resumed this week.", nil},
		{"Several Iraqi engineers joined the project.", nil},
		{"The Shiite leaders met in the capital.", nil},
		{"Muslims and Hindus live in the district.", nil},
		{"Norwegians love the outdoors.", nil},
		{"Iraqi officials said Karim Haddad had resigned.", []string{"PERSON:Karim Haddad"}},
		{"Please call Dawn French tomorrow.", []string{"PERSON:Dawn French"}},
		// The first word of a place of several words.
		{"In Saudi Arabia the weekend starts on Friday.", []string{"LOCATION:Saudi Arabia", "DATE_TIME:Friday"}},
	})
}

// TestCountryCodes: a country written as its two capitals ("the UK", "US
// troops") is a place; the pronoun "us" and initials are not. The
// sentences are written for this test.
func TestCountryCodes(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"He moved to the UK last year.", []string{"LOCATION:UK"}},
		{"Officials said seven US soldiers were hurt.", []string{"LOCATION:US"}},
		{"The nearest park to Birmingham, UK is an hour away.", []string{"LOCATION:Birmingham", "LOCATION:UK"}},
		{"Let us know by Friday.", []string{"DATE_TIME:Friday"}},
		{"Tell us what you think.", nil},
		{"J. K. wrote back.", nil},
	})
}

// TestHouseNumberLetters: a house number with one letter after the street
// name ("Hauptstraße 5a"), as in much of Europe, ends the street as a
// plain number does; "5th" inside a name stays part of it. The addresses
// are written for this test.
func TestHouseNumberLetters(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Please send it to Hauptstraße 5a, 80331 München.", []string{"ADDRESS:Hauptstraße 5a, 80331 München"}},
		{"Please send it to Jansenlaan 725c, 2635 Delft.", []string{"ADDRESS:Jansenlaan 725c, 2635 Delft"}},
		{"The shop is on Petőfi rakpart 12B by the river.", []string{"ADDRESS:Petőfi rakpart 12B"}},
		{"We met at 12 5th Avenue yesterday.", []string{"ADDRESS:12 5th Avenue"}},
		// The abbreviation "str." joined to the name.
		{"Please send it to Kocherstr. 33c, 83695 Neustadt.", []string{"ADDRESS:Kocherstr. 33c, 83695 Neustadt"}},
		{"The office is at Lindenstr. 4 in Bonn.", []string{"ADDRESS:Lindenstr. 4", "LOCATION:Bonn"}},
	})
}

// TestPartnerFirms: a firm named after three partners ("A, B and C") is
// one organisation after "from" as well when none of the names is a
// known place, and with the word for "and" of other languages; known
// places in such a list stay places. The sentences are written for this
// test.
func TestPartnerFirms(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Mr. Ortega from Haskell, Brandt and Kowalczyk called.", []string{"PERSON:Mr.", "PERSON:Ortega", "ORGANIZATION:Haskell, Brandt and Kowalczyk"}},
		{"The contract with Brinkmann, Glatting und Kessler was signed.", []string{"ORGANIZATION:Brinkmann, Glatting und Kessler"}},
		{"The offer from Moreau, Lefebvre et Girard arrived.", []string{"ORGANIZATION:Moreau, Lefebvre et Girard"}},
		{"We drove from Lyon, Dijon and Paris in a day.", []string{"LOCATION:Lyon", "LOCATION:Dijon", "LOCATION:Paris"}},
	})
}

// TestCamelCaseWords: a word with a capital inside after a lower-case
// letter ("PayPal", "CrudeStocks") names a brand or a firm, not a person;
// names of that shape ("McDonald", "DeShawn", "LaToya", "VonRueden") stay
// names. The sentences are written for this test.
func TestCamelCaseWords(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The money went to your PayPal account.", []string{"ORGANIZATION:PayPal"}},
		{"Please open CrudeStocks and check the totals.", []string{"ORGANIZATION:CrudeStocks"}},
		{"Ask Ronald McDonald about it.", []string{"PERSON:Ronald McDonald"}},
		{"Thanks to DeShawn for the notes.", []string{"PERSON:DeShawn"}},
		{"Mrs. VonRueden called back.", []string{"PERSON:Mrs.", "PERSON:VonRueden"}},
	})
}

// TestSentenceStartNames: a given or family name that is also a common
// word starts a sentence as a name before a verb of speaking or writing
// ("Grace wrote back"); before other words it stays a word. The sentences
// are written for this test.
func TestSentenceStartNames(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Grace wrote back yesterday.", []string{"PERSON:Grace"}},
		{"Baker called about the delivery.", []string{"PERSON:Baker"}},
		{"Hope replied within the hour.", []string{"PERSON:Hope"}},
		{"Grace periods apply to late payments.", nil},
		{"Hope is all we have.", nil},
	})
}

// TestWatersAndCapes: a word of geography before "of" and a name ("Gulf
// of Mexico", "Bay of Biscay", "Isle of Skye") is one place; a firm or a
// body of that form is not. The sentences are written for this test.
func TestWatersAndCapes(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Oil rose in the Gulf of Mexico.", []string{"LOCATION:Gulf of Mexico"}},
		{"The Bay of Biscay was rough.", []string{"LOCATION:Bay of Biscay"}},
		{"We spent a week on the Isle of Skye.", []string{"LOCATION:Isle of Skye"}},
		{"Ships pass the Strait of Gibraltar daily.", []string{"LOCATION:Strait of Gibraltar"}},
		{"She works at the Bank of Ireland.", []string{"ORGANIZATION:Bank of Ireland"}},
	})
}

// TestDivisionNouns: a place and the lower-case noun for an administrative
// division after it are one place ("Vinnytska oblast", "Пермский край");
// the noun alone, or after a word that is no place, is none. The
// sentences are written for this test.
func TestDivisionNouns(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"My aunt was born in Vinnytska oblast and moved later.", []string{"LOCATION:Vinnytska oblast"}},
		{"We drove around Пермский край for a week.", []string{"LOCATION:Пермский край"}},
		{"The farm lies in Zlatiborski okrug, near the border.", []string{"LOCATION:Zlatiborski okrug"}},
	})
	for _, text := range []string{"The oblast was reorganised in 2020.", "The okrug office is closed."} {
		if got := embeddedFindings(t, text); len(got) != 0 {
			t.Errorf("%q: found %v", text, got)
		}
	}
}

// TestApostrophesOfAllKinds: the right single quotation mark that word
// processors write for an apostrophe, and the backtick that Uzbek written
// in ASCII uses for its ʻ, join a word as ' does and are looked up as ',
// and a capitalised word after an elided article ("d'Ivoire") continues a
// place's name.
func TestApostrophesOfAllKinds(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"We flew to Côte d’Ivoire.", []string{"LOCATION:Côte d’Ivoire"}},
		{"We flew to Côte d'Ivoire last May.", []string{"LOCATION:Côte d'Ivoire"}},
		{"The bus to G`azalkent left at noon.", []string{"LOCATION:G`azalkent"}},
		{"Ask Siobhan O’Connor about it.", []string{"PERSON:Siobhan O’Connor"}},
		{"It’s John’s car.", []string{"PERSON:John"}},
	})
}

// TestCountryNamesOfOtherLanguages: a country named in another language
// (CLDR's names, territories.txt) is a place without a word of place
// before it.
func TestCountryNamesOfOtherLanguages(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The parcel for Nouvelle-Zélande left yesterday.", []string{"LOCATION:Nouvelle-Zélande"}},
		{"The Lituania office called twice.", []string{"LOCATION:Lituania"}},
		{"Our Weißrussland branch is closing.", []string{"LOCATION:Weißrussland"}},
		{"The 日本 office called.", []string{"LOCATION:日本"}},
	})
}
