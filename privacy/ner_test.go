package privacy

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAnchorIn8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			b := []byte("........")
			b[pos] = byte(c)
			x := uint64(0)
			for k := 7; k >= 0; k-- {
				x = x<<8 | uint64(b[k])
			}
			// A superset (the byte loop decides) that passes over the
			// bytes of lower-case prose.
			got := anchorIn8(x)
			if anchorTable[c] && !got || (c >= 'a' && c <= 'z' || strings.IndexByte(" .,'\"!()-\n", byte(c)) >= 0) && got {
				t.Fatalf("byte %#x at %d: got %v", c, pos, got)
			}
		}
	}
}

// TestEmbedded: what the embedded recognizer finds, in sentences written
// for this test (not from any data set).
func TestEmbedded(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Anna Schmidt lives at 12 Rue de la Paix, Paris", []string{"PERSON:Anna Schmidt", "ADDRESS:12 Rue de la Paix", "LOCATION:Paris"}},
		{"Please ship it to 742 Evergreen Terrace, Springfield, Oregon 97403.", []string{"ADDRESS:742 Evergreen Terrace, Springfield, Oregon 97403"}},
		{"My name is Olga Petrov and I was born on 3/14/1975.", []string{"PERSON:Olga Petrov", "DATE_TIME:3/14/1975"}},
		{"She moved here from Portugal last year.", []string{"LOCATION:Portugal"}},
		{"Dr. Kowalski is a 47 year old surgeon.", []string{"PERSON:Dr.", "PERSON:Kowalski", "AGE:47"}},
		{"The Wexford Analytics Group office is at Suite 400.", []string{"ORGANIZATION:Wexford Analytics Group", "ADDRESS:Suite 400"}},
		{"Meeting on 2031-07-09 14:30 with Priya.", []string{"DATE_TIME:2031-07-09 14:30", "PERSON:Priya"}},
		{"my zip code is 60614", []string{"ADDRESS:60614"}},
		// Lower-case text: names where the words around say so.
		{"she flew in from brazil", []string{"LOCATION:brazil"}},
		{"ok so yolanda will bring the cake", []string{"PERSON:yolanda"}},
		{"my uncle grew up in vrenstad", []string{"LOCATION:vrenstad"}},
		{"we need to mark the crystal glasses", nil},
		// Address forms of several countries.
		{"Post it to 4 Kelvin Road, Glasgow G12 8QQ, thanks", []string{"ADDRESS:4 Kelvin Road, Glasgow G12 8QQ"}},
		{"The form goes to 80 Wellington Street, Ottawa, ON K1A 0A6.", []string{"ADDRESS:80 Wellington Street, Ottawa, ON K1A 0A6"}},
		{"Please forward it to Lindenallee 14, 50968 Köln, Deutschland today", []string{"ADDRESS:Lindenallee 14, 50968 Köln, Deutschland"}},
		{"We moved to 31 Prinsengracht, 1015 DV Amsterdam", []string{"ADDRESS:31 Prinsengracht, 1015 DV Amsterdam"}},
		{"Returns: 77 Orchard Way Birch Street, Dayton, OH 45402", []string{"ADDRESS:77 Orchard Way Birch Street, Dayton, OH 45402"}},
		{"Please forward my post to Skólavegur 14, Selfoss", []string{"ADDRESS:Skólavegur 14", "LOCATION:Selfoss"}},
		{"Please return it to Ines and 12 Oak Road.", []string{"ADDRESS:Ines and 12 Oak Road"}},
		{"New address: 5 Rosemary Lane\nBrno 2\n, JM\n Czech Republic 60200", []string{"ADDRESS:5 Rosemary Lane\nBrno 2\n, JM\n Czech Republic 60200"}},
		// A block under a name, part by part; the country line and the
		// postal code after it belong to the block.
		{"Tomás Ferreira\n\n12 P.O. Box 77\n Suite 5\n Vila Nova\n Republic of Moldova 20455",
			[]string{"PERSON:Tomás Ferreira", "ADDRESS:12", "ADDRESS:P.O. Box 77", "ADDRESS:Suite 5", "LOCATION:Vila Nova", "LOCATION:Republic of Moldova", "ADDRESS:20455"}},
		// Organisations by their words and by the words around them.
		{"She joined the University of Leeds in 2011.", []string{"ORGANIZATION:University of Leeds"}},
		{"Grant Data Systems hired twelve people.", []string{"ORGANIZATION:Grant Data Systems"}},
		{"Last year he worked at Quillory as a designer.", []string{"ORGANIZATION:Quillory"}},
		{"The founder of Brandwick left.", []string{"ORGANIZATION:Brandwick"}},
		// A place after a preposition of place, even with a given name
		// inside; a person's full name stays a person.
		{"Last spring we moved here from Fort Albert.", []string{"LOCATION:Fort Albert"}},
		{"The workshop is in Tarnby Vale this year.", []string{"LOCATION:Tarnby Vale"}},
		{"The letter was in Maria Kowalski's drawer.", []string{"PERSON:Maria Kowalski"}},
		// Names with two connectors and suffixes; a verb before a name
		// is not part of it.
		{"Ask Pieter van der Berg about the keys.", []string{"PERSON:Pieter van der Berg"}},
		{"The report by Laura Mendes PhD was late.", []string{"PERSON:Laura Mendes PhD"}},
		{"Rosa is from Cork, and I gave Rosa her umbrella.", []string{"PERSON:Rosa", "LOCATION:Cork", "PERSON:Rosa"}},
		{"I hear that Turkey is lovely in May.", []string{"LOCATION:Turkey"}},
		{"Ms. Ida Berg Apt. 4 7 Kirkeveien 12\nHalden T 51890", []string{"PERSON:Ms.", "PERSON:Ida Berg", "ADDRESS:Apt. 4", "ADDRESS:7", "ADDRESS:Kirkeveien 12", "LOCATION:Halden", "ADDRESS:T", "ADDRESS:51890"}},
		{"My sister lives in Brno 2, near the river.", []string{"LOCATION:Brno 2"}},
		{"We stayed in Lisbon 3 nights.", []string{"LOCATION:Lisbon"}},
		// Places of several words, with small words inside them.
		{"Our supplier ships from the Republic of the Congo.", []string{"LOCATION:Republic of the Congo"}},
		{"They spent the winter in Alcalá de los Gazules.", []string{"LOCATION:Alcalá de los Gazules"}},
		{"Her cousin emigrated from People's Republic of China", []string{"LOCATION:People's Republic of China"}},
		{"the team flew home to sierra leone", []string{"LOCATION:sierra leone"}},
		{"apparently mongolia is cold in march", []string{"LOCATION:mongolia"}},
		// Nothing personal.
		{"The committee agreed on the plan. Several questions remained open.", nil},
		{"Words such as Courage and Honesty are not names.", nil},
		{"We shipped 20 boxes and 3 pallets.", nil},
		{"Reference [PERSON_1] met [LOCATION_2].", nil},
	} {
		fs, err := NewScanner(&ScannerOptions{Recognizers: []Recognizer{Embedded()}}).Scan(ctx, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, string(f.Type)+":"+tc.text[f.Start:f.End])
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", tc.text, got, tc.want)
		}
	}
}

