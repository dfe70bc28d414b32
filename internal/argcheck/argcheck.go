// Package argcheck checks tool arguments against a JSON schema that is
// compiled once per tool.
//
// A [Validator] has two paths that accept and reject the same documents.
// The fast path walks the argument bytes once, checking the syntax and the
// schema together, without building any value; it covers the schemas that
// jsonschema.For infers for Go types and the common keywords written by
// hand (type, enum and const of strings, the number and string bounds,
// pattern, properties, required, additionalProperties, items and the item
// bounds). The fallback path is jsonschema-go's interpreter over the
// document decoded into map[string]any; it is taken for schemas that use
// other keywords and for the few documents whose answer the fast path
// cannot give without building values (an escaped or invalid UTF-8 string
// that a string keyword must read, a repeated member name, a number out of
// float64's range, nesting deeper than 1,000).
//
// A rejection is an [*Error] naming the failing value by its JSON pointer.
// Both paths write the same message, jsonschema-go's.
//
//	v := argcheck.Compile(schema, resolved)
//	if err := v.Validate([]byte(`{"flight":"VX205"}`)); err != nil {
//		var e *argcheck.Error
//		if errors.As(err, &e) {
//			fmt.Println(e.Pointer, e.Keyword)
//		}
//	}
package argcheck

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator checks documents against one schema. It is immutable and safe
// for concurrent use.
type Validator struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	root     *node // nil: the schema needs the fallback path
}

// Error is a document's violation of the schema.
type Error struct {
	// Pointer is the JSON pointer (RFC 6901) of the failing value: the
	// value itself for keywords about one value (type, enum, minimum, …),
	// the object for required and additionalProperties, the array for
	// minItems and maxItems. "" is the whole document. When the value
	// cannot be named (a failure under a $ref), it is its nearest
	// container that can.
	Pointer string
	// Keyword is the schema keyword that failed ("type", "required",
	// "additionalProperties", …); "" when jsonschema-go reports none.
	Keyword string
	msg     string
}

func (e *Error) Error() string { return e.msg }

// Compile returns the validator of schema, whose resolution by
// jsonschema-go is resolved. Compile does not fail: a schema the fast path
// does not cover is checked by the fallback path.
func Compile(schema *jsonschema.Schema, resolved *jsonschema.Resolved) *Validator {
	v := &Validator{schema: schema, resolved: resolved}
	if schema != nil && schema.Schema == "" {
		c := compiler{}
		if n := c.compile(schema, "root"); c.ok {
			v.root = n
		}
	}
	return v
}

// Fast reports whether the schema is covered by the fast path.
func (v *Validator) Fast() bool { return v.root != nil }

// Validate checks data, a JSON document: nil when it conforms, an [*Error]
// when it breaks the schema, and the decoder's error when it is not JSON.
func (v *Validator) Validate(data []byte) error {
	if v.root != nil {
		s := scanner{data: data}
		f := s.document(v.root, target{})
		if !s.undecided {
			if f == nil {
				return nil
			}
			return f.error(data)
		}
	}
	return v.Fallback(data)
}

// Fallback checks data with jsonschema-go alone, like [Validator.Validate].
// Tests compare the two paths with it.
func (v *Validator) Fallback(data []byte) error {
	var instance any
	if err := json.Unmarshal(data, &instance); err != nil {
		return err
	}
	err := v.resolved.Validate(instance)
	if err == nil {
		return nil
	}
	ptr, kw := locate(v.schema, instance, err)
	return &Error{Pointer: ptr, Keyword: kw, msg: err.Error()}
}

// Type bits of a node.
const (
	tNull = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber // any number; "number" in a schema
	tInteger
	tString
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber | tInteger, "integer": tInteger, "string": tString,
}

// node is a compiled schema.
type node struct {
	s     *jsonschema.Schema // for the messages
	label string             // how jsonschema-go names the schema in messages
	types uint8              // 0: any type
	// strings
	enum       []string // nil: no enum
	constStr   *string
	minLen     int // -1: none
	maxLen     int
	pattern    *regexp.Regexp
	strContent bool // a keyword reads the string's content
	// numbers
	num bool // a number keyword is set
	// arrays
	items              *node // nil: any item
	minItems, maxItems int   // -1: none
	// objects
	props     []prop
	required  []int // indexes into props
	addlFalse bool  // additionalProperties: false
	addl      *node // additionalProperties' schema; nil: any
}

