package argcheck

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// locate finds the value a jsonschema-go error is about, and the keyword
// that failed. jsonschema-go wraps the error once per schema it entered,
// naming the schema by its path from the root ("root", then
// "/properties/a", "/properties/a/items", …); the path is followed through
// the instance, step by step. A step into an array's items or an object's
// additional properties names no member: the member is the first one (in
// array order, or in name order) that the subschema rejects. Where the path
// leaves the instance (a $ref, an $id, a keyword without a member), the
// pointer stops at the last value it named.
func locate(root *jsonschema.Schema, instance any, err error) (pointer, keyword string) {
	var labels []string
	e := err
	for {
		inner := errors.Unwrap(e)
		if inner == nil {
			break
		}
		prefix := strings.TrimSuffix(e.Error(), ": "+inner.Error())
		label, ok := strings.CutPrefix(prefix, "validating ")
		if !ok || prefix == e.Error() {
			break
		}
		labels = append(labels, label)
		e = inner
	}
	keyword = keywordOf(e.Error())
	var p strings.Builder
	s, v := root, instance
	prev := ""
	for i, label := range labels {
		if i == 0 {
			if label != "root" && (root == nil || label != root.ID) {
				break
			}
			continue
		}
		step, ok := strings.CutPrefix(label, prev)
		if !ok || s == nil {
			break
		}
		prev = label
		next, member, ok := follow(s, v, step)
		if !ok {
			break
		}
		if member != nil {
			var value any
			switch vv := v.(type) {
			case map[string]any:
				value = vv[*member]
			case []any:
				n, _ := strconv.Atoi(*member)
				value = vv[n]
			}
			p.WriteByte('/')
			p.WriteString(escapePointer(*member))
			v = value
		}
		s = next
	}
	return p.String(), keyword
}

// follow takes one step of a schema path: the subschema it leads to and,
// when the step enters a member of v, the member's name or index.
func follow(s *jsonschema.Schema, v any, step string) (*jsonschema.Schema, *string, bool) {
	if name, ok := strings.CutPrefix(step, "/properties/"); ok {
		sub := s.Properties[name]
		if _, isObj := v.(map[string]any); !isObj || sub == nil {
			return nil, nil, false
		}
		return sub, &name, true
	}
	for _, kw := range []string{"/allOf/", "/anyOf/", "/oneOf/"} {
		if rest, ok := strings.CutPrefix(step, kw); ok {
			n, err := strconv.Atoi(rest)
			list := map[string][]*jsonschema.Schema{"/allOf/": s.AllOf, "/anyOf/": s.AnyOf, "/oneOf/": s.OneOf}[kw]
			if err != nil || n < 0 || n >= len(list) {
				return nil, nil, false
			}
			return list[n], nil, true
		}
	}
	switch step {
	case "/not":
		return s.Not, nil, s.Not != nil
	case "/then":
		return s.Then, nil, s.Then != nil
	case "/else":
		return s.Else, nil, s.Else != nil
	case "/items":
		arr, ok := v.([]any)
		if !ok || s.Items == nil {
			return nil, nil, false
		}
		start := min(len(s.PrefixItems), len(arr))
		for i := start; i < len(arr); i++ {
			if rejects(s.Items, arr[i]) {
				m := strconv.Itoa(i)
				return s.Items, &m, true
			}
		}
	case "/additionalProperties":
		obj, ok := v.(map[string]any)
		if !ok || s.AdditionalProperties == nil {
			return nil, nil, false
		}
		names := make([]string, 0, len(obj))
		for name := range obj {
			if _, declared := s.Properties[name]; !declared {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			if rejects(s.AdditionalProperties, obj[name]) {
				return s.AdditionalProperties, &name, true
			}
		}
	}
	if rest, ok := strings.CutPrefix(step, "/prefixItems/"); ok {
		n, err := strconv.Atoi(rest)
		arr, isArr := v.([]any)
		if err != nil || !isArr || n < 0 || n >= len(s.PrefixItems) || n >= len(arr) {
			return nil, nil, false
		}
		return s.PrefixItems[n], &rest, true
	}
	return nil, nil, false
}

// rejects reports whether s, resolved on its own, rejects v; a subschema
// that cannot be resolved on its own (it refers outside itself) rejects
// nothing, so that the pointer stops at its container.
func rejects(s *jsonschema.Schema, v any) bool {
	r, err := s.Resolve(nil)
	if err != nil {
		return false
	}
	return r.Validate(v) != nil
}

// keywordOf is the keyword of jsonschema-go's innermost message.
func keywordOf(msg string) string {
	if strings.HasPrefix(msg, "unexpected additional properties") {
		return "additionalProperties"
	}
	kw, _, ok := strings.Cut(msg, ":")
	if !ok || strings.ContainsAny(kw, " []\"") {
		return ""
	}
	if i := strings.IndexByte(kw, '['); i >= 0 {
		kw = kw[:i]
	}
	return kw
}
