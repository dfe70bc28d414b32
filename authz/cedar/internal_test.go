package cedar

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolgate/toolgate"
)

func TestEntityCacheBound(t *testing.T) {
	c := newEntityCache(4)
	for i := range 20 {
		pr := &toolgate.Principal{ID: fmt.Sprint("u", i), Roles: []string{"r"}, Attributes: map[string]string{"k": "v"}}
		e := c.get(pr)
		if e.uid.ID != types.String(pr.ID) {
			t.Fatalf("got entity %v for %s", e.uid, pr.ID)
		}
		if c.get(pr) != e {
			t.Errorf("%s: second get built new entities", pr.ID)
		}
	}
	if n := c.len(); n != 4 {
		t.Errorf("cache holds %d principals, want 4", n)
	}
	// Same id, other roles or attributes: other entities.
	a := c.get(&toolgate.Principal{ID: "x", Roles: []string{"a"}})
	b := c.get(&toolgate.Principal{ID: "x", Roles: []string{"b"}})
	d := c.get(&toolgate.Principal{ID: "x", Roles: []string{"a"}, Attributes: map[string]string{"k": "v"}})
	if a == b || a == d || b == d {
		t.Error("principals that differ share entities")
	}
	if c.hash(&toolgate.Principal{ID: "x", Attributes: map[string]string{"a": "1", "b": "2"}}) !=
		c.hash(&toolgate.Principal{ID: "x", Attributes: map[string]string{"b": "2", "a": "1"}}) {
		t.Error("attribute order changes the hash")
	}
	if uncached := newEntityCache(-1); uncached.get(&toolgate.Principal{ID: "x"}) == nil || uncached.len() != 0 {
		t.Error("a disabled cache cached")
	}
}

func TestExecutionContext(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   types.Record
		unrepr []string
	}{
		{`{}`, types.NewRecord(nil), nil},
		{`{"a":1,"b":"x","c":true,"d":null}`, types.NewRecord(types.RecordMap{"a": types.Long(1), "b": types.String("x"), "c": types.True}), nil},
		{`{"n":-9223372036854775808,"m":9223372036854775808}`, types.NewRecord(types.RecordMap{"n": types.Long(-9223372036854775808)}), []string{"/m"}},
		{`{"f":500.0,"e":5E2,"z":-0.0,"big":9007199254740993.0,"frac":0.5,"g":4503599627370495.5}`,
			types.NewRecord(types.RecordMap{"f": types.Long(500), "e": types.Long(500), "z": types.Long(0), "big": types.Long(9007199254740993)}),
			[]string{"/frac", "/g"}},
		{`{"a":12.50e1,"b":-0.000922337203685477580800e22,"c":-9223372036854775809e0,"d":0e99999999999999999999,"e":1e-99999999999999999999,"f":1e19,"g":0.001e3}`,
			types.NewRecord(types.RecordMap{"a": types.Long(125), "b": types.Long(-9223372036854775808), "d": types.Long(0), "g": types.Long(1)}),
			[]string{"/c", "/e", "/f"}},
		{`{"a\u0062":"\u00e9\ud83d\ude00"}`, types.NewRecord(types.RecordMap{"ab": types.String("é😀")}), nil},
		{`{"s":[1,1,"1",null,[2],{"k":[]}]}`, types.NewRecord(types.RecordMap{"s": types.NewSet(
			types.Long(1), types.String("1"), types.NewSet(types.Long(2)), types.NewRecord(types.RecordMap{"k": types.NewSet()}))}), nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ctx, n, err := executionContext(toolgate.ToolMetadata{}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := ctx.Get(keyArguments); got == nil || !got.Equal(tc.want) {
				t.Errorf("got %v, want %s", got, tc.want)
			}
			var want []types.Value
			for _, p := range tc.unrepr {
				want = append(want, types.String(p))
			}
			if got, _ := ctx.Get(keyUnrepresentable); got == nil || !got.Equal(types.NewSet(want...)) || n != len(want) {
				t.Errorf("unrepresentable: got %v (%d), want %v", got, n, tc.unrepr)
			}
		})
	}
}

