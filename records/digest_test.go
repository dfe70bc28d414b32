package records_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/records"
)

func TestArgumentsDigest(t *testing.T) {
	same := [][2]string{
		{`{"flight":"VX205","seat":"12A"}`, `{ "seat" : "12A",
			"flight": "VX205" }`},
		{`{"a":{"y":1,"x":[1,2]}}`, `{"a":{"x":[1, 2],"y":1}}`},
		{`"<&>"`, `"\u003c\u0026\u003e"`},
	}
	for _, p := range same {
		if records.ArgumentsDigest(p[0]) != records.ArgumentsDigest(p[1]) {
			t.Errorf("digests of %s and %s differ, want equal", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`{"flight":"VX205"}`, `{"flight":"VX206"}`},
		{`{"n":1}`, `{"n":1.0}`}, // numbers as written
		{`{"n":1}`, `{"n":"1"}`}, // types matter
		{`{"a":1}`, `{"a":1,"b":null}`},
		{`{`, `"{"`},              // invalid JSON never matches a JSON string
		{`{"a":1} {}`, `{"a":1}`}, // two values are not one
		{``, `""`},
		{`{"flight":"XX1","flight":"VX205"}`, `{"flight":"VX205"}`}, // repeated keys match only byte for byte
		{"\"\xff\"", `"\ufffd"`},                                    // invalid UTF-8 is not replaced
	}
	for _, p := range differ {
		if records.ArgumentsDigest(p[0]) == records.ArgumentsDigest(p[1]) {
			t.Errorf("digests of %q and %q are equal, want different", p[0], p[1])
		}
	}
}

func TestGrantCovers(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	any := &records.Grant{Tool: "bookFlight", ExpiresAt: now.Add(time.Minute)}
	same := &records.Grant{Tool: "bookFlight", ExpiresAt: now.Add(time.Minute), ArgumentsDigest: records.ArgumentsDigest(`{"flight":"VX205"}`)}
	for _, tc := range []struct {
		name       string
		g          *records.Grant
		tool, args string
		at         time.Time
		want       bool
	}{
		{"any arguments", any, "bookFlight", `{"flight":"XX1"}`, now, true},
		{"other tool", any, "cancelFlight", `{}`, now, false},
		{"expired", any, "bookFlight", `{}`, now.Add(time.Minute), false},
		{"same arguments", same, "bookFlight", `{ "flight" : "VX205" }`, now, true},
		{"other arguments", same, "bookFlight", `{"flight":"VX206"}`, now, false},
	} {
		if got := tc.g.Covers(tc.tool, tc.args, tc.at); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzArgumentsDigest checks that any arguments a model sends are
// digested without panicking, and that a valid JSON value and its
// re-encoding (another layout of the same value) have one digest.
func FuzzArgumentsDigest(f *testing.F) {
	for _, s := range []string{`{"flight":"VX205"}`, `[1,2.50,{"b":null,"a":true}]`, `{`, ``, `"\ud800"`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := records.ArgumentsDigest(s)
		if len(d) != 64 {
			t.Fatalf("digest %q is not 64 hex digits", d)
		}
		var v any
		if !utf8.ValidString(s) || json.Unmarshal([]byte(s), &v) != nil || repeatsKey(s) {
			return
		}
		if _, err := json.MarshalIndent(v, "", "  "); err != nil {
			return
		}
		// Re-encoding through float64 may change numbers; compare only
		// values without any.
		if hasNumber(v) {
			return
		}
		again, _ := json.MarshalIndent(v, " ", "\t")
		if records.ArgumentsDigest(string(again)) != d {
			t.Errorf("%q and its re-encoding %q have different digests", s, again)
		}
	})
}

// repeatsKey reports whether an object of the JSON value s repeats a key.
func repeatsKey(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('['):
			for dec.More() {
				if walk() {
					return true
				}
			}
			dec.Token()
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				if seen[k.(string)] {
					return true
				}
				seen[k.(string)] = true
				if walk() {
					return true
				}
			}
			dec.Token()
		}
		return false
	}
	return walk()
}

func hasNumber(v any) bool {
	switch x := v.(type) {
	case float64:
		return true
	case []any:
		for _, e := range x {
			if hasNumber(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasNumber(e) {
				return true
			}
		}
	}
	return false
}
