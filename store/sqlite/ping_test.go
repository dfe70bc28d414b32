package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
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

// TestProbeWrite checks the write probe of a healthy store, of one whose
// write lock another process holds past the busy timeout, and of one
// whose last audit record is broken.
func TestProbeWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s, err := sqlite.Open(t.Context(), path, &sqlite.Options{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ProbeWrite(t.Context()); err != nil {
		t.Fatalf("ProbeWrite of a healthy store: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.ProbeWrite(t.Context()); err == nil {
		t.Error("ProbeWrite while another connection holds the write lock: no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %v, want about the 200ms busy timeout", d)
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.AuditLog().Append(t.Context(), &audit.Record{Kind: audit.KindExpired, Actor: audit.Actor{Source: audit.SourceSystem}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "UPDATE audit_records SET body = '{'"); err != nil {
		t.Fatal(err)
	}
	if err := s.ProbeWrite(t.Context()); !errors.Is(err, audit.ErrBroken) {
		t.Errorf("ProbeWrite with a broken last audit record: %v, want ErrBroken", err)
	}
}