// TestHouseNumbers: a house number, with a letter or not, belongs to the
// street it stands before, and the town after the street line is a place
// even where it is also a family name.
func TestHouseNumbers(t *testing.T) {
	r := NewRewriter(NewScanner(nil), NewVault())
	for _, tc := range []struct{ text, want string }{
		{"Deliver it to 221B Baker Street, London.", "Deliver it to [ADDRESS_1], [LOCATION_1]."},
		{"Our studio is at 4c Harbour Lane, Galway", "Our studio is at [ADDRESS_2], [LOCATION_2]"},
		{"Meet me at 10 Downing Street tomorrow.", "Meet me at [ADDRESS_3] tomorrow."},
		{"The keys are with the porter at 58 Elm Grove.", "The keys are with the porter at [ADDRESS_4]."},
		{"Ann Lee\n17 Quarry Road\nBristol", "[PERSON_1]\n[ADDRESS_5]\n[LOCATION_3]"},
		{"Send the forms to 9-11 Mill Lane, Leeds, please.", "Send the forms to [ADDRESS_6], [LOCATION_4], please."},
	} {
		got, err := r.Tokenize(ctx, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Tokenize(%q)\n got %q\nwant %q", tc.text, got, tc.want)
		}
	}
}

func TestEmbeddedTypes(t *testing.T) {
	text := "Anna Schmidt lives at 12 Rue de la Paix, Paris"
	fs, err := NewScanner(&ScannerOptions{Recognizers: []Recognizer{Embedded(Person)}}).Scan(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Type != Person {
		t.Fatalf("Embedded(Person) found %+v, want only the person", fs)
	}
	if n := len(Builtins(Person, EmailAddress)); n != 2 {
		t.Errorf("Builtins(Person, EmailAddress) has %d recognizers, want 2", n)
	}
}

func FuzzEmbedded(f *testing.F) {
	for _, s := range []string{"Anna Schmidt lives at 12 Rue de la Paix, Paris", "??? a\n??? 1 Main St\n??? Apt. 4\n??? X\n??? Y 1",
		"mr. jörg ö 1/2/1990", "PSC 1, Box 2\nAPO AE 12345", "the corner of A St. and B Street", "ΛΕΜΕΣΟΣ 12 Αγ. Ανδρέα 3",
		"A, B and C", "O'Brien-Smith's 40th", "\xff\xfe Ab 1", "9-11 Mill Lane, Leeds LS1 4AP", "221B Baker St, K1A 0B1",
		"Hauptstraße 5, 80331 München", "1 Main St\nTown\nRepublic of X 1234 AB", "12 Wall Street Elm Street", "on 'Border Patrol'",
		"Jln. Kenari no 5, Tarakan 77114", "Sabirov pr., 41, AZ2001 Quba, Gurcustan until", "to 14 Larkwell Street, Odumase GT-204-7781",
		"Cesta v Gorice 12, 1000 Ljubljana", "from Virska 71 at 8", "Tovuz sh., 8\nAZ1010 Lerik\nGurcustan", "3 Ebbrook Lk, 6:00 PM CST",
		"at 人民路88号, 杭州市 310000", "3丁目12番5号, 150-0041 渋谷区", "Meet 다인 outside 252 연무4길", "Ask राहुल शर्मा", "Vodir ג€“ sadly",
		"خیابان آزادی, پلاک 12", "Address:\nשדרות רוטשילד 22\nתל אביב 6688218",
		"Calle Hidalgo s/n, Oaxaca, 68000", "Via Garibaldi, 41 in", "2210 W Elm Street", "41 Harbour View Rd, Wollongong",
		"ul. Długa 12/4, 00-950 Warszawa", "3/45 Smith St", "7 Mill Lane, St. Albans AL1 2AA", "Springfield BS8811 x",
		"12 Main St, Springfield, IL 62704, Bosna i Hercegovina (BiH), before", "Please send it to\nNovakova 12\n10000 Zagreb", "Côte d’Ivoire", "O’’Brien d’ l’A `x G`"} {
		f.Add(s)
	}
	s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{Embedded()}})
	f.Fuzz(func(t *testing.T, text string) {
		fs, err := s.Scan(ctx, text)
		if re := (*RecognizerError)(nil); errors.As(err, &re) {
			t.Fatalf("%q: %v", text, err)
		}
		if err != nil {
			return
		}
		last := 0
		for _, fd := range fs {
			if fd.Start < last || fd.End <= fd.Start || fd.End > len(text) {
				t.Fatalf("bad finding %+v in %q", fd, text)
			}
			if utf8.ValidString(text) && (!utf8.RuneStart(text[fd.Start]) || fd.End < len(text) && !utf8.RuneStart(text[fd.End])) {
				t.Fatalf("finding %+v cuts a character in %q", fd, text)
			}
			last = fd.End
		}
	})
}