func TestExecutionContextRefused(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"a":1`, errInvalid},
		{`{"a":1,"a":2}`, errInvalid},
		{"{\"a\":\"\xff\"}", errInvalid},
		{`{"a":[1,}`, errInvalid},
		{`x`, errInvalid},
		{`[1]`, errNotObject},
		{`"text"`, errNotObject},
		{`null`, errNotObject},
		{`{} {}`, errTrailing},
		{`{}]`, errTrailing},
	} {
		if _, _, err := executionContext(toolgate.ToolMetadata{}, tc.in); err != tc.want {
			t.Errorf("executionContext(%q): got %v, want %v", tc.in, err, tc.want)
		}
	}
}

// FuzzExecutionContext converts arbitrary text: it never panics; valid JSON
// objects (without duplicate keys, in UTF-8) convert, every other text is
// refused; every top-level key of an
// object is in the context, left out for a null or an unrepresentable
// number, or reserved.
func FuzzExecutionContext(f *testing.F) {
	for _, s := range []string{`{}`, `{"amount":500}`, `{"a":[1,2,{"b":null}],"c":1.5}`, `[1]`, `{"x":`, `"s"`,
		`{"arguments":1,"metadata":{"return_direct":true}}`, `{"n":1e400}`, `{"~/":-0}`, ` `, `{"a":1} x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		meta := toolgate.ToolMetadata{ReturnDirect: true}
		ctx, _, err := executionContext(meta, in)
		var obj map[string]json.RawMessage
		isObject := jsontext.Value(in).IsValid() && json.Unmarshal([]byte(in), &obj) == nil && obj != nil
		if err != nil {
			if isObject {
				t.Fatalf("executionContext(%q) refused a JSON object: %v", in, err)
			}
			return
		}
		if !isObject && !isBlank(in) {
			t.Fatalf("executionContext(%q) accepted text that is not a JSON object", in)
		}
		unrepr := map[string]bool{}
		if set, ok := must(ctx.Get(keyUnrepresentable)).(types.Set); ok {
			for v := range set.All() {
				unrepr[string(v.(types.String))] = true
			}
		} else {
			t.Fatalf("context.unrepresentable is not a set")
		}
		args, ok := must(ctx.Get(keyArguments)).(types.Record)
		if !ok {
			t.Fatalf("context.arguments is not a record")
		}
		for k, raw := range obj {
			v, inArgs := args.Get(types.String(k))
			switch {
			case string(raw) == "null" || unrepr["/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k)]:
				if inArgs {
					t.Errorf("key %q is in the arguments", k)
				}
			case !inArgs:
				t.Errorf("key %q is missing from the arguments", k)
			case reserved(k):
			default:
				if got, _ := ctx.Get(types.String(k)); got == nil || !got.Equal(v) {
					t.Errorf("context.%s = %v, want %v", k, got, v)
				}
			}
		}
		if md, _ := ctx.Get(keyMetadata); md == nil || !md.Equal(metadataRecord(meta)) {
			t.Errorf("context.metadata = %v", md)
		}
		if n := ctx.Len(); n > len(obj)+3 {
			t.Errorf("context has %d keys for %d arguments", n, len(obj))
		}
	})
}

func must(v types.Value, ok bool) types.Value {
	if !ok {
		return nil
	}
	return v
}

func isBlank(s string) bool {
	for _, c := range s {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// FuzzLong checks long against exact rational arithmetic.
func FuzzLong(f *testing.F) {
	for _, s := range []string{"0", "-0", "500", "500.0", "5e2", "5.5", "1e19", "-9223372036854775808", "9223372036854775808",
		"0.0001e4", "12.50e1", "1E-3", "-0.5e1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n json.Number
		if len(s) > 80 || json.Unmarshal([]byte(s), &n) != nil || string(n) != s {
			return // not exactly one JSON number, or too long for big.Rat to be quick
		}
		got, ok := long(string(n))
		r, rok := new(big.Rat).SetString(s)
		if !rok {
			return // big.Rat refuses exponents beyond 1e6
		}
		want := r.IsInt() && r.Num().IsInt64()
		if ok != want {
			t.Fatalf("long(%s) ok = %v, want %v", s, ok, want)
		}
		if ok && int64(got) != r.Num().Int64() {
			t.Fatalf("long(%s) = %d, want %s", s, got, r.Num())
		}
	})
}
