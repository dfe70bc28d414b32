package argcheck

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
)

type booking struct {
	Flight string `json:"flight"`
	Seats  int    `json:"seats"`
	Class  string `json:"class"`
}

type passenger struct {
	Name  string            `json:"name"`
	Age   *int              `json:"age,omitempty"`
	Tags  []string          `json:"tags"`
	Notes map[string]string `json:"notes,omitempty"`
	Seat  struct {
		Row    int     `json:"row"`
		Letter string  `json:"letter"`
		Price  float64 `json:"price,omitempty"`
	} `json:"seat"`
}

// handArgs is a Go type for the hand schema, stored by the single pass
// (legs and meta are not fields: they are checked and skipped).
type handArgs struct {
	Code  string `json:"code"`
	Class string `json:"class,omitempty"`
	Kind  string
	Seats int8    `json:"seats"`
	Price float32 `json:"price"`
	Flag  bool    `json:"flag"`
	Any   uint16  `json:"any"`
	Extra int     `json:"-"`
}

// class is a named string type without methods: stored like a string.
type class string

func ptr[T any](v T) *T { return &v }

// handSchema uses every keyword the fast path implements.
func handSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"code":  {Type: "string", MinLength: ptr(2), MaxLength: ptr(6), Pattern: "^[A-Z]{2}[0-9]*$"},
			"class": {Enum: []any{"economy", "business"}},
			"kind":  {Const: ptr[any]("flight")},
			"seats": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(9.0)},
			"price": {Type: "number", ExclusiveMinimum: ptr(0.0), ExclusiveMaximum: ptr(1000.0), MultipleOf: ptr(0.5)},
			"legs": {Types: []string{"null", "array"}, MinItems: ptr(1), MaxItems: ptr(3), Items: &jsonschema.Schema{
				Type:                 "object",
				Required:             []string{"from", "to"},
				Properties:           map[string]*jsonschema.Schema{"from": {Type: "string"}, "to": {Type: "string"}},
				AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			}},
			"meta": {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "integer"}},
			"any":  {},
			"flag": {Type: "boolean"},
		},
		Required:             []string{"code", "seats", "extra~/name"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

type testSchema struct {
	name   string
	schema *jsonschema.Schema
}

func testSchemas(tb testing.TB) []testSchema {
	tb.Helper()
	b, err := jsonschema.For[booking](nil)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := jsonschema.For[passenger](nil)
	if err != nil {
		tb.Fatal(err)
	}
	return []testSchema{{"booking", b}, {"passenger", p}, {"hand", handSchema()}}
}

func compile(tb testing.TB, s *jsonschema.Schema) *Validator {
	tb.Helper()
	r, err := s.Resolve(nil)
	if err != nil {
		tb.Fatal(err)
	}
	v := Compile(s, r)
	if !v.Fast() {
		tb.Fatalf("schema %v: not covered by the fast path", s)
	}
	return v
}

// fastOnly runs the fast path alone; decided is false when it hands over.
func (v *Validator) fastOnly(data []byte) (err error, decided bool) {
	s := scanner{data: data}
	f := s.document(v.root, target{})
	if s.undecided {
		return nil, false
	}
	if f == nil {
		return nil, true
	}
	return f.error(data), true
}

// sameError reports whether two rejections agree: pointer, keyword and
// message (the names of an additionalProperties message in any order).
func sameError(a, b *Error) bool {
	if a.Pointer != b.Pointer || a.Keyword != b.Keyword {
		return false
	}
	if a.Keyword == "additionalProperties" {
		return normalizeNames(a.msg) == normalizeNames(b.msg)
	}
	return a.msg == b.msg
}

// normalizeNames sorts the quoted names of "unexpected additional
// properties [...]" at the end of msg.
func normalizeNames(msg string) string {
	i := strings.LastIndex(msg, "unexpected additional properties [")
	if i < 0 {
		return msg
	}
	rest := strings.TrimSuffix(msg[i+len("unexpected additional properties ["):], "]")
	var names []string
	for rest != "" {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return msg
		}
		names = append(names, q)
		rest = strings.TrimPrefix(rest[len(q):], " ")
	}
	slices.Sort(names)
	return msg[:i] + strings.Join(names, " ")
}

