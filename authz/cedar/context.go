package cedar

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolgate/toolgate"
)

// Reserved context keys. They always hold toolgate's values; an argument
// with one of these names is reachable only under context.arguments.
const (
	keyArguments       = "arguments"
	keyMetadata        = "metadata"
	keyUnrepresentable = "unrepresentable"
)

func reserved(key string) bool {
	return key == keyArguments || key == keyMetadata || key == keyUnrepresentable
}

// executionContext returns the request context for a call (see newContext)
// and how many numbers were left out as unrepresentable.
//
// The arguments are converted from their JSON object: objects become
// records, arrays sets, strings strings, booleans booleans, integers in
// Cedar's range longs (see long). A null is left out (a key with a null
// value is absent). Any other number is left out and its JSON pointer
// listed in context.unrepresentable. Empty text (or only JSON whitespace)
// counts as {}. Text that is not one JSON object is an error, and so are
// duplicate keys and invalid UTF-8 (a tool might read them differently);
// the error never contains argument values.
func executionContext(meta toolgate.ToolMetadata, text string) (types.Record, int, error) {
	s := sessions.Get().(*session)
	defer s.release()
	top, err := s.decode(text)
	if err != nil {
		return types.Record{}, 0, err
	}
	return s.newContext(meta, top), len(s.unrepresentable), nil
}

var (
	errInvalid   = errors.New("the arguments are not valid JSON")
	errTrailing  = errors.New("the arguments are not valid JSON: data after the object")
	errNotObject = errors.New("the arguments are not a JSON object")
)

// session is the reusable state of one conversion: a decoder, and scratch
// maps and slices (Cedar copies what it keeps).
type session struct {
	r               strings.Reader
	dec             *jsontext.Decoder
	maps            []types.RecordMap // free scratch maps
	unrepresentable []string
}

var sessions = sync.Pool{New: func() any {
	s := new(session)
	s.dec = jsontext.NewDecoder(&s.r)
	return s
}}

// maxScratch bounds the size of scratch maps kept for reuse.
const maxScratch = 64

func (s *session) release() {
	s.r.Reset("")
	s.dec.Reset(&s.r)
	s.unrepresentable = s.unrepresentable[:0]
	sessions.Put(s)
}

func (s *session) scratch() types.RecordMap {
	if n := len(s.maps); n > 0 {
		m := s.maps[n-1]
		s.maps = s.maps[:n-1]
		return m
	}
	return make(types.RecordMap)
}

func (s *session) free(m types.RecordMap) {
	if len(m) <= maxScratch {
		clear(m)
		s.maps = append(s.maps, m)
	}
}

// decode converts the arguments' object into a scratch map.
func (s *session) decode(text string) (types.RecordMap, error) {
	if strings.Trim(text, " \t\r\n") == "" {
		return s.scratch(), nil
	}
	s.r.Reset(text)
	s.dec.Reset(&s.r)
	if s.dec.PeekKind() != '{' {
		if _, err := s.dec.ReadValue(); err != nil {
			return nil, errInvalid
		}
		return nil, errNotObject
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, errInvalid
	}
	top, err := s.object()
	if err != nil {
		return nil, errInvalid
	}
	if _, err := s.dec.ReadToken(); err != io.EOF {
		s.free(top)
		return nil, errTrailing
	}
	return top, nil
}

// object reads the members of an object whose '{' was read, and its '}',
// into a scratch map.
func (s *session) object() (types.RecordMap, error) {
	m := s.scratch()
	for s.dec.PeekKind() != '}' {
		k, err := s.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		key := k.String()
		v, ok, err := s.value()
		if err != nil {
			return nil, err
		}
		if ok {
			m[types.String(key)] = v
		}
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, err
	}
	return m, nil
}

