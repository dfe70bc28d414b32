package privacy

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSkipFindsEveryTrigger: the eight-byte test of a scanner never passes
// over a block that holds one of its trigger bytes, wherever it stands.
func TestSkipFindsEveryTrigger(t *testing.T) {
	for _, rs := range [][]Recognizer{nil, Builtins(EmailAddress), Builtins(PhoneNumber, URL), Builtins(Secret)} {
		s := NewScanner(&ScannerOptions{Recognizers: rs})
		for c := range 256 {
			if s.table[c] == 0 {
				continue
			}
			for pos := range 8 {
				b := []byte("the plain words of text here")
				b[8+pos] = byte(c)
				if got := s.skip.skip(string(b), 0); got > 8 {
					t.Fatalf("trigger %#x at %d: skipped to %d", c, 8+pos, got)
				}
			}
		}
	}
}

// TestFusedScanMatchesEachFinder: the fused pass finds what each built-in
// finds when it runs alone over every byte.
func TestFusedScanMatchesEachFinder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"the ", "plan ", "e.g. ", "a.b ", "x-y ", "api_key=", "token: ", "Authorization: Bearer ",
		"sk-", "ghp_", "AKIA", "john@example.com ", "4111 1111 1111 1111 ", "+1 415 555 0132 ", "192.168.1.1 ",
		"fe80::1 ", "https://example.org/a?token=abcdefghijklmnop1234 ", "é ", "\n", "0", "7", ":", ".", "-", "_", "=", "@",
		"JWT eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstuv ", "GB82 WEST 1234 5698 7654 32 "}
	var rs []Recognizer
	for _, r := range Builtins() {
		if _, ok := r.(*builtin); ok {
			rs = append(rs, r)
		}
	}
	s := NewScanner(&ScannerOptions{Recognizers: rs, MinScore: 1e-9})
	for range 300 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.String()
		got, err := s.Scan(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		var all []Finding
		for _, r := range rs {
			all, _ = r.Recognize(context.Background(), text, all)
		}
		want := merge(all, 1e-9)
		if !slices.Equal(got, want) {
			t.Fatalf("text %q:\ngot  %v\nwant %v", text, got, want)
		}
	}
}

// TestCredentialStart: the two-byte prefilter of credential names lets
// every name that holds a credential word through.
func TestCredentialStart(t *testing.T) {
	for _, w := range credentialNames {
		for _, name := range []string{w, "x_" + w, w + "_id", "my" + w} {
			if !credentialStart.in(name) {
				t.Errorf("%q: prefilter says no credential word", name)
			}
		}
	}
	// Names without a credential word may pass; those with one must.
	for _, name := range []string{"open", "remarks", "note", "x", "passport", "tokens", "monkey", "sessions"} {
		holds := slices.ContainsFunc(credentialNames, func(w string) bool { return strings.Contains(name, w) })
		if holds && !credentialStart.in(name) {
			t.Errorf("%q: prefilter says no credential word", name)
		}
	}
}