type prop struct {
	name     string
	n        *node // nil: any value
	declared bool  // in properties (a required name that is not is checked by additionalProperties)
}

type compiler struct{ ok bool }

// unsupported reports whether s sets a field that the fast path neither
// implements nor may ignore (annotations do not take part in validation).
func unsupported(s *jsonschema.Schema) bool {
	c := *s
	// annotations
	c.ID, c.Comment, c.Title, c.Description, c.Default, c.Deprecated, c.ReadOnly, c.WriteOnly, c.Examples = "", "", "", "", nil, false, false, false, nil
	c.Format, c.ContentEncoding, c.ContentMediaType, c.Extra, c.PropertyOrder = "", "", "", nil, nil
	// implemented
	c.Type, c.Types, c.Enum, c.Const = "", nil, nil, nil
	c.MultipleOf, c.Minimum, c.Maximum, c.ExclusiveMinimum, c.ExclusiveMaximum = nil, nil, nil, nil, nil
	c.MinLength, c.MaxLength, c.Pattern = nil, nil, ""
	c.Items, c.MinItems, c.MaxItems = nil, nil, nil
	c.Required, c.Properties, c.AdditionalProperties = nil, nil, nil
	return !reflect.ValueOf(c).IsZero()
}

func (c *compiler) compile(s *jsonschema.Schema, label string) *node {
	c.ok = true
	return c.node(s, label)
}

func (c *compiler) fail() *node { c.ok = false; return nil }

func (c *compiler) node(s *jsonschema.Schema, label string) *node {
	if !c.ok {
		return nil
	}
	if s == nil || unsupported(s) {
		return c.fail()
	}
	if s.ID != "" {
		if label != "root" {
			return c.fail() // an $id below the root starts another document
		}
		label = s.ID
	}
	n := &node{s: s, label: label, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	switch {
	case s.Type != "":
		b, ok := typeBits[s.Type]
		if !ok {
			return c.fail()
		}
		n.types = b
	case s.Types != nil:
		if len(s.Types) == 0 {
			return c.fail()
		}
		for _, t := range s.Types {
			b, ok := typeBits[t]
			if !ok {
				return c.fail()
			}
			n.types |= b
		}
	}
	if s.Enum != nil {
		n.enum = make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			str, ok := e.(string)
			if !ok {
				return c.fail()
			}
			n.enum = append(n.enum, str)
		}
		n.strContent = true
	}
	if s.Const != nil {
		str, ok := (*s.Const).(string)
		if !ok {
			return c.fail()
		}
		n.constStr = &str
		n.strContent = true
	}
	n.num = s.MultipleOf != nil || s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil
	if s.MinLength != nil {
		n.minLen = *s.MinLength
		n.strContent = true
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
		n.strContent = true
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return c.fail()
		}
		n.pattern = re
		n.strContent = true
	}
	if s.Items != nil {
		n.items = c.sub(s.Items, label, "/items")
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n.props = append(n.props, prop{name: name, n: c.sub(s.Properties[name], label, "/properties/"+name), declared: true})
	}
	for _, r := range s.Required {
		i := slices.IndexFunc(n.props, func(p prop) bool { return p.name == r })
		if i < 0 {
			n.props = append(n.props, prop{name: r})
			i = len(n.props) - 1
		}
		if !slices.Contains(n.required, i) {
			n.required = append(n.required, i)
		}
	}
	if len(n.props) > 64 {
		return c.fail()
	}
	if a := s.AdditionalProperties; a != nil {
		switch {
		case a.Not != nil && reflect.ValueOf(*a.Not).IsZero():
			n.addlFalse = true
		case reflect.ValueOf(*a).IsZero():
			// true: any value
		default:
			n.addl = c.sub(a, label, "/additionalProperties")
		}
	}
	if !c.ok {
		return nil
	}
	return n
}

