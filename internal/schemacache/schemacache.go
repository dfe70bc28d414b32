// Package schemacache memoizes conversions of tool input schemas for the
// provider adapters. Encoding a schema costs more than the rest of a
// request, and a schema is immutable once a tool holds it (see
// toolgate.Tool.Definition), so each is converted once, keyed by its
// identity; an entry goes away when its schema is garbage-collected.
package schemacache

import (
	"encoding/json"
	"runtime"
	"sync"
	"weak"

	"github.com/google/jsonschema-go/jsonschema"
)

// Cache memoizes convert per schema. It is safe for concurrent use.
type Cache[T any] struct {
	convert func(*jsonschema.Schema) (T, error)
	m       sync.Map // weak.Pointer[jsonschema.Schema] -> T
}

// New returns a cache of convert's results. convert is called with non-nil
// schemas only and must not keep or change them.
func New[T any](convert func(*jsonschema.Schema) (T, error)) *Cache[T] {
	return &Cache[T]{convert: convert}
}

// Get returns the converted form of s (s must not be nil). Errors are not
// cached.
func (c *Cache[T]) Get(s *jsonschema.Schema) (T, error) {
	key := weak.Make(s)
	if v, ok := c.m.Load(key); ok {
		return v.(T), nil
	}
	v, err := c.convert(s)
	if err != nil {
		return v, err
	}
	if _, loaded := c.m.LoadOrStore(key, v); !loaded {
		runtime.AddCleanup(s, func(k weak.Pointer[jsonschema.Schema]) { c.m.Delete(k) }, key)
	}
	return v, nil
}

// ObjectJSON encodes s as an object schema: "type":"object" is added when s
// names no type, as the providers require for tool inputs.
func ObjectJSON(s *jsonschema.Schema) (json.RawMessage, error) {
	if s.Type == "" && len(s.Types) == 0 {
		cp := *s
		cp.Type = "object"
		s = &cp
	}
	return json.Marshal(s)
}