// compare checks that the fast path and the fallback path agree on data.
// It reports whether the fast path decided.
func compare(t *testing.T, v *Validator, data []byte) bool {
	t.Helper()
	fast, decided := v.fastOnly(data)
	if !decided {
		fast = v.Validate(data)
	}
	slow := v.Fallback(data)
	if (fast == nil) != (slow == nil) {
		t.Fatalf("%s: fast path: %v; fallback: %v", data, fast, slow)
	}
	if fast == nil {
		return decided
	}
	var fe, se *Error
	if errors.As(fast, &fe) != errors.As(slow, &se) {
		t.Fatalf("%s: fast path: %v; fallback: %v", data, fast, slow)
	}
	if fe == nil {
		if fast.Error() != slow.Error() {
			t.Fatalf("%s: fast path: %v; fallback: %v", data, fast, slow)
		}
		return decided
	}
	// jsonschema-go visits an object's properties in map order: when
	// several fail, each run may report another. The fast path reports the
	// first in the document; some run of the fallback must report it too.
	for range 500 {
		if sameError(fe, se) {
			return decided
		}
		errors.As(v.Fallback(data), &se)
	}
	t.Fatalf("%s:\nfast path: %q at %q (%s)\nfallback:  %q at %q (%s)", data, fe.msg, fe.Pointer, fe.Keyword, se.msg, se.Pointer, se.Keyword)
	return decided
}

// decodeAgrees checks that Decode gives what encoding/json gives after
// the fallback path's check.
func decodeAgrees[T any](t *testing.T, v *Validator, data []byte) {
	t.Helper()
	d := NewDecoder(v, reflect.TypeFor[T]())
	var got T
	redecode, gerr := d.Decode(data, "", unsafe.Pointer(&got))
	if redecode {
		got = *new(T)
		gerr = json.Unmarshal(data, &got)
	}
	var want T
	werr := v.Fallback(data)
	if werr == nil {
		werr = json.Unmarshal(data, &want)
	}
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: Decode: %v; encoding/json: %v", data, gerr, werr)
	}
	var e *Error
	if gerr != nil && !errors.As(gerr, &e) && gerr.Error() != werr.Error() {
		t.Fatalf("%s: Decode: %v; encoding/json: %v", data, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Decode: %+v; encoding/json: %+v", data, got, want)
	}
}

func decodeAllAgree(t *testing.T, name string, v *Validator, data []byte) {
	switch name {
	case "booking":
		decodeAgrees[booking](t, v, data)
	case "passenger":
		decodeAgrees[passenger](t, v, data)
	case "hand":
		decodeAgrees[handArgs](t, v, data)
		decodeAgrees[map[string]any](t, v, data)
	}
}

func TestPlans(t *testing.T) {
	for _, tt := range []struct {
		typ    reflect.Type
		single bool
	}{
		{reflect.TypeFor[booking](), true},
		{reflect.TypeFor[handArgs](), true},
		{reflect.TypeFor[struct{ A, B struct{ C float64 } }](), true},
		{reflect.TypeFor[passenger](), false},
		{reflect.TypeFor[struct{ booking }](), false},
		{reflect.TypeFor[struct {
			N int `json:",string"`
		}](), false},
		{reflect.TypeFor[struct{ T json.Number }](), false},
		{reflect.TypeFor[struct {
			C class `json:"class"`
		}](), true},
		{reflect.TypeFor[struct{ R json.RawMessage }](), false},
		{reflect.TypeFor[struct{ A, a int }](), true},
		{reflect.TypeFor[struct {
			A int
			B int `json:"a"`
		}](), false},
	} {
		if got := compilePlan(tt.typ, 0) != nil; got != tt.single {
			t.Errorf("%v: single pass %v, want %v", tt.typ, got, tt.single)
		}
	}
}