// sub compiles a subschema; an empty one (true) accepts anything and is
// compiled to nil.
func (c *compiler) sub(s *jsonschema.Schema, parent, step string) *node {
	if s == nil {
		return c.fail()
	}
	if s.ID == "" && reflect.ValueOf(*s).IsZero() {
		return nil
	}
	if parent == "root" {
		parent = ""
	}
	return c.node(s, parent+step)
}

// failure is a violation found by the fast path. Its fields are filled as
// it is returned up through the values that contain the failing one.
type failure struct {
	n          *node    // the schema that failed
	keyword    string   // the keyword that failed
	start, end int      // the failing value's bytes
	labels     []string // the labels of the schemas entered, innermost first
	segs       []string // the pointer's segments, innermost first
	length     int      // items of an array, for minItems and maxItems
}

// undecidedFailure unwinds a scan that handed over to the fallback path.
var undecidedFailure = &failure{}

const maxDepth = 1000

// plain marks the bytes that stand for themselves in a string: printable
// ASCII but the quote and the backslash.
var plain = func() (p [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		p[c] = c != '"' && c != '\\'
	}
	return p
}()

type scanner struct {
	data      []byte
	pos       int
	depth     int
	undecided bool
	// decoding
	str      string // data as a string, made when the first string is stored
	redecode bool   // a value the plan does not store: decode with encoding/json
}

func (s *scanner) giveUp() *failure {
	s.undecided = true
	return undecidedFailure
}

func (s *scanner) document(n *node, t target) *failure {
	f := s.value(n, t)
	if s.undecided {
		return f
	}
	s.space()
	if s.pos != len(s.data) {
		return s.giveUp() // the decoder reports what follows the value
	}
	return f
}

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value checks the value at s.pos against n (nil: any value) and moves past
// it. A nil result means the value conforms; s.undecided means the answer
// must come from the fallback path.
//
// When t has a plan, the value is also stored at t.ptr, or s.redecode set
// when the plan cannot store it.
func (s *scanner) value(n *node, t target) *failure {
	s.space()
	if s.pos >= len(s.data) {
		return s.giveUp()
	}
	start := s.pos
	var kind uint8
	switch c := s.data[s.pos]; {
	case c == '{':
		if s.depth++; s.depth > maxDepth {
			return s.giveUp()
		}
		f := s.object(n, t, start)
		s.depth--
		return f
	case c == '[':
		if t.p != nil {
			s.redecode = true
		}
		if s.depth++; s.depth > maxDepth {
			return s.giveUp()
		}
		f := s.array(n, start)
		s.depth--
		return f
	case c == '"':
		esc, ok := s.string()
		if !ok {
			return s.giveUp()
		}
		if t.p != nil {
			s.storeString(t, start, esc)
		}
		if n == nil {
			return nil
		}
		if n.types != 0 && n.types&tString == 0 {
			return s.fail(n, "type", start)
		}
		return s.checkString(n, start, esc)
	case c == 't':
		if !s.literal("true") {
			return s.giveUp()
		}
		s.storeBool(t, true)
		kind = tBoolean
	case c == 'f':
		if !s.literal("false") {
			return s.giveUp()
		}
		s.storeBool(t, false)
		kind = tBoolean
	case c == 'n':
		if !s.literal("null") {
			return s.giveUp()
		}
		kind = tNull
	case c == '-' || '0' <= c && c <= '9':
		if !s.number() {
			return s.giveUp()
		}
		f, ok := s.float(start)
		if !ok {
			return s.giveUp() // out of range: the decoder rejects it
		}
		if t.p != nil {
			s.storeNumber(t, start, f)
		}
		if n == nil {
			return nil
		}
		kind = tNumber
		if _, frac := math.Modf(f); frac == 0 {
			kind = tInteger
		}
		if n.types != 0 && n.types&kind == 0 {
			return s.fail(n, "type", start)
		}
		if n.enum != nil {
			return s.fail(n, "enum", start)
		}
		if n.constStr != nil {
			return s.fail(n, "const", start)
		}
		return s.checkNumber(n, f, start)
	default:
		return s.giveUp()
	}
	if n == nil {
		return nil
	}
	if n.types != 0 && n.types&kind == 0 {
		return s.fail(n, "type", start)
	}
	if n.enum != nil {
		return s.fail(n, "enum", start)
	}
	if n.constStr != nil {
		return s.fail(n, "const", start)
	}
	return nil
}

