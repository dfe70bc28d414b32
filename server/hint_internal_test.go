package server

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// TestSchemaHint: the validator's errors become the field and a sentence
// saying what is expected; others get no hint.
func TestSchemaHint(t *testing.T) {
	for _, c := range []struct{ detail, field, hint string }{
		{`validating root: validating /properties/flight: type: 5 has type "integer", want "string"`, "/flight",
			`The field "flight" must be text (a string in quotes), not a whole number.`},
		{`validating root: required: missing properties: ["flight"]`, "/flight", `The field "flight" is required and missing.`},
		{`validating root: required: missing properties: ["a", "b"]`, "", `The fields "a", "b" are required and missing.`},
		{`validating root: unexpected additional properties ["x"]`, "/x", `The tool takes no field "x": remove it.`},
		{`validating root: validating /properties/class: enum: first does not equal any of: [economy business]`, "/class",
			`The field "class" must be one of: economy, business.`},
		{`validating root: validating /properties/trip: validating /properties/trip/properties/seats: type: x has type "string", want "integer"`, "/trip/seats",
			`The field "trip/seats" must be a whole number, not text (a string in quotes).`},
		{`validating root: validating /properties/tags: validating /properties/tags/items: type: 1 has type "integer", want "string"`, "/tags",
			`Each item of the field "tags" must be text (a string in quotes), not a whole number.`},
		{`validating root: validating /properties/trip: required: missing properties: ["seats"]`, "/trip/seats",
			`The field "seats" is required in "trip" and missing.`},
		{`validating root: type: [] has type "array", want "object"`, "", `The arguments must be an object { … }, not a list [ … ].`},
		{`validating root: minimum: 0 is less than 1`, "", ""},
		{"", "", ""},
	} {
		field, hint := schemaHint(c.detail)
		if field != c.field || hint != c.hint {
			t.Errorf("schemaHint(%q) = %q, %q; want %q, %q", c.detail, field, hint, c.field, c.hint)
		}
	}
	// Only a schema's refusal of an edit gets a hint.
	de := &toolgate.DecisionError{Problem: toolgate.ProblemInvalidArguments, Key: "k",
		Detail: `validating root: required: missing properties: ["flight"]`}
	if f, h := argumentsHint(de); f != "" || h != "" {
		t.Errorf("a decision error without a tool: %q %q, want no hint", f, h)
	}
	de.Tool = "bookFlight"
	if _, h := argumentsHint(de); h == "" {
		t.Error("a schema refusal got no hint")
	}
	if f, h := argumentsHint(nil); f != "" || h != "" {
		t.Error("nil got a hint")
	}
}

// FuzzSchemaHint: any detail, which may quote the edited arguments, gives
// a hint without panicking, in valid UTF-8 when the detail is.
func FuzzSchemaHint(f *testing.F) {
	f.Add(`validating root: validating /properties/flight: type: 5 has type "integer", want "string"`)
	f.Add(`validating root: required: missing properties: ["flight"]`)
	f.Add(`validating root: unexpected additional properties ["x", "y"]`)
	f.Add(`validating /properties/: enum: a does not equal any of: []`)
	f.Fuzz(func(t *testing.T, detail string) {
		field, hint := schemaHint(detail)
		if utf8.ValidString(detail) && (!utf8.ValidString(field) || !utf8.ValidString(hint)) {
			t.Errorf("schemaHint(%q) = %q, %q: invalid UTF-8", detail, field, hint)
		}
		if hint == "" && field != "" {
			t.Errorf("schemaHint(%q): a field %q without a hint", detail, field)
		}
		if field != "" && !strings.HasPrefix(field, "/") {
			t.Errorf("schemaHint(%q): field %q is not a pointer", detail, field)
		}
	})
}
