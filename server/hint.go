package server

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate"
)

// Edited arguments that a tool's input schema refuses are answered 422
// "invalid_decisions" with problem "invalid_arguments" and the
// validator's words in the message. For the people who edit the
// arguments in the inbox, the body also says which field is wrong
// ("field", a JSON pointer into the arguments; "" for the object itself)
// and, in a sentence, what is expected ("hint"). The hint is derived from
// the validator's error; an error of a kind it does not know gets no hint.

// The validator's (github.com/google/jsonschema-go) errors, as
// "validating /properties/NAME: KEYWORD: DETAIL" (nested for objects in
// objects), with the kinds of detail the hints explain.
var (
	schemaAtPattern       = regexp.MustCompile(`validating (/properties/[^:]*): `)
	schemaTypePattern     = regexp.MustCompile(`type: .* has type "([a-z]+)", want "([a-z]+)"`)
	schemaTypesPattern    = regexp.MustCompile(`type: .* has type "([a-z]+)", want one of "([a-z", ]+)"`)
	schemaRequiredPattern = regexp.MustCompile(`required: missing properties: \[([^\]]*)\]`)
	schemaExtraPattern    = regexp.MustCompile(`unexpected additional properties \[([^\]]*)\]`)
	schemaEnumPattern     = regexp.MustCompile(`enum: .* does not equal any of: \[(.*)\]$`)
)

// jsonTypeWords names the JSON Schema types for people.
var jsonTypeWords = map[string]string{
	"string":  "text (a string in quotes)",
	"integer": "a whole number",
	"number":  "a number",
	"boolean": "true or false",
	"object":  "an object { … }",
	"array":   "a list [ … ]",
	"null":    "null",
}

func typeWords(t string) string {
	if w, ok := jsonTypeWords[t]; ok {
		return w
	}
	return t
}

// argumentsHint returns the field and the hint for de (see above), or ""
// and "" when it has none.
func argumentsHint(de *toolgate.DecisionError) (field, hint string) {
	if de == nil || de.Problem != toolgate.ProblemInvalidArguments || de.Tool == "" {
		return "", ""
	}
	return schemaHint(de.Detail)
}

// schemaHint explains a schema validation error of the validator in
// words; "", "" when it cannot.
func schemaHint(detail string) (field, hint string) {
	// The innermost location is the field: a schema path such as
	// /properties/trip/properties/seats, or /properties/tags/items for
	// the items of a list.
	items := false
	for _, m := range schemaAtPattern.FindAllStringSubmatch(detail, -1) {
		path := m[1]
		path, items = strings.CutSuffix(path, "/items")
		field = strings.ReplaceAll(path, "/properties/", "/")
	}
	name := strings.TrimPrefix(field, "/")
	where := "The arguments"
	switch {
	case name != "" && items:
		where = fmt.Sprintf("Each item of the field %q", name)
	case name != "":
		where = fmt.Sprintf("The field %q", name)
	}
	switch {
	case schemaTypePattern.MatchString(detail):
		m := schemaTypePattern.FindStringSubmatch(detail)
		return field, fmt.Sprintf("%s must be %s, not %s.", where, typeWords(m[2]), typeWords(m[1]))
	case schemaTypesPattern.MatchString(detail):
		m := schemaTypesPattern.FindStringSubmatch(detail)
		var want []string
		for _, t := range strings.Split(m[2], ",") {
			want = append(want, typeWords(strings.Trim(t, ` "`)))
		}
		return field, fmt.Sprintf("%s must be %s, not %s.", where, strings.Join(want, " or "), typeWords(m[1]))
	case schemaRequiredPattern.MatchString(detail):
		m := schemaRequiredPattern.FindStringSubmatch(detail)
		names := strings.Fields(strings.ReplaceAll(m[1], ",", " "))
		inner := ""
		if name != "" {
			inner = fmt.Sprintf(" in %q", name)
		}
		if len(names) == 1 {
			return field + "/" + strings.Trim(names[0], `"`), fmt.Sprintf("The field %s is required%s and missing.", names[0], inner)
		}
		return field, fmt.Sprintf("The fields %s are required%s and missing.", strings.Join(names, ", "), inner)
	case schemaExtraPattern.MatchString(detail):
		m := schemaExtraPattern.FindStringSubmatch(detail)
		names := strings.Fields(strings.ReplaceAll(m[1], ",", " "))
		if len(names) == 1 {
			return field + "/" + strings.Trim(names[0], `"`), fmt.Sprintf("The tool takes no field %s: remove it.", names[0])
		}
		return field, fmt.Sprintf("The tool takes no fields %s: remove them.", strings.Join(names, ", "))
	case schemaEnumPattern.MatchString(detail):
		m := schemaEnumPattern.FindStringSubmatch(detail)
		return field, fmt.Sprintf("%s must be one of: %s.", where, strings.Join(strings.Fields(m[1]), ", "))
	}
	return "", ""
}
