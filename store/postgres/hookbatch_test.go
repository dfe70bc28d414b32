package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
	"github.com/toolgate/toolgate/records"
)

// TestHookedWriteSendsItsLastStatementsWithCommit checks the writes whose
// audit inserts and NOTIFYs wait for the COMMIT: when they commit, the
// audit records are in the log and the notification is delivered; when a
// statement sent with the COMMIT fails (here the insert of an audit record
// that a constraint added by another writer refuses), nothing of the
// write is stored. The records go in unsealed; the store's audit log seals
// them after the commit.
func TestHookedWriteSendsItsLastStatementsWithCommit(t *testing.T) {
	s, schema := open(t)
	ctx := t.Context()
	rs, err := s.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listener := raw(t, schema)
	mustExec(t, listener, `LISTEN "toolgate test channel"`)
	other := raw(t, schema)

	var sealed *audit.Record
	hook := func(ctx context.Context, tx records.Tx, w *records.Write) error {
		sealed = audittest.Sample(1)
		sealed.ConversationID = w.ConversationID
		if err := tx.Audit(sealed); err != nil {
			return err
		}
		return tx.(records.Notifier).Notify("toolgate test channel", []byte("appended "+w.ConversationID))
	}
	hctx := records.WithHook(ctx, rs, hook)
	msg := &toolgate.UserMessage{Text: "hello"}

	if err := s.Append(hctx, "c1", &toolgate.AppendParams{Messages: []toolgate.Message{msg}}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(wait)
	if err != nil || n.Payload != "appended c1" {
		t.Errorf("notification %+v, %v; want the one sent with the commit", n, err)
	}
	if _, err := s.AuditLog().SealPending(ctx); err != nil {
		t.Fatal(err)
	}
	var got []*audit.Record
	for r, err := range s.AuditLog().Records(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 1 || got[0].Seq != 1 || got[0].ConversationID != "c1" {
		t.Errorf("audit log %+v, want the one record of c1", got)
	}

	mustExec(t, other, "ALTER TABLE audit_unsealed ADD CONSTRAINT refuse_c2 CHECK (conversation_id <> 'c2')")
	err = s.Append(hctx, "c2", &toolgate.AppendParams{Messages: []toolgate.Message{msg}})
	if err == nil {
		t.Fatal("Append whose audit insert conflicts at COMMIT: no error")
	}
	if conv, err := s.Load(ctx, "c2"); err != nil || len(conv.Messages) != 0 {
		t.Errorf("Load of the conversation whose append failed: %v; want no messages", err)
	}
	var rows int
	if err := other.QueryRow(ctx, "SELECT (SELECT count(*) FROM audit_records WHERE conversation_id = 'c2') + (SELECT count(*) FROM audit_unsealed WHERE conversation_id = 'c2')").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("audit rows of c2: %d, %v; want none", rows, err)
	}
	// Without the constraint, the store goes on: the next write's record
	// is sealed after the first.
	mustExec(t, other, "ALTER TABLE audit_unsealed DROP CONSTRAINT refuse_c2")
	if err := s.Append(hctx, "c3", &toolgate.AppendParams{Messages: []toolgate.Message{msg}}); err != nil {
		t.Fatalf("Append after the failed one: %v", err)
	}
	if _, err := s.AuditLog().SealPending(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(ctx, s.AuditLog(), nil)
	if err != nil || rep.Records != 2 || rep.Unsealed != 0 {
		t.Errorf("Verify after the write that followed the failed one: %+v, %v; want 2 records", rep, err)
	}
}

// TestHookedAppendWritesFailWithTheHooksStatement checks an append whose
// own writes wait for the hook's first statement whose result it needs:
// when one of them fails (here the insert of the messages, which a
// constraint added by another writer refuses), the hook's statement, an
// Exec (Begin) or a QueryRow (Finish), fails with that error, not with a
// result of its own (a refused Begin or a decision not found), the append
// fails with it, and nothing of the append or of the hook is stored. The
// store goes on once the constraint is gone.
func TestHookedAppendWritesFailWithTheHooksStatement(t *testing.T) {
	s, schema := open(t)
	ctx := t.Context()
	rs, err := s.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := raw(t, schema)
	msg := &toolgate.UserMessage{Text: "hello"}
	begin := func(conv string) *records.Decision {
		return &records.Decision{ConversationID: conv, PauseID: "p1", Source: records.SourcePerson, DecidedBy: "bob",
			DecidedAt: time.Unix(1700000000, 0), Outcome: records.OutcomeDeciding}
	}
	for _, tc := range []struct {
		name string
		conv string
		hook records.Hook
	}{
		{"Exec", "c_exec", func(ctx context.Context, tx records.Tx, w *records.Write) error {
			old, err := tx.Begin(begin(w.ConversationID))
			if err == nil && old != nil {
				return fmt.Errorf("Begin found a record %+v", old)
			}
			return err
		}},
		{"QueryRow", "c_query", func(ctx context.Context, tx records.Tx, w *records.Write) error {
			return tx.Finish(w.ConversationID, "p1", records.OutcomeDecided)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustExec(t, other, fmt.Sprintf("ALTER TABLE messages ADD CONSTRAINT refuse CHECK (conversation_id <> '%s')", tc.conv))
			hctx := records.WithHook(ctx, rs, tc.hook)
			err := s.Append(hctx, tc.conv, &toolgate.AppendParams{Messages: []toolgate.Message{msg}})
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23514" || errors.Is(err, records.ErrNotFound) {
				t.Fatalf("Append whose message insert fails with the hook's statement: %v; want the check violation (23514)", err)
			}
			if conv, err := s.Load(ctx, tc.conv); err != nil || len(conv.Messages) != 0 {
				t.Errorf("Load of the conversation whose append failed: %+v, %v; want no messages", conv, err)
			}
			if d, err := rs.Decision(ctx, tc.conv, "p1"); !errors.Is(err, records.ErrNotFound) {
				t.Errorf("Decision after the failed append: %+v, %v; want none", d, err)
			}
			mustExec(t, other, "ALTER TABLE messages DROP CONSTRAINT refuse")
			// The same hook once the writes pass: Begin stores its record;
			// Finish finds none to finish.
			err = s.Append(hctx, tc.conv, &toolgate.AppendParams{Messages: []toolgate.Message{msg}})
			switch tc.name {
			case "Exec":
				if err != nil {
					t.Fatalf("Append after the constraint is gone: %v", err)
				}
				if _, err := rs.Decision(ctx, tc.conv, "p1"); err != nil {
					t.Errorf("Decision written with the append: %v", err)
				}
			case "QueryRow":
				if !errors.Is(err, records.ErrNotFound) {
					t.Fatalf("Append whose hook finishes no decision: %v; want ErrNotFound", err)
				}
				if conv, err := s.Load(ctx, tc.conv); err != nil || len(conv.Messages) != 0 {
					t.Errorf("Load after the refused append: %+v, %v; want no messages", conv, err)
				}
			}
		})
	}
}
