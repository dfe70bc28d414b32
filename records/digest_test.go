package records_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/records"
)

func TestArgumentsDigest(t *testing.T) {
	same := [][2]string{
		{`{"flight":"VX205","seat":"12A"}`, `{ "seat" : "12A",
			"flight": "VX205" }`},
		{`{"a":{"y":1,"x":[1,2]}}`, `{"a":{"x":[1, 2],"y":1}}`},
		{`"<&>"`, `"\u003c\u0026\u003e"`},
		{`{"n":1}`, `{"n":1.0}`}, // RFC 8785: numbers as IEEE 754 values
		{`{"n":100}`, `{"n":1e2}`},
	}
	for _, p := range same {
		if records.ArgumentsDigest(p[0]) != records.ArgumentsDigest(p[1]) {
			t.Errorf("digests of %s and %s differ, want equal", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`{"flight":"VX205"}`, `{"flight":"VX206"}`},
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

// TestArgumentsDigestVectors pins the stored form (sha256sum of the
// canonical text).
func TestArgumentsDigestVectors(t *testing.T) {
	for args, want := range map[string]string{
		`{ "flight" : "VX205" }`:   "sha256:492a3f94503c9c6ca1e372bf32dd4335e8081475405b8b14798f93e71b0abc9d",
		`{"n":1.0,"m":1e2,"k":-0}`: "sha256:cd6aeaf7795e3cff9e2758186ed5552a960ed5bc0ce189d65115dfe1f8ea5b29",
	} {
		if got := records.ArgumentsDigest(args); got != want {
			t.Errorf("ArgumentsDigest(%s) = %s, want %s", args, got, want)
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
		{"a digest of the old form", &records.Grant{Tool: "bookFlight", ExpiresAt: now.Add(time.Minute),
			ArgumentsDigest: strings.TrimPrefix(records.ArgumentsDigest(`{"flight":"VX205"}`), "sha256:")}, "bookFlight", `{"flight":"VX205"}`, now, false},
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
		if hex, ok := strings.CutPrefix(d, "sha256:"); !ok || len(hex) != 64 {
			t.Fatalf("digest %q is not sha256: and 64 hex digits", d)
		}
		if d != audit.Digest([]byte(s)) {
			t.Fatalf("digest %q is not the audit log's %q", d, audit.Digest([]byte(s)))
		}
		var v any
		// Only JSON RFC 8785 takes (no lone surrogates either).
		if !utf8.ValidString(s) || !jsontext.Value(s).IsValid() || json.Unmarshal([]byte(s), &v) != nil || repeatsKey(s) {
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
