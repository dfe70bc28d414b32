package schemacache

import (
	"errors"
	"runtime"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestGetConvertsOncePerSchema(t *testing.T) {
	calls := 0
	c := New(func(s *jsonschema.Schema) (string, error) {
		calls++
		if s.Description == "bad" {
			return "", errors.New("bad schema")
		}
		return s.Type, nil
	})
	a := &jsonschema.Schema{Type: "object"}
	b := &jsonschema.Schema{Type: "object"}
	for range 3 {
		if v, err := c.Get(a); err != nil || v != "object" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	c.Get(b)
	if calls != 2 {
		t.Errorf("convert ran %d times, want once per schema (2)", calls)
	}
	bad := &jsonschema.Schema{Description: "bad"}
	for range 2 {
		if _, err := c.Get(bad); err == nil {
			t.Error("error not returned")
		}
	}
	if calls != 4 {
		t.Errorf("errors were cached: %d calls", calls)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

func TestObjectJSON(t *testing.T) {
	for _, tc := range []struct {
		s    *jsonschema.Schema
		want string
	}{
		{&jsonschema.Schema{}, `{"type":"object"}`},
		{&jsonschema.Schema{Type: "object", Required: []string{"a"}}, `{"type":"object","required":["a"]}`},
		{&jsonschema.Schema{Types: []string{"object", "null"}}, `{"type":["object","null"]}`},
	} {
		got, err := ObjectJSON(tc.s)
		if err != nil || string(got) != tc.want {
			t.Errorf("ObjectJSON = %s, %v; want %s", got, err, tc.want)
		}
	}
	in := &jsonschema.Schema{}
	ObjectJSON(in)
	if in.Type != "" {
		t.Error("ObjectJSON changed its input")
	}
}