func (s *scanner) fail(n *node, keyword string, start int) *failure {
	return &failure{n: n, keyword: keyword, start: start, end: s.pos, labels: []string{n.label}}
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return false
	}
	s.pos += len(lit)
	return true
}

// float returns the value of the number from start to s.pos, as
// strconv.ParseFloat gives it; false when it is out of range.
func (s *scanner) float(start int) (float64, bool) {
	lit := s.data[start:s.pos]
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) <= 15 {
		// Up to 15 digits an integer is exact in a float64.
		v := int64(0)
		for _, c := range digits {
			if c < '0' || c > '9' {
				v = -1
				break
			}
			v = v*10 + int64(c-'0')
		}
		if v >= 0 {
			if lit[0] == '-' {
				return -float64(v), true
			}
			return float64(v), true
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	return f, err == nil
}

// number moves past a number of JSON's grammar.
func (s *scanner) number() bool {
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	s.pos = i
	return true
}

// string moves past a string; esc reports whether its content differs from
// its bytes once decoded (an escape, or invalid UTF-8).
func (s *scanner) string() (esc, ok bool) {
	d := s.data
	i := s.pos + 1
	high := false
	for i < len(d) {
		c := d[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			if high && !utf8.Valid(d[s.pos+1:i]) {
				esc = true
			}
			s.pos = i + 1
			return esc, true
		case c == '\\':
			esc = true
			i++
			if i >= len(d) {
				return false, false
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(d)-i < 5 {
					return false, false
				}
				for _, h := range d[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false, false
					}
				}
				i += 5
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		default:
			if c >= utf8.RuneSelf {
				high = true
			}
			i++
		}
	}
	return false, false
}

func (s *scanner) checkString(n *node, start int, esc bool) *failure {
	if !n.strContent {
		return nil
	}
	if esc {
		return s.giveUp()
	}
	str := s.data[start+1 : s.pos-1]
	if n.enum != nil && !slices.Contains(n.enum, unsafe.String(unsafe.SliceData(str), len(str))) {
		return s.fail(n, "enum", start)
	}
	if n.constStr != nil && string(str) != *n.constStr {
		return s.fail(n, "const", start)
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		count := utf8.RuneCount(str)
		if n.minLen >= 0 && count < n.minLen {
			return s.fail(n, "minLength", start)
		}
		if n.maxLen >= 0 && count > n.maxLen {
			return s.fail(n, "maxLength", start)
		}
	}
	if n.pattern != nil && !n.pattern.Match(str) {
		return s.fail(n, "pattern", start)
	}
	return nil
}

func (s *scanner) checkNumber(n *node, f float64, start int) *failure {
	if !n.num {
		return nil
	}
	sc := n.s
	if sc.MultipleOf != nil {
		if _, frac := math.Modf(f / *sc.MultipleOf); frac != 0 {
			return s.fail(n, "multipleOf", start)
		}
	}
	switch {
	case sc.Minimum != nil && f < *sc.Minimum:
		return s.fail(n, "minimum", start)
	case sc.Maximum != nil && f > *sc.Maximum:
		return s.fail(n, "maximum", start)
	case sc.ExclusiveMinimum != nil && f <= *sc.ExclusiveMinimum:
		return s.fail(n, "exclusiveMinimum", start)
	case sc.ExclusiveMaximum != nil && f >= *sc.ExclusiveMaximum:
		return s.fail(n, "exclusiveMaximum", start)
	}
	return nil
}

func (s *scanner) array(n *node, start int) *failure {
	if n != nil && n.types != 0 && n.types&tArray == 0 {
		if f := s.skip(); f != nil {
			return f
		}
		return s.fail(n, "type", start)
	}
	if n != nil && (n.enum != nil || n.constStr != nil) {
		if f := s.skip(); f != nil {
			return f
		}
		return s.fail(n, "enum", start).constFirst(n)
	}
	var items *node
	if n != nil {
		items = n.items
	}
	s.pos++ // [
	s.space()
	var first *failure
	count := 0
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
	} else {
		for {
			var f *failure
			if first == nil {
				f = s.value(items, target{})
			} else {
				f = s.value(nil, target{})
			}
			if s.undecided {
				return f
			}
			if f != nil {
				f.labels = append(f.labels, n.label)
				f.segs = append(f.segs, strconv.Itoa(count))
				first = f
			}
			count++
			s.space()
			if s.pos >= len(s.data) {
				return s.giveUp()
			}
			if s.data[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.data[s.pos] != ']' {
				return s.giveUp()
			}
			s.pos++
			break
		}
	}
	if first != nil || n == nil {
		return first
	}
	if n.minItems >= 0 && count < n.minItems {
		f := s.fail(n, "minItems", start)
		f.length = count
		return f
	}
	if n.maxItems >= 0 && count > n.maxItems {
		f := s.fail(n, "maxItems", start)
		f.length = count
		return f
	}
	return nil
}

// constFirst turns an enum failure into a const failure when the schema
// has no enum (jsonschema-go checks enum before const).
func (f *failure) constFirst(n *node) *failure {
	if n.enum == nil {
		f.keyword = "const"
	}
	return f
}

// skip moves past a value of any kind.
func (s *scanner) skip() *failure {
	f := s.value(nil, target{})
	if s.undecided {
		return f
	}
	return nil
}

func (s *scanner) object(n *node, t target, start int) *failure {
	if t.p != nil && t.p.kind != reflect.Struct {
		s.redecode = true
		t = target{}
	}
	if n != nil && n.types != 0 && n.types&tObject == 0 {
		if f := s.skip(); f != nil {
			return f
		}
		return s.fail(n, "type", start)
	}
	if n != nil && (n.enum != nil || n.constStr != nil) {
		if f := s.skip(); f != nil {
			return f
		}
		return s.fail(n, "enum", start).constFirst(n)
	}
	s.pos++ // {
	s.space()
	var first *failure
	var seen uint64
	extra := false
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
	} else {
		for {
			s.space()
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return s.giveUp()
			}
			ks := s.pos
			esc, ok := s.string()
			if !ok || esc && (n != nil || t.p != nil) {
				return s.giveUp() // an escaped name is compared decoded
			}
			key := s.data[ks+1 : s.pos-1]
			s.space()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return s.giveUp()
			}
			s.pos++
			var sub *node
			known, check := false, n != nil && first == nil
			if n != nil {
				for i := range n.props {
					if p := &n.props[i]; p.name == string(key) {
						if seen&(1<<i) != 0 {
							return s.giveUp() // a repeated name: the last one counts
						}
						seen |= 1 << i
						known = p.declared
						sub = p.n
						break
					}
				}
				if !known {
					switch {
					case n.addlFalse:
						extra = true
						check = false
					case n.addl != nil:
						sub = n.addl
					}
				}
			}
			var ft target
			if t.p != nil {
				ft = s.field(t, key)
			}
			var f *failure
			if check {
				f = s.value(sub, ft)
			} else {
				f = s.value(nil, ft)
			}
			if s.undecided {
				return f
			}
			if f != nil {
				if !known {
					// Names outside properties may repeat unnoticed:
					// let the fallback path decide.
					return s.giveUp()
				}
				f.labels = append(f.labels, n.label)
				f.segs = append(f.segs, string(key))
				first = f
			}
			s.space()
			if s.pos >= len(s.data) {
				return s.giveUp()
			}
			if s.data[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.data[s.pos] != '}' {
				return s.giveUp()
			}
			s.pos++
			break
		}
	}
	if first != nil || n == nil {
		return first
	}
	if extra {
		return s.fail(n, "additionalProperties", start)
	}
	for _, i := range n.required {
		if seen&(1<<i) == 0 {
			return s.fail(n, "required", start)
		}
	}
	return nil
}

