package postgres_test

import (
	"testing"

	"github.com/toolgate/toolgate/store/postgres"
)

// TestPing checks that a store answers pings while open, and fails them
// once closed.
func TestPing(t *testing.T) {
	schema := newSchema(t)
	s, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping of an open store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Fatal("Ping of a closed store: nil error")
	}
}