// FuzzPostcode checks the reader of British and Canadian postal codes
// against a regular expression of the same forms.
func FuzzPostcode(f *testing.F) {
	for _, s := range []string{"NW1 6XE", "SW1A 1AA", "K1A 0B1", "K1A0B1", "G12 8QQ,", "EC1A 1BB9", "A1 1AA", "k1a 0b1", "AB12 3CD", "D02 X285", "D6W 1234", "D6W 0A00", "A00 0AA0", "T12 0000"} {
		f.Add(s)
	}
	// Canadian, Irish (four characters after the routing key, a letter
	// among them) and British codes, in the order alnumPostcode tries them.
	re := regexp.MustCompile(`^([A-Z][0-9][A-Z] ?[0-9][A-Z][0-9]|(?:[A-Z][0-9]{2}|D6W) (?:[A-Z][0-9A-Z]{3}|[0-9][A-Z][0-9A-Z]{2}|[0-9]{2}[A-Z][0-9A-Z]|[0-9]{3}[A-Z])|[A-Z]{1,2}[0-9][A-Z0-9]? [0-9][A-Z]{2})(?:[^A-Za-z0-9]|$)`)
	f.Add("NW1 6XEé")
	f.Fuzz(func(t *testing.T, text string) {
		e := alnumPostcode(text, 0)
		want := 0
		if m := re.FindStringSubmatchIndex(text); m != nil {
			want = m[3]
		}
		if e != want {
			t.Fatalf("alnumPostcode(%q) = %d, want %d", text, e, want)
		}
	})
}