var documents = map[string][]string{
	"booking": {
		`{"flight":"VX205","seats":2,"class":"economy"}`,
		` { "flight" : "VX205" , "seats" : 2 , "class" : "economy" } `,
		`{"flight":"VX205","seats":2}`,
		`{"flight":"VX205","seats":2.5,"class":"economy"}`,
		`{"flight":"VX205","seats":2.0,"class":"economy"}`,
		`{"flight":"VX205","seats":2e0,"class":"economy"}`,
		`{"flight":5,"seats":"2","class":"economy"}`,
		`{"flight":"VX205","seats":2,"class":"economy","x":1}`,
		`{"flight":"VX205","seats":2,"class":"economy","x":1,"y":[1]}`,
		`{"flight":"VX205","seats":2,"class":"economy","flight":"VX206"}`,
		`{"flight":"VX205","seats":2,"class":null}`,
		`{"flight":"VX\u0032","seats":2,"class":"e"}`,
		`{"fl\u0069ght":"VX205","seats":2,"class":"e"}`,
		`{"flight":"VX205","seats":1e400,"class":"e"}`,
		`{"flight":"VX205","seats":-0,"class":"e"}`,
		`[]`, `"x"`, `null`, `true`, `12`, `{}`,
		`{"flight":"VX205",}`, `{"flight" "x"}`, `{"flight":"VX205"`, `{"flight":"VX205"} x`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`,
		`{"flight":{"a":[1,2,{"b":null}]},"seats":[],"class":false}`,
	},
	"passenger": {
		`{"name":"Ada","tags":["a","b"],"seat":{"row":3,"letter":"C"}}`,
		`{"name":"Ada","tags":null,"seat":{"row":3,"letter":"C","price":12.5}}`,
		`{"name":"Ada","age":null,"tags":[],"seat":{"row":3,"letter":"C"}}`,
		`{"name":"Ada","age":3.5,"tags":[],"seat":{"row":3,"letter":"C"}}`,
		`{"name":"Ada","tags":["a",2],"seat":{"row":3,"letter":"C"}}`,
		`{"name":"Ada","tags":[],"seat":{"row":3}}`,
		`{"name":"Ada","tags":[],"seat":{"row":"3","letter":"C","x":1}}`,
		`{"name":"Ada","tags":[],"seat":{"row":3,"letter":"C"},"notes":{"a":"b","c":1}}`,
		`{"name":"Ada","tags":[],"seat":{"row":3,"letter":"C"},"notes":{"a":1,"a":"b"}}`,
		`{"name":"Ada","tags":"a","seat":[]}`,
		`{"tags":[],"seat":{"row":3,"letter":"C"}}`,
	},
	"hand": {
		`{"code":"VX205","seats":2,"extra~/name":1}`,
		`{"code":"V","seats":2,"extra~/name":1}`,
		`{"code":"VX2050000","seats":2,"extra~/name":1}`,
		`{"code":"vx205","seats":2,"extra~/name":1}`,
		`{"code":"VX205","seats":0,"extra~/name":1}`,
		`{"code":"VX205","seats":10,"extra~/name":1}`,
		`{"code":"VX205","seats":2}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"price":0}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"price":1000}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"price":2.25}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"price":2.5}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"class":"first"}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"class":"business"}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"class":1}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"class":{"a":1}}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"kind":"train"}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"kind":["flight"]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"legs":[]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{"from":"A","to":"B"}]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{"from":"A","to":"B"},{"from":"A"}]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{"from":"A","to":"B","via":"C"}]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{},{},{},{}]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{"from":"A","to":"B"},{"from":"A","to":"B"},{"from":"A","to":"B"},{"from":"A","to":"B"}]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"meta":{"a":1,"b":2}}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"meta":{"a":1,"b":"2"}}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":{"x":[1,"2",null]},"flag":true}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"flag":"true"}`,
		`{"code":"Ünï","seats":2,"extra~/name":1}`,
		`{"code":"V\u0058","seats":2,"extra~/name":1}`,
		"{\"code\":\"VX\xff\",\"seats\":2,\"extra~/name\":1}",
		`{"code":5,"seats":"x","legs":{}}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":70000}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":-1}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":1.5}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":"7","flag":false}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":null,"price":null}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":{"a":1}}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"any":[1]}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"kind":"flight","price":999.5}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"Kind":"flight"}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"CODE":"XX"}`,
		`{"code":"VX205","seats":2,"extra~/name":1,"Kİnd":"flight"}`,
		`{}`,
	},
}

