package privacy

import (
	"context"
	"regexp"
)

// Recognizer finds values of one or more entity types in a text.
//
// Recognize appends its findings in text to dst and returns the extended
// slice. Findings may overlap and come in any order; the [Scanner] merges
// them. Offsets are byte offsets into text. A recognizer that calls a
// remote service returns an error when it fails; built-in recognizers never
// fail. Implementations must be safe for concurrent use.
type Recognizer interface {
	Recognize(ctx context.Context, text string, dst []Finding) ([]Finding, error)
}

// Rule is a custom recognizer built from a Go regular expression (RE2
// syntax: matching is linear in the text, there is no backtracking).
// Every leftmost non-overlapping match of Pattern for which Validate
// returns true is a finding of type Type. A Rule must not be changed once
// in use.
type Rule struct {
	// Type is the type of the findings; "" means [Generic].
	Type EntityType
	// Pattern is the expression; it must not be nil.
	Pattern *regexp.Regexp
	// Score is the findings' score; 0 means 0.8.
	Score float64
	// Validate, when not nil, is called with each match and rejects it by
	// returning false (a checksum, a lookup).
	Validate func(match string) bool
}

// Recognize implements [Recognizer].
func (r *Rule) Recognize(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	t := r.Type
	if t == "" {
		t = Generic
	}
	score := r.Score
	if score == 0 {
		score = 0.8
	}
	for _, m := range r.Pattern.FindAllStringIndex(text, -1) {
		if m[0] == m[1] {
			continue
		}
		if r.Validate != nil && !r.Validate(text[m[0]:m[1]]) {
			continue
		}
		dst = append(dst, Finding{Start: m[0], End: m[1], Type: t, Score: score})
	}
	return dst, nil
}

// builtin is a built-in recognizer: a candidate finder called only at the
// bytes of its trigger set. The [Scanner] runs all built-ins it holds in a
// single pass over the text.
type builtin struct {
	name     string
	types    []EntityType
	triggers string
	// find is called at a position i where text[i] is a trigger byte and
	// i is at or past the position it returned last time. It appends its
	// findings and returns the position from which it wants to be called
	// again (> i). Its work must be bounded by a constant plus the bytes it
	// skips, so that a scan stays linear.
	find func(text string, i int, dst []Finding) ([]Finding, int)
}

// Recognize implements [Recognizer] for a built-in used on its own.
func (b *builtin) Recognize(_ context.Context, text string, dst []Finding) ([]Finding, error) {
	var tab [256]bool
	for i := 0; i < len(b.triggers); i++ {
		tab[b.triggers[i]] = true
	}
	next := 0
	for i := 0; i < len(text); i++ {
		if tab[text[i]] && i >= next {
			dst, next = b.find(text, i, dst)
		}
	}
	return dst, nil
}

const digitBytes = "0123456789"

var builtins = []*builtin{
	{name: "email", types: []EntityType{EmailAddress}, triggers: "@", find: findEmail},
	{name: "url", types: []EntityType{URL}, triggers: ":", find: findURL},
	{name: "domain", types: []EntityType{DomainName}, triggers: ".", find: findDomain},
	{name: "phone", types: []EntityType{PhoneNumber}, triggers: digitBytes, find: findPhone},
	{name: "credit_card", types: []EntityType{CreditCard}, triggers: digitBytes, find: findCard},
	{name: "us_ssn", types: []EntityType{USSSN}, triggers: digitBytes, find: findSSN},
	{name: "iban", types: []EntityType{IBANCode}, triggers: digitBytes, find: findIBAN},
	{name: "ipv4", types: []EntityType{IPAddress}, triggers: digitBytes, find: findIPv4},
	{name: "ipv6_mac", types: []EntityType{IPAddress, MACAddress}, triggers: ":-", find: findColon},
	{name: "crypto", types: []EntityType{Crypto}, triggers: digitBytes, find: findCrypto},
	{name: "secret", types: []EntityType{Secret}, triggers: "AJ_-", find: findSecret},
	{name: "credential", types: []EntityType{Secret}, triggers: ":=-._", find: findCredential},
}

// Builtins returns the built-in recognizers that find at least one of the
// given types, or all of them when no type is given: the pattern
// recognizers, which a [Scanner] fuses into one pass, and the embedded
// recognizer of names, places, organisations, addresses, dates, ages and
// titles ([Embedded]), limited to the given types.
func Builtins(types ...EntityType) []Recognizer {
	var out []Recognizer
	for _, b := range builtins {
		if len(types) == 0 || anyOf(b.types, types) {
			out = append(out, b)
		}
	}
	if len(types) == 0 {
		return append(out, Embedded())
	}
	if anyOf(embeddedTypes, types) {
		out = append(out, Embedded(types...))
	}
	return out
}

func anyOf(a, b []EntityType) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// Byte classes.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }
func isHex(c byte) bool   { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// wordChar reports whether c continues a word: an ASCII letter or digit,
// '_' or a byte of a multi-byte UTF-8 sequence (a letter of another script).
func wordChar(c byte) bool { return isAlnum(c) || c == '_' || c >= 0x80 }

// boundaryBefore reports whether a value may start at i: the byte before is
// not part of a word nor a number ("12.", "3-").
func boundaryBefore(text string, i int) bool {
	if i == 0 {
		return true
	}
	c := text[i-1]
	if wordChar(c) {
		return false
	}
	if (c == '.' || c == '-' || c == '/' || c == ',') && i >= 2 && isDigit(text[i-2]) {
		return false
	}
	return true
}

// boundaryAfter reports whether a value may end at e: the byte at e does
// not continue a word or a number.
func boundaryAfter(text string, e int) bool {
	if e >= len(text) {
		return true
	}
	c := text[e]
	if wordChar(c) {
		return false
	}
	if (c == '.' || c == '-' || c == '/' || c == ',') && e+1 < len(text) && isDigit(text[e+1]) {
		return false
	}
	return true
}

// contextWindow is how many bytes before a value are searched for context
// words.
const contextWindow = 40

// hasContext reports whether one of words (lower case ASCII) occurs in
// the contextWindow bytes before start, case-insensitively, as a whole
// word.
func hasContext(text string, start int, words []string) bool {
	lo := max(0, start-contextWindow)
	for j := lo; j < start; j++ {
		c := lower(text[j])
		if c < 'a' || c > 'z' || j > lo && isAlpha(text[j-1]) {
			continue
		}
		for _, w := range words {
			if w[0] != c || j+len(w) > start {
				continue
			}
			k := 1
			for k < len(w) && lower(text[j+k]) == w[k] {
				k++
			}
			// Whole words only: "offices" is not "office".
			if k == len(w) && (j+k == len(text) || !isAlpha(text[j+k])) {
				return true
			}
		}
	}
	return false
}
