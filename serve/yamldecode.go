package serve

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// Problem is one problem of a configuration file.
type Problem struct {
	// Line and Column locate the problem in the file, from 1. 0: the
	// problem has no place in the file (the file as a whole).
	Line, Column int
	// Path is the key path of the value at fault, such as
	// "agents.flights.model.provider" or "approvals[0].roles". "": the
	// whole file.
	Path string
	// Message says what is wrong.
	Message string
}

// ConfigError is the error of [LoadConfig] and [Build] for an invalid
// configuration file: every problem found, in file order.
type ConfigError struct {
	// File is the path of the file, as given.
	File string
	// Problems are the problems, at least one.
	Problems []Problem
}

// Error returns one line per problem, each "FILE:LINE:COLUMN: PATH: MESSAGE".
func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "serve: invalid config %s (%d problem", e.File, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString(")")
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
		if p.Path != "" {
			b.WriteString(p.Path + ": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// position is a place in a file.
type position struct{ line, column int }

// decoder decodes a YAML node tree into Go values strictly: every key must
// name a field, every scalar must have the field's type. It keeps going
// after a problem, so that all of them are reported, and remembers where
// each value was, by key path.
type decoder struct {
	problems []Problem
	pos      map[string]position
	failed   map[string]bool // the paths of values that did not decode
	values   int             // how many values were decoded, aliases expanded
}

// maxValues bounds the values of a file, so that aliases of aliases cannot
// blow up.
const maxValues = 100_000

func (d *decoder) problem(n *yaml.Node, path, format string, args ...any) {
	if d.failed[path] {
		return // one problem per value
	}
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.problems = append(d.problems, p)
	d.failed[path] = true
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	schemaType   = reflect.TypeFor[*jsonschema.Schema]()
)

// decodeSchema sets v, a *jsonschema.Schema, from n: a JSON schema written
// in YAML, which goes through JSON to the schema's own decoder.
func (d *decoder) decodeSchema(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.problem(n, path, "want a JSON schema (a mapping), got %s", kindName(n))
		return
	}
	var doc any
	if err := n.Decode(&doc); err != nil {
		d.problem(n, path, "not a JSON schema: %v", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	data, err := json.Marshal(doc)
	if err != nil {
		d.problem(n, path, "not a JSON schema: keys must be strings and values JSON values")
		return
	}
	s := &jsonschema.Schema{}
	if err := json.Unmarshal(data, s); err != nil {
		d.problem(n, path, "not a JSON schema: %v", strings.TrimPrefix(err.Error(), "json: "))
		return
	}
	v.Set(reflect.ValueOf(s))
}

// kindName names the kind of YAML value n is, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	}
	return fmt.Sprintf("%q", n.Value)
}

// fieldName returns the key of a struct field: its yaml tag, else its json
// tag, else its name; "-" when it has none in a file.
func fieldName(f reflect.StructField) string {
	for _, tag := range []string{"yaml", "json"} {
		if v, ok := f.Tag.Lookup(tag); ok {
			name, _, _ := strings.Cut(v, ",")
			if name != "" {
				return name
			}
		}
	}
	if !f.IsExported() {
		return "-"
	}
	return f.Name
}

// structFields adds the keys of struct t's fields to fields, by index
// path, and to names: those of a struct field tagged `yaml:",inline"` are
// the keys of its own fields.
func structFields(t reflect.Type, index []int, fields map[string][]int, names *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(slices.Clone(index), i)
		if tag, ok := f.Tag.Lookup("yaml"); ok && f.Type.Kind() == reflect.Struct && slices.Contains(strings.Split(tag, ",")[1:], "inline") {
			structFields(f.Type, idx, fields, names)
			continue
		}
		if name := fieldName(f); name != "-" {
			fields[name] = idx
			*names = append(*names, name)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decode sets v from n; path is v's key path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if d.values++; d.values > maxValues {
		if d.values == maxValues+1 {
			d.problem(n, path, "more than %d values (aliases expanded)", maxValues)
		}
		return
	}
	d.pos[path] = position{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // the zero value
	}
	t := v.Type()
	switch {
	case t == schemaType:
		d.decodeSchema(n, v, path)
	case t.Kind() == reflect.Pointer:
		e := reflect.New(t.Elem())
		d.decode(n, e.Elem(), path)
		v.Set(e)
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.problem(n, path, "want a mapping, got %s", kindName(n))
			return
		}
		fields := map[string][]int{}
		var names []string
		structFields(t, nil, fields, &names)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				d.problem(k, path, "a key must be a string")
				continue
			}
			idx, ok := fields[k.Value]
			switch {
			case !ok:
				d.problem(k, path, "unknown key %q (want one of %s)", k.Value, strings.Join(names, ", "))
				continue
			case seen[k.Value]:
				d.problem(k, join(path, k.Value), "the key appears twice")
				continue
			}
			seen[k.Value] = true
			d.decode(val, v.FieldByIndex(idx), join(path, k.Value))
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		if n.Kind != yaml.MappingNode {
			d.problem(n, path, "want a mapping, got %s", kindName(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Value == "" {
				d.problem(k, path, "a key must be a non-empty string")
				continue
			}
			p := join(path, k.Value)
			if v.MapIndex(reflect.ValueOf(k.Value).Convert(t.Key())).IsValid() {
				d.problem(k, p, "the key appears twice")
				continue
			}
			e := reflect.New(t.Elem()).Elem()
			d.decode(val, e, p)
			v.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), e)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.problem(n, path, "want a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, e := range n.Content {
			d.decode(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case n.Kind != yaml.ScalarNode:
		d.problem(n, path, "want %s, got %s", scalarWant(t), kindName(n))
	case t == durationType:
		dur, err := time.ParseDuration(n.Value)
		if err != nil || n.ShortTag() != "!!str" {
			d.problem(n, path, "want a duration such as 30s or 5m, got %s", kindName(n))
			return
		}
		v.SetInt(int64(dur))
	case t.Kind() == reflect.String:
		v.SetString(n.Value)
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil || n.ShortTag() != "!!bool" {
			d.problem(n, path, "want true or false, got %s", kindName(n))
			return
		}
		v.SetBool(b)
	case slices.Contains([]reflect.Kind{reflect.Int, reflect.Int32, reflect.Int64}, t.Kind()):
		i, err := strconv.ParseInt(n.Value, 0, t.Bits())
		if err != nil || n.ShortTag() != "!!int" {
			d.problem(n, path, "want an integer, got %s", kindName(n))
			return
		}
		v.SetInt(i)
	case t.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || n.ShortTag() != "!!float" && n.ShortTag() != "!!int" {
			d.problem(n, path, "want a number, got %s", kindName(n))
			return
		}
		v.SetFloat(f)
	default:
		panic(fmt.Sprintf("serve: config decoder: unsupported type %s at %s", t, path))
	}
}

func scalarWant(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Float64:
		return "a number"
	}
	return "an integer"
}
