package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
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

// TestStatementTimeout locks the store's tables from another connection,
// as a stalled or locked database would hold them: every operation of the
// store fails within its statement timeout, with an error matching
// context.DeadlineExceeded, instead of waiting for the lock; once the lock
// is gone they work again.
func TestStatementTimeout(t *testing.T) {
	schema := newSchema(t)
	s, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema, StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs := recs(t, s) // the records' tables, locked below
	if err := s.ProbeWrite(t.Context()); err != nil {
		t.Fatalf("ProbeWrite of a healthy store: %v", err)
	}
	conn := raw(t, schema)
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE conversations, messages, pauses, server_pending, audit_schema IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"Load", func() error { _, err := s.Load(t.Context(), "c"); return err }},
		{"Append", func() error {
			return s.Append(t.Context(), "c", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}})
		}},
		{"ClaimPause", func() error { return s.ClaimPause(t.Context(), "c", "p", &toolgate.Claim{Token: "t"}) }},
		{"ListPending", func() error { _, err := rs.ListPending(t.Context(), nil); return err }},
		{"ProbeWrite", func() error { return s.ProbeWrite(t.Context()) }},
	} {
		if err := op.run(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s while the tables are locked: %v, want DeadlineExceeded", op.name, err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("five refusals took %v, want about five times the 200ms timeout", d)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Once the lock is gone the same store serves again. The operations
	// cut off above may have cost their connections, and a loaded machine
	// can take longer than the short timeout to open new ones: a bounded
	// number of attempts, each under the store's own deadline.
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"Load", func() error { _, err := s.Load(t.Context(), "c"); return err }},
		{"ProbeWrite", func() error { return s.ProbeWrite(t.Context()) }},
	} {
		var err error
		for range 25 {
			if err = op.run(); !errors.Is(err, context.DeadlineExceeded) {
				break
			}
		}
		if err != nil {
			t.Errorf("%s once the lock is gone: %v", op.name, err)
		}
	}
}