// TestNamePlaceDisambiguation: a capitalised word that is both a given
// name and a known place is decided by the words around it; sentences
// written for this test.
func TestNamePlaceDisambiguation(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		// Place cues: a preposition of place, a country or state after a
		// comma, "-based", a postal code.
		{"The parcel went to Florence yesterday.", []string{"LOCATION:Florence"}},
		{"We spent a week near Paris last summer.", []string{"LOCATION:Paris"}},
		{"Our office is in Florence, Italy.", []string{"LOCATION:Florence", "LOCATION:Italy"}},
		{"Tickets for Paris, France are sold out.", []string{"LOCATION:Paris", "LOCATION:France"}},
		{"A Florence-based studio made the film.", []string{"LOCATION:Florence"}},
		{"The conference moves from Florence to Paris.", []string{"LOCATION:Florence", "LOCATION:Paris"}},
		{"We drove around Florence for hours.", []string{"LOCATION:Florence"}},
		{"The hotel is just outside Paris.", []string{"LOCATION:Paris"}},
		{"She loves the streets of Florence at night.", []string{"LOCATION:Florence"}},
		{"The mayor of Paris opened the fair.", []string{"LOCATION:Paris"}},
		{"Paris is a city of bridges.", []string{"LOCATION:Paris"}},
		{"Florence's museums close early.", []string{"LOCATION:Florence"}},
		{"Flights from Lisbon to Vrenstad are cheap.", []string{"LOCATION:Lisbon", "LOCATION:Vrenstad"}},
		{"Rents in the Florence area went up.", []string{"LOCATION:Florence"}},
		{"We hiked along the Vrenstad coast.", []string{"LOCATION:Vrenstad"}},
		{"Visiting Florence next week!", []string{"LOCATION:Florence"}},
		{"Flights to Florence are cheap.", []string{"LOCATION:Florence"}},
		// A list after a preposition of place is a list of places, not a
		// firm named after partners.
		{"Our trip to Florence, Paris and Madrid was long.", []string{"LOCATION:Florence", "LOCATION:Paris", "LOCATION:Madrid"}},
		{"She lived in Vrenstad, Tarnby and Kelso.", []string{"LOCATION:Vrenstad", "LOCATION:Tarnby", "LOCATION:Kelso"}},
		// "Name, age, of Town": the town of a person in a report.
		{"Ann Lee, 44, of Florence, was hurt.", []string{"PERSON:Ann Lee", "LOCATION:Florence"}},
		{"Tom Berg, of Vrenstad, won the race.", []string{"PERSON:Tom Berg", "LOCATION:Vrenstad"}},
		// "to" after a word of speaking or giving introduces a person.
		{"Say hello to Okonkwo for me.", []string{"PERSON:Okonkwo"}},
		{"I wrote to Okonkwo yesterday.", []string{"PERSON:Okonkwo"}},
		{"Thanks to Vasquez, we won.", []string{"PERSON:Vasquez"}},
		// Person cues keep the name a person.
		{"Florence's husband closes the shop early.", []string{"PERSON:Florence"}},
		{"The husband of Florence is a baker.", []string{"PERSON:Florence"}},
		{"Florence said the parcel was late.", []string{"PERSON:Florence"}},
		{"I gave Paris her keys back.", []string{"PERSON:Paris"}},
		{"My name is Florence and I sing.", []string{"PERSON:Florence"}},
	} {
		fs, err := NewScanner(&ScannerOptions{Recognizers: []Recognizer{Embedded()}}).Scan(ctx, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, string(f.Type)+":"+tc.text[f.Start:f.End])
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", tc.text, got, tc.want)
		}
	}
}

