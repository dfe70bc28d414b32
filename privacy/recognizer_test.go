package privacy

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

const pemBlock = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\n-----END RSA PRIVATE KEY-----"

func TestBuiltinRecognizers(t *testing.T) {
	tests := []struct {
		name, text, want string // want: the value found, "" for none
		typ              EntityType
	}{
		{"email", "write to ann.lee+x@mail.example.com today", "ann.lee+x@mail.example.com", EmailAddress},
		{"email no tld", "root@localhost is local", "", EmailAddress},
		{"email bare at", "meet @example.com", "", EmailAddress},
		{"email one letter tld", "a@b.c", "", EmailAddress},

		{"visa", "card 4111111111111111 ok", "4111111111111111", CreditCard},
		{"mastercard spaced", "pay with 5500 0000 0000 0004.", "5500 0000 0000 0004", CreditCard},
		{"amex dashed", "amex 3782-822463-10005", "3782-822463-10005", CreditCard},
		{"discover", "6011111111111117", "6011111111111117", CreditCard},
		{"card luhn fails", "card 4111111111111112", "", CreditCard},
		{"card no issuer", "id 1234567812345670", "", CreditCard},
		{"card mixed separators", "4111-1111 1111-1111", "", CreditCard},
		{"card inside word", "x4111111111111111", "", CreditCard},
		{"card too long", "41111111111111110000", "", CreditCard},

		{"iban", "IBAN GB82WEST12345698765432 please", "GB82WEST12345698765432", IBANCode},
		{"iban grouped", "to GB82 WEST 1234 5698 7654 32.", "GB82 WEST 1234 5698 7654 32", IBANCode},
		{"iban lower", "de89370400440532013000", "de89370400440532013000", IBANCode},
		{"iban checksum fails", "GB82WEST12345698765433", "", IBANCode},
		{"iban wrong length", "DE8937040044053201300", "", IBANCode},
		{"iban unknown country", "QQ82WEST12345698765432", "", IBANCode},

		{"ssn", "SSN 536-32-3065.", "536-32-3065", USSSN},
		{"ssn bare with context", "social security number 536323065", "536323065", USSSN},
		{"ssn bare no context", "order 536323065", "", USSSN},
		{"ssn area 000", "000-12-3456", "", USSSN},
		{"ssn area 666", "666-12-3456", "", USSSN},
		{"ssn area 9xx", "912-12-3456", "", USSSN},
		{"ssn group 00", "123-00-4567", "", USSSN},
		{"ssn serial 0000", "123-45-0000", "", USSSN},
		{"ssn sample", "078-05-1120", "", USSSN},
		{"ssn same digits", "111-11-1111", "", USSSN},

		{"phone intl", "call +1 (415) 555-0132 now", "+1 (415) 555-0132", PhoneNumber},
		{"phone us ext", "(978)645-9740x11144", "(978)645-9740x11144", PhoneNumber},
		{"phone dotted", "fax 833.719.3994", "833.719.3994", PhoneNumber},
		{"phone groups", "They're not answering at 0487 23 46 71", "0487 23 46 71", PhoneNumber},
		{"phone e164", "+442071838750", "+442071838750", PhoneNumber},
		{"phone bare with context", "Phone: 2813882583", "2813882583", PhoneNumber},
		{"phone bare no context", "order 2813882583", "", PhoneNumber},
		{"phone date", "on 2024-05-31 we met", "", PhoneNumber},
		{"phone date time", "When: 1993-01-04 14:03:10", "", PhoneNumber},
		{"phone european date", "on 12.05.2023", "", PhoneNumber},
		{"phone years", "from 2019 2020 2021", "", PhoneNumber},
		{"phone address", "Apt. 722 20 40", "", PhoneNumber},
		{"phone short", "room 12 34", "", PhoneNumber},

		{"ipv4", "host 192.168.10.20.", "192.168.10.20", IPAddress},
		{"ipv6", "at 2001:db8::8a2e:370:7334 now", "2001:db8::8a2e:370:7334", IPAddress},
		{"ipv6 full", "d80:e4b5:79da:6cf6:71f3:51f7:9161:c319", "d80:e4b5:79da:6cf6:71f3:51f7:9161:c319", IPAddress},
		{"ipv4 octet too big", "256.1.1.1", "", IPAddress},
		{"ipv4 three parts", "version 1.2.3", "", IPAddress},
		{"time", "at 18:43:36", "", IPAddress},
		{"cpp scope", "std::vector", "", IPAddress},

		{"mac colon", "mac 00:1A:2B:3C:4D:5E", "00:1A:2B:3C:4D:5E", MACAddress},
		{"mac dash", "mac 00-1a-2b-3c-4d-5e.", "00-1a-2b-3c-4d-5e", MACAddress},
		{"mac short", "00:1A:2B:3C:4D", "", MACAddress},

		{"url", "see https://example.org/a?b=c.", "https://example.org/a?b=c", URL},
		{"url parens", "(see http://www.x.hu/)", "http://www.x.hu/", URL},
		{"url unknown scheme", "foo://example", "", URL},

		{"domain", "visit example.com today", "example.com", DomainName},
		{"domain www", "www.visualtrips.hu", "www.visualtrips.hu", DomainName},
		{"domain file", "open report.pdf now", "", DomainName},
		{"domain python file", "run setup.py", "", DomainName},
		{"domain eg", "e.g. this", "", DomainName},
		{"domain missing space", "in Paris.It was", "", DomainName},

		{"btc p2pkh", "send to 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", Crypto},
		{"btc p2sh", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", Crypto},
		{"btc bech32", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", Crypto},
		{"btc bech32m", "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297", "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297", Crypto},
		{"eth", "0x52908400098527886E0F7030069857D2E4169EE7", "0x52908400098527886E0F7030069857D2E4169EE7", Crypto},
		{"btc checksum fails", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3", "", Crypto},
		{"bech32 checksum fails", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdr", "", Crypto},
		{"eth too short", "0x52908400098527886E0F7030069857D2E4169EE", "", Crypto},

		{"aws key", "key=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", Secret},
		{"github token", "token ghp_" + strings.Repeat("a1B2", 9), "ghp_" + strings.Repeat("a1B2", 9), Secret},
		{"github pat", "github_pat_" + strings.Repeat("x", 60), "github_pat_" + strings.Repeat("x", 60), Secret},
		{"slack", "xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij", Secret},
		{"stripe", "sk_live_" + strings.Repeat("Ab9", 8), "sk_live_" + strings.Repeat("Ab9", 8), Secret},
		{"google", "AIza" + strings.Repeat("B", 35), "AIza" + strings.Repeat("B", 35), Secret},
		{"jwt", "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", Secret},
		{"pem", "key:\n" + pemBlock + "\nend", pemBlock, Secret},
		{"aws key short", "AKIAIOSFODNN7EXAMPL", "", Secret},
		{"github token short", "ghp_abc", "", Secret},
		{"jwt header not json", "eyJub3Qgandzb24.eyJzdWIiOiIxIn0.abc", "", Secret},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "", Secret},
	}
	s := NewScanner(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := s.Scan(context.Background(), tt.text)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				if f.Type == tt.typ {
					got = append(got, tt.text[f.Start:f.End])
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("Scan(%q): got %s %q, want none", tt.text, tt.typ, got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("Scan(%q): got %s %q (all findings %+v), want %q", tt.text, tt.typ, got, fs, tt.want)
			}
		})
	}
}

func TestBuiltinsAlone(t *testing.T) {
	// Each built-in also works as a plain Recognizer.
	text := "mail ann@example.com or call +1 415 555 0132"
	var fs []Finding
	for _, r := range Builtins(EmailAddress, PhoneNumber) {
		var err error
		if fs, err = r.Recognize(context.Background(), text, fs); err != nil {
			t.Fatal(err)
		}
	}
	fs = merge(fs, 0.5)
	if len(fs) != 2 || fs[0].Type != EmailAddress || fs[1].Type != PhoneNumber {
		t.Fatalf("got %+v, want an e-mail and a phone", fs)
	}
	if n := len(Builtins()); n != len(builtins)+1 {
		t.Errorf("Builtins() has %d recognizers, want %d", n, len(builtins)+1)
	}
}

func TestOverlappingFindings(t *testing.T) {
	// A rule whose matches overlap the built-in e-mail: the union wins.
	rule := &Rule{Type: "ACCOUNT", Pattern: regexp.MustCompile(`acct-[0-9]+@ex`), Score: 0.95}
	s := NewScanner(&ScannerOptions{Recognizers: append(Builtins(), rule)})
	text := "id acct-42@example.com."
	fs, err := s.Scan(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("got %+v, want one merged finding", fs)
	}
	if got := text[fs[0].Start:fs[0].End]; got != "acct-42@example.com" || fs[0].Type != "ACCOUNT" {
		t.Errorf("got %q %s, want the union labelled ACCOUNT (higher score)", got, fs[0].Type)
	}

	// Equal scores: the more specific type labels the union.
	a := Finding{Start: 0, End: 5, Type: DomainName, Score: 0.9}
	b := Finding{Start: 3, End: 9, Type: EmailAddress, Score: 0.9}
	c := Finding{Start: 9, End: 12, Type: PhoneNumber, Score: 0.9}
	got := merge([]Finding{c, b, a}, 0.5)
	want := []Finding{{Start: 0, End: 9, Type: EmailAddress, Score: 0.9}, c}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("merge: got %+v, want %+v", got, want)
	}
}

func TestRuleValidate(t *testing.T) {
	rule := &Rule{Type: "EMPLOYEE_ID", Pattern: regexp.MustCompile(`E-[0-9]{4}`), Validate: func(m string) bool { return m != "E-0000" }}
	s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{rule}})
	fs, err := s.Scan(context.Background(), "E-1234 E-0000 E-99")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Start != 0 || fs[0].End != 6 || fs[0].Type != "EMPLOYEE_ID" {
		t.Errorf("got %+v, want only E-1234", fs)
	}
}