// TestPathsAgree runs both paths on documents that conform and documents
// that break each keyword, and checks that the fast path decides the
// documents it should.
func TestPathsAgree(t *testing.T) {
	for _, ts := range testSchemas(t) {
		t.Run(ts.name, func(t *testing.T) {
			v := compile(t, ts.schema)
			decided := 0
			for _, doc := range documents[ts.name] {
				if compare(t, v, []byte(doc)) {
					decided++
				}
				decodeAllAgree(t, ts.name, v, []byte(doc))
			}
			// Escapes, repeated names, a number out of range, invalid
			// UTF-8 and malformed documents go to the fallback path; the
			// rest must not.
			if min := len(documents[ts.name]) * 2 / 3; decided < min {
				t.Errorf("the fast path decided %d of %d documents, want at least %d", decided, len(documents[ts.name]), min)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	v := compile(t, handSchema())
	tests := []struct {
		doc, pointer, keyword, msg string
	}{
		{`{"code":"vx205","seats":2,"extra~/name":1}`, "/code", "pattern",
			`validating root: validating /properties/code: pattern: "vx205" does not match regular expression "^[A-Z]{2}[0-9]*$"`},
		{`{"code":"VX205","seats":2}`, "", "required", `validating root: required: missing properties: ["extra~/name"]`},
		{`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{"from":"A","to":"B"},{"from":"A"}]}`, "/legs/1", "required",
			`validating root: validating /properties/legs: validating /properties/legs/items: required: missing properties: ["to"]`},
		{`{"code":"VX205","seats":2,"extra~/name":1,"legs":[{},{},{},{}]}`, "/legs/0", "required",
			`validating root: validating /properties/legs: validating /properties/legs/items: required: missing properties: ["from" "to"]`},
		{`{"code":"VX205","seats":2.5,"extra~/name":1}`, "/seats", "type",
			`validating root: validating /properties/seats: type: 2.5 has type "number", want "integer"`},
		{`{"code":"VX205","seats":2,"extra~/name":1,"x":[1]}`, "", "additionalProperties",
			`validating root: unexpected additional properties ["extra~/name" "x"]`},
	}
	for _, tt := range tests {
		for _, path := range []struct {
			name string
			run  func([]byte) error
		}{{"fast", v.Validate}, {"fallback", v.Fallback}} {
			err := path.run([]byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%s %s: got %v, want an *Error", path.name, tt.doc, err)
			}
			if e.Pointer != tt.pointer || e.Keyword != tt.keyword || normalizeNames(e.Error()) != normalizeNames(tt.msg) {
				t.Errorf("%s %s:\ngot  %q at %q (%s)\nwant %q at %q (%s)", path.name, tt.doc, e.Error(), e.Pointer, e.Keyword, tt.msg, tt.pointer, tt.keyword)
			}
		}
	}
}

// TestUncoveredSchemasFallBack checks that schemas with keywords the fast
// path does not implement are checked by jsonschema-go.
func TestUncoveredSchemasFallBack(t *testing.T) {
	for _, tt := range []struct {
		name   string
		schema *jsonschema.Schema
		ok, no string
	}{
		{"anyOf", &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{{Required: []string{"a"}}, {Required: []string{"b"}}}}, `{"b":1}`, `{"c":1}`},
		{"$ref", &jsonschema.Schema{Defs: map[string]*jsonschema.Schema{"n": {Type: "integer"}}, Properties: map[string]*jsonschema.Schema{"a": {Ref: "#/$defs/n"}}}, `{"a":1}`, `{"a":"1"}`},
		{"$id below the root", &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"a": {ID: "https://example.com/a", Type: "integer"}}}, `{"a":1}`, `{"a":true}`},
		{"numeric enum", &jsonschema.Schema{Enum: []any{1.0, 2.0}}, `2`, `3`},
		{"patternProperties", &jsonschema.Schema{PatternProperties: map[string]*jsonschema.Schema{"^x": {Type: "string"}}}, `{"xa":"1"}`, `{"xa":1}`},
		{"$schema", &jsonschema.Schema{Schema: "https://json-schema.org/draft/2020-12/schema", Type: "string"}, `"a"`, `1`},
		{"uniqueItems", &jsonschema.Schema{UniqueItems: true}, `[1,2]`, `[1,1]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.schema.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			v := Compile(tt.schema, r)
			if v.Fast() {
				t.Fatal("covered by the fast path")
			}
			if err := v.Validate([]byte(tt.ok)); err != nil {
				t.Errorf("%s: got %v, want nil", tt.ok, err)
			}
			var e *Error
			if err := v.Validate([]byte(tt.no)); !errors.As(err, &e) {
				t.Errorf("%s: got %v, want an *Error", tt.no, err)
			}
			if err := v.Validate([]byte(`{"a":`)); err == nil || errors.As(err, &e) {
				t.Errorf("malformed JSON: got %v, want the decoder's error", err)
			}
		})
	}
}

func TestFastPathAllocations(t *testing.T) {
	v := compile(t, testSchemas(t)[0].schema)
	doc := []byte(`{"flight":"VX205","seats":2,"class":"economy"}`)
	if got := testing.AllocsPerRun(100, func() {
		if err := v.Validate(doc); err != nil {
			t.Fatal(err)
		}
	}); got != 0 {
		t.Errorf("got %v allocations, want 0", got)
	}
}

func BenchmarkValidate(b *testing.B) {
	v := compile(b, testSchemas(b)[0].schema)
	doc := []byte(`{"flight":"VX205","seats":2,"class":"economy"}`)
	for _, path := range []struct {
		name string
		run  func([]byte) error
	}{{"fast", v.Validate}, {"fallback", v.Fallback}} {
		b.Run(path.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := path.run(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzPathsAgree checks that the two paths accept and reject the same
// documents, at the same pointer with the same message, for each test
// schema, and that decoding gives what encoding/json gives.
func FuzzPathsAgree(f *testing.F) {
	for _, docs := range documents {
		for _, d := range docs {
			f.Add([]byte(d))
		}
	}
	schemas := testSchemas(f)
	vs := []*Validator{}
	for _, ts := range schemas {
		vs = append(vs, compile(f, ts.schema))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		for i, v := range vs {
			compare(t, v, data)
			decodeAllAgree(t, schemas[i].name, v, data)
		}
	})
}

// FuzzValid checks that Valid agrees with json.Valid.
func FuzzValid(f *testing.F) {
	for _, docs := range documents {
		for _, d := range docs {
			f.Add([]byte(d))
		}
	}
	f.Add([]byte(strings.Repeat("[", 1200) + strings.Repeat("]", 1200)))
	f.Add([]byte(`{"a":1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", data, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"flight":"VX205","seats":2,"class":"economy"}`)
	for _, f := range []struct {
		name  string
		valid func([]byte) bool
	}{{"argcheck", Valid}, {"encoding-json", json.Valid}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !f.valid(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
