package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/store/sqlite"
)

// TestPing checks that a store answers pings while open, and fails them
// once closed.
func TestPing(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
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
