package privacy

import (
	"fmt"
	"strings"
	"testing"
)

// found returns the findings of the default scanner as "TYPE:value".
func found(t *testing.T, text string) []string {
	t.Helper()
	return foundBy(t, nil, text)
}

// foundBy returns the findings of a scanner of recognizers rs as
// "TYPE:value".
func foundBy(t *testing.T, rs []Recognizer, text string) []string {
	t.Helper()
	fs, err := NewScanner(&ScannerOptions{Recognizers: rs}).Scan(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%s", f.Type, text[f.Start:f.End]))
	}
	return out
}

func hasFinding(fs []string, want string) bool {
	for _, f := range fs {
		if f == want {
			return true
		}
	}
	return false
}

func TestPatternGeneralisation(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // a finding that must be there
	}{
		{"legacy 15-digit JCB 2131", "paid with 213100000000001", "CREDIT_CARD:213100000000001"},
		{"legacy 15-digit JCB 1800", "paid with 180000000000002", "CREDIT_CARD:180000000000002"},
		{"16 digits from 35 outside the JCB range", "number 3512 3456 7890 1236", "CREDIT_CARD:3512 3456 7890 1236"},
		{"unknown issuer with a card word", "my card 9000 1234 5678 9016", "CREDIT_CARD:9000 1234 5678 9016"},
		{"card with dots", "card 4111.1111.1111.1111 expires", "CREDIT_CARD:4111.1111.1111.1111"},
		{"trunk prefix", "Call +44 (0)20 7946 0958 today", "PHONE_NUMBER:+44 (0)20 7946 0958"},
		{"one-digit area code", "call me on +33 1 42 68 53 00.", "PHONE_NUMBER:+33 1 42 68 53 00"},
		{"trunk prefix no space", "tel +49 (0)30-1234567", "PHONE_NUMBER:+49 (0)30-1234567"},
		{"e-mail with an IP literal", "write to admin@[192.168.10.20] now", "EMAIL_ADDRESS:admin@[192.168.10.20]"},
		{"e-mail with a non-ASCII domain", "write to jörg@bücher.de now", "EMAIL_ADDRESS:jörg@bücher.de"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fs := found(t, tc.text); !hasFinding(fs, tc.want) {
				t.Errorf("in %q got %q, want %s", tc.text, fs, tc.want)
			}
		})
	}
}

func TestPatternNegativeContext(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		not        string // a finding that must not be there
	}{
		{"house number before a street", "deliver to 4200 1234 Main Street please", "PHONE_NUMBER:4200 1234"},
		{"zip plus four", "zip 94107-1234", "PHONE_NUMBER:94107-1234"},
		{"postal code", "postal code 02-495 1234", "PHONE_NUMBER:02-495 1234"},
		{"offices is not office", "our offices 4155550132 and 77 rooms", "PHONE_NUMBER:4155550132"},
		{"number alone", "the number 4155550132 is our order", "PHONE_NUMBER:4155550132"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fs := foundBy(t, Builtins(PhoneNumber), tc.text); hasFinding(fs, tc.not) {
				t.Errorf("in %q got %q, do not want %s", tc.text, fs, tc.not)
			}
		})
	}
	// Whole-word context still works.
	if fs := found(t, "office 4155550132"); !hasFinding(fs, "PHONE_NUMBER:4155550132") {
		t.Errorf("office context: got %q", fs)
	}
}

// TestLookAlikes: values shaped like personal data that are not.
func TestLookAlikes(t *testing.T) {
	for _, text := range []string{
		"card 4111 1111 1111 1112",                     // Luhn-invalid
		"ref 4111111111111112 and 5500 0000 0000 0005", // Luhn-invalid
		"id 550e8400-e29b-41d4-a716-446655440000 done", // UUID
		"object 5f2b8c9d1e3a4f6b7c8d9e0f stored",       // hex id
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"order 1234567 shipped, order no. 2024-000123, invoice INV-20240531-0042",
		"Order #A-1234-5678 and ticket 88231 are closed",
		"build 20240531.3 at 12:30:45",
	} {
		if fs := found(t, text); len(fs) > 0 {
			t.Errorf("in %q got %q, want nothing", text, fs)
		}
	}
}

// TestPhoneFormsOfMoreCountries: phone numbers as several countries write
// them (the numbers are made up for this test), each missed or cut short
// before: a country code in brackets, a slash after the area code, a
// one-digit area code after the country code with one long group after
// it, an area code of five digits in brackets, a trunk prefix alone, the
// international prefix 00, the French extension word, and a bare local
// number of seven to nine digits after a word of calling. Shapes of other
// numbers stay no phone number.
func TestPhoneFormsOfMoreCountries(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"Call me at (+62) 21 555 0199 today.", "PHONE_NUMBER:(+62) 21 555 0199"},
		{"Her number: +36 30/555-0142", "PHONE_NUMBER:+36 30/555-0142"},
		{"Ring the office at +972-3-5550123.", "PHONE_NUMBER:+972-3-5550123"},
		{"Fax: (03541) 5550123", "PHONE_NUMBER:(03541) 5550123"},
		{"Call 0 2555 0142 for bookings.", "PHONE_NUMBER:0 2555 0142"},
		{"From abroad, dial 00389 2 555 0142.", "PHONE_NUMBER:00389 2 555 0142"},
		{"Phone 514 555-0142, poste 221", "PHONE_NUMBER:514 555-0142, poste 221"},
		{"Call me on 38750824 tonight.", "PHONE_NUMBER:38750824"},
	} {
		if got := found(t, tc.text); !hasFinding(got, tc.want) {
			t.Errorf("%q: got %q, want %s", tc.text, got, tc.want)
		}
	}
	for _, text := range []string{"The ratio was 120/4500 overall.", "Order 38750824 shipped.", "Batch 0 2555 0142 passed QA.",
		"It rose from 5 to 30/555 cases.", "The formula (+3) 4 is odd.",
		"Call us about order 48213377 today.", "Contact support with ticket 5521034 attached."} {
		for _, f := range found(t, text) {
			if strings.HasPrefix(f, "PHONE_NUMBER:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}