// value reads one value; ok is false when it is left out.
func (s *session) value() (types.Value, bool, error) {
	tok, err := s.dec.ReadToken()
	if err != nil {
		return nil, false, err
	}
	switch tok.Kind() {
	case '"':
		return types.String(tok.String()), true, nil
	case 't', 'f':
		return types.Boolean(tok.Bool()), true, nil
	case 'n':
		return nil, false, nil
	case '0':
		if n, ok := long(tok.String()); ok {
			return n, true, nil
		}
		s.unrepresentable = append(s.unrepresentable, string(s.dec.StackPointer()))
		return nil, false, nil
	case '{':
		m, err := s.object()
		if err != nil {
			return nil, false, err
		}
		r := types.NewRecord(m)
		s.free(m)
		return r, true, nil
	case '[':
		var vals []types.Value
		for s.dec.PeekKind() != ']' {
			v, ok, err := s.value()
			if err != nil {
				return nil, false, err
			}
			if ok {
				vals = append(vals, v)
			}
		}
		if _, err := s.dec.ReadToken(); err != nil {
			return nil, false, err
		}
		return types.NewSet(vals...), true, nil
	default:
		return nil, false, errInvalid
	}
}

// long returns n as a Cedar long when its value is an integer within
// Cedar's 64-bit range, however it is written: 500, 500.0 and 5e2 are 500.
// s has JSON number syntax. The check is exact (no floating point).
func long(s string) (types.Long, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return types.Long(i), true
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			e = maxExponent // out of range unless the digits are all zero
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	all := intPart + frac
	digits := strings.TrimLeft(all, "0")
	point := len(intPart) + exp - (len(all) - len(digits)) // digits before the decimal point
	digits = strings.TrimRight(digits, "0")
	switch {
	case digits == "":
		return 0, true
	case len(digits) > point || point > 19:
		return 0, false // a fraction, or more digits than any int64
	}
	text := digits + strings.Repeat("0", point-len(digits))
	if neg {
		text = "-" + text
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, false
	}
	return types.Long(i), true
}

// maxExponent bounds the exponents long works with; beyond it a number with
// a non-zero digit is far outside int64 or far below 1.
const maxExponent = 1000

// metadataRecords holds the four possible metadata records, built once
// (and boxed once: a Record in an interface costs an allocation).
var metadataRecords = func() (m [2][2]types.Value) {
	for i, conf := range []bool{false, true} {
		for j, direct := range []bool{false, true} {
			m[i][j] = types.NewRecord(types.RecordMap{
				"requires_confirmation": types.Boolean(conf),
				"return_direct":         types.Boolean(direct),
			})
		}
	}
	return m
}()

func metadataRecord(meta toolgate.ToolMetadata) types.Value {
	return metadataRecords[b2i(meta.RequiresConfirmation)][b2i(meta.ReturnDirect)]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// emptySet is context.unrepresentable when nothing was left out.
var emptySet types.Value = types.NewSet()

// emptyRecord is context.arguments in the definition phase.
var emptyRecord types.Value = types.NewRecord(nil)

// definitionContexts holds the definition-phase context for each metadata,
// built once: no arguments, nothing unrepresentable.
var definitionContexts = func() (m [2][2]types.Record) {
	for i := range 2 {
		for j := range 2 {
			m[i][j] = types.NewRecord(types.RecordMap{
				keyArguments:       emptyRecord,
				keyMetadata:        metadataRecords[i][j],
				keyUnrepresentable: emptySet,
			})
		}
	}
	return m
}()

// newContext returns the request context for a call whose arguments are
// top (a scratch map, freed):
//
//	{<each argument key not reserved>: value, arguments: {...},
//	 metadata: {requires_confirmation, return_direct}, unrepresentable: [...]}
func (s *session) newContext(meta toolgate.ToolMetadata, top types.RecordMap) types.Record {
	args := types.NewRecord(top)
	for k := range top {
		if reserved(string(k)) {
			delete(top, k)
		}
	}
	m := top
	m[keyArguments] = args
	m[keyMetadata] = metadataRecord(meta)
	if len(s.unrepresentable) == 0 {
		m[keyUnrepresentable] = emptySet
	} else {
		vals := make([]types.Value, len(s.unrepresentable))
		for i, p := range s.unrepresentable {
			vals[i] = types.String(p)
		}
		m[keyUnrepresentable] = types.NewSet(vals...)
	}
	ctx := types.NewRecord(m)
	s.free(m)
	return ctx
}