func TestDictionary(t *testing.T) {
	d := NewDictionary(Person, []string{"Ann Lee", "Bob", "acme-42", "he"}, &DictionaryOptions{IgnoreCase: true})
	text := "ANN LEE met bob and Bobby at ACME-42; she left."
	fs, err := d.Recognize(context.Background(), text, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, text[f.Start:f.End])
	}
	want := []string{"ANN LEE", "bob", "ACME-42"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q (whole words only)", got, want)
	}

	exact := NewDictionary("", []string{"Bob"}, &DictionaryOptions{AnyPosition: true})
	fs, _ = exact.Recognize(context.Background(), "bob Bobby", nil)
	if len(fs) != 1 || fs[0].Start != 4 || fs[0].Type != Generic {
		t.Errorf("case-sensitive any-position: got %+v, want Bob in Bobby", fs)
	}
	// Overlapping terms, suffix outputs via failure links.
	multi := NewDictionary(Person, []string{"she", "he", "hers", "his"}, &DictionaryOptions{AnyPosition: true})
	fs, _ = multi.Recognize(context.Background(), "ushers", nil)
	if len(fs) != 3 {
		t.Errorf("ushers: got %+v, want she, he, hers", fs)
	}
	if h := multi.holdback("text ending in hi"); h != 2 {
		t.Errorf("holdback = %d, want 2", h)
	}
}