// error builds the error of a failure, with jsonschema-go's message.
func (f *failure) error(data []byte) *Error {
	var b strings.Builder
	for i := len(f.labels) - 1; i >= 0; i-- {
		b.WriteString("validating ")
		b.WriteString(f.labels[i])
		b.WriteString(": ")
	}
	b.WriteString(f.detail(data[f.start:f.end]))
	var p strings.Builder
	for i := len(f.segs) - 1; i >= 0; i-- {
		p.WriteByte('/')
		p.WriteString(escapePointer(f.segs[i]))
	}
	return &Error{Pointer: p.String(), Keyword: f.keyword, msg: b.String()}
}

// detail is jsonschema-go's text for the failed keyword.
func (f *failure) detail(value []byte) string {
	var v any
	_ = json.Unmarshal(value, &v) // the fast path checked the syntax
	rv := reflect.ValueOf(v)
	s := f.n.s
	switch f.keyword {
	case "type":
		got := jsonTypeOf(v)
		if s.Type != "" {
			return fmt.Sprintf("type: %v has type %q, want %q", rv, got, s.Type)
		}
		return fmt.Sprintf("type: %v has type %q, want one of %q", rv, got, strings.Join(s.Types, ", "))
	case "enum":
		return fmt.Sprintf("enum: %v does not equal any of: %v", rv, s.Enum)
	case "const":
		return fmt.Sprintf("const: %v does not equal %v", rv, *s.Const)
	case "multipleOf":
		return fmt.Sprintf("multipleOf: %s is not a multiple of %f", rat(v), *s.MultipleOf)
	case "minimum":
		return fmt.Sprintf("minimum: %s is less than %f", rat(v), *s.Minimum)
	case "maximum":
		return fmt.Sprintf("maximum: %s is greater than %f", rat(v), *s.Maximum)
	case "exclusiveMinimum":
		return fmt.Sprintf("exclusiveMinimum: %s is less than or equal to %f", rat(v), *s.ExclusiveMinimum)
	case "exclusiveMaximum":
		return fmt.Sprintf("exclusiveMaximum: %s is greater than or equal to %f", rat(v), *s.ExclusiveMaximum)
	case "minLength":
		str := v.(string)
		return fmt.Sprintf("minLength: %q contains %d Unicode code points, fewer than %d", str, utf8.RuneCountInString(str), *s.MinLength)
	case "maxLength":
		str := v.(string)
		return fmt.Sprintf("maxLength: %q contains %d Unicode code points, more than %d", str, utf8.RuneCountInString(str), *s.MaxLength)
	case "pattern":
		return fmt.Sprintf("pattern: %q does not match regular expression %q", v.(string), s.Pattern)
	case "minItems":
		return fmt.Sprintf("minItems: array length %d is less than %d", f.length, *s.MinItems)
	case "maxItems":
		return fmt.Sprintf("maxItems: array length %d is greater than %d", f.length, *s.MaxItems)
	case "additionalProperties":
		var names []string
		for name := range v.(map[string]any) {
			if i := slices.IndexFunc(f.n.props, func(p prop) bool { return p.name == name }); i < 0 || !f.n.props[i].declared {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return fmt.Sprintf("unexpected additional properties %q", names)
	case "required":
		obj := v.(map[string]any)
		var missing []string
		for _, name := range s.Required {
			if _, ok := obj[name]; !ok {
				missing = append(missing, name)
			}
		}
		return fmt.Sprintf("required: missing properties: %q", missing)
	}
	return f.keyword
}

func rat(v any) *big.Rat { return new(big.Rat).SetFloat64(v.(float64)) }

// jsonTypeOf is the JSON type jsonschema-go gives a decoded value.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// Valid reports whether data is a JSON document, as [json.Valid] does, in
// one pass of the fast path's scanner (json.Valid answers what it cannot).
func Valid(data []byte) bool {
	s := scanner{data: data}
	s.document(nil, target{})
	if !s.undecided {
		return true
	}
	return json.Valid(data)
}
