package argcheck

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unsafe"
)

// Decoder checks documents against a schema and decodes them into values
// of one Go type, in the same pass when it can: the fast path stores each
// value as it checks it, as encoding/json would store it. A Decoder is
// immutable and safe for concurrent use.
type Decoder struct {
	v    *Validator
	plan *plan // nil: decode with encoding/json
}

// NewDecoder returns the decoder of documents checked by v into values of
// type t. The single pass covers structs (and structs of structs) whose
// fields are strings, booleans, integers and floating-point numbers,
// without embedded fields, the ",string" option or custom unmarshalers;
// other types are left to encoding/json once the document is checked.
func NewDecoder(v *Validator, t reflect.Type) *Decoder {
	return &Decoder{v: v, plan: compilePlan(t, 0)}
}

// Decode checks data like [Validator.Validate] and, when it conforms,
// stores it in the value dst points to, which must be the zero value of
// the decoder's type. When redecode is true the document conforms but the
// value was not stored (or not completely): the caller decodes data with
// encoding/json into a zero value. src is "" or a string holding the same
// bytes as data: the value's strings share its bytes, else one copy of
// data.
func (d *Decoder) Decode(data []byte, src string, dst unsafe.Pointer) (redecode bool, err error) {
	if d.v.root != nil {
		s := scanner{data: data, str: src}
		f := s.document(d.v.root, target{d.plan, dst})
		if !s.undecided {
			if f != nil {
				return false, f.error(data)
			}
			return d.plan == nil || s.redecode, nil
		}
	}
	if err := d.v.Fallback(data); err != nil {
		return false, err
	}
	return true, nil
}

// target is where the scanner stores a value: p says how, ptr where. The
// zero target stores nothing.
type target struct {
	p   *plan
	ptr unsafe.Pointer
}

// plan is how a value of one Go type is stored.
type plan struct {
	kind   reflect.Kind
	fields []fieldPlan // structs
}

type fieldPlan struct {
	name string
	off  uintptr
	p    *plan
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]() // a string that must be a number
)

// compilePlan returns the plan of t, or nil when encoding/json must decode
// values of t.
func compilePlan(t reflect.Type, depth int) *plan {
	if depth > 8 || t == numberType || t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) ||
		reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	switch k := t.Kind(); k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return &plan{kind: k}
	case reflect.Struct:
		p := &plan{kind: k}
		for i := range t.NumField() {
			sf := t.Field(i)
			if sf.Anonymous {
				return nil // embedded fields follow rules of their own
			}
			if !sf.IsExported() {
				continue
			}
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",string,") {
				return nil
			}
			if name == "" {
				name = sf.Name
			}
			if !plainName(name) {
				return nil
			}
			for _, f := range p.fields {
				if strings.EqualFold(f.name, name) {
					return nil // encoding/json's rules for clashing names
				}
			}
			fp := compilePlan(sf.Type, depth+1)
			if fp == nil {
				return nil
			}
			p.fields = append(p.fields, fieldPlan{name: name, off: sf.Offset, p: fp})
		}
		return p
	}
	return nil
}

// plainName reports whether a field name is ASCII letters, digits and '_',
// names that encoding/json takes as they are and folds as ASCII.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return name != ""
}

// field returns where the member named key of the struct t is stored.
// encoding/json matches names exactly first, then without regard to case:
// a name that matches a field only so is left to it.
func (s *scanner) field(t target, key []byte) target {
	for i := range t.p.fields {
		if f := &t.p.fields[i]; f.name == string(key) {
			return target{f.p, unsafe.Add(t.ptr, f.off)}
		}
	}
	for i := range t.p.fields {
		if len(t.p.fields[i].name) == len(key) && strings.EqualFold(t.p.fields[i].name, unsafe.String(unsafe.SliceData(key), len(key))) {
			s.redecode = true
			break
		}
	}
	for _, c := range key {
		if c >= 0x80 {
			s.redecode = true // Unicode case folding
			break
		}
	}
	return target{}
}

func (s *scanner) storeString(t target, start int, esc bool) {
	if t.p.kind != reflect.String || esc {
		s.redecode = true
		return
	}
	if s.str == "" {
		s.str = string(s.data)
	}
	*(*string)(t.ptr) = s.str[start+1 : s.pos-1]
}

func (s *scanner) storeBool(t target, v bool) {
	if t.p == nil {
		return
	}
	if t.p.kind != reflect.Bool {
		s.redecode = true
		return
	}
	*(*bool)(t.ptr) = v
}

func (s *scanner) storeNumber(t target, start int, f float64) {
	lit := unsafe.String(&s.data[start], s.pos-start)
	switch t.p.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v, err := strconv.ParseInt(lit, 10, int(intBits(t.p.kind)))
		if err != nil {
			s.redecode = true
			return
		}
		switch t.p.kind {
		case reflect.Int:
			*(*int)(t.ptr) = int(v)
		case reflect.Int8:
			*(*int8)(t.ptr) = int8(v)
		case reflect.Int16:
			*(*int16)(t.ptr) = int16(v)
		case reflect.Int32:
			*(*int32)(t.ptr) = int32(v)
		default:
			*(*int64)(t.ptr) = v
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v, err := strconv.ParseUint(lit, 10, int(intBits(t.p.kind)))
		if err != nil {
			s.redecode = true
			return
		}
		switch t.p.kind {
		case reflect.Uint:
			*(*uint)(t.ptr) = uint(v)
		case reflect.Uint8:
			*(*uint8)(t.ptr) = uint8(v)
		case reflect.Uint16:
			*(*uint16)(t.ptr) = uint16(v)
		case reflect.Uint32:
			*(*uint32)(t.ptr) = uint32(v)
		default:
			*(*uint64)(t.ptr) = v
		}
	case reflect.Float64:
		*(*float64)(t.ptr) = f
	case reflect.Float32:
		v, err := strconv.ParseFloat(lit, 32)
		if err != nil {
			s.redecode = true
			return
		}
		*(*float32)(t.ptr) = float32(v)
	default:
		s.redecode = true
	}
}

func intBits(k reflect.Kind) uintptr {
	switch k {
	case reflect.Int8, reflect.Uint8:
		return 8
	case reflect.Int16, reflect.Uint16:
		return 16
	case reflect.Int32, reflect.Uint32:
		return 32
	case reflect.Int64, reflect.Uint64:
		return 64
	}
	return strconv.IntSize
}