// TestOrganizationEvidence: a single capitalised word needs a strong cue
// to be an organisation, and an organisation guess that is a known place
// or a person's name is dropped.
func TestOrganizationEvidence(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"She works at Zentrix as an engineer.", []string{"ORGANIZATION:Zentrix"}},
		{"He works at Portugal Telecom.", []string{"ORGANIZATION:Portugal Telecom"}},
		// A known place after a weak organisation cue stays a place.
		{"She works in Lisbon now.", []string{"LOCATION:Lisbon"}},
		{"Our staff volunteered at Lisbon for a week.", []string{"LOCATION:Lisbon"}},
		// A family name after a cue of working with someone is a person.
		{"She works with Kowalski on the report.", []string{"PERSON:Kowalski"}},
		{"He consulted with Okafor before lunch.", []string{"PERSON:Okafor"}},
		// A list of known places is no firm named after its partners.
		{"We have shops in Lisbon, Madrid and Seville.", []string{"LOCATION:Lisbon", "LOCATION:Madrid", "LOCATION:Seville"}},
		{"Offices: Lisbon, Madrid and Seville", []string{"LOCATION:Lisbon", "LOCATION:Madrid", "LOCATION:Seville"}},
		// Places listed after an organisation stay places.
		{"She joined Zentrix Labs, Vienna and Prague teams.", []string{"ORGANIZATION:Zentrix Labs", "LOCATION:Vienna", "LOCATION:Prague"}},
		// A town on its own line under a person is no organisation, nor
		// an unknown word on a line above a country.
		{"Ann Lee\nVrenstad\nNorway", []string{"PERSON:Ann Lee", "LOCATION:Vrenstad", "LOCATION:Norway"}},
		{"Ann Lee\nVrenstad 4021", []string{"PERSON:Ann Lee", "LOCATION:Vrenstad"}},
		{"Ann Lee\n4021 Vrenstad", []string{"PERSON:Ann Lee", "LOCATION:Vrenstad"}},
		{"Ann Lee\nSales manager\nBrelvox\n4 Mill Lane", []string{"PERSON:Ann Lee", "TITLE:Sales manager", "ORGANIZATION:Brelvox", "ADDRESS:4 Mill Lane"}},
		{"Ann Lee\nRotterdam", []string{"PERSON:Ann Lee", "LOCATION:Rotterdam"}},
	} {
		fs, err := NewScanner(&ScannerOptions{Recognizers: []Recognizer{Embedded()}}).Scan(ctx, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, string(f.Type)+":"+tc.text[f.Start:f.End])
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q:\n got %q\nwant %q", tc.text, got, tc.want)
		}
	}
}
