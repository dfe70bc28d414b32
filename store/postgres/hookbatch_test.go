package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
	"github.com/toolgate/toolgate/records"
)

// TestHookedWriteSendsItsLastStatementsWithCommit checks the writes whose
// audit inserts and NOTIFYs wait for the COMMIT: when they commit, the
// audit records are in the log and the notification is delivered; when a
// statement sent with the COMMIT fails (here the insert of an audit record
// whose sequence number another writer took, bypassing the chain's lock),
// nothing of the write is stored.
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
	var fork bool
	hook := func(ctx context.Context, tx records.Tx, w *records.Write) error {
		sealed = audittest.Sample(1)
		sealed.ConversationID = w.ConversationID
		if err := tx.Audit(sealed); err != nil {
			return err
		}
		if err := tx.(records.Notifier).Notify("toolgate test channel", []byte("appended "+w.ConversationID)); err != nil {
			return err
		}
		if fork {
			// Another writer takes the record's place in the chain.
			mustExec(t, other, "INSERT INTO audit_records (seq, conversation_id, body) VALUES ($1, 'other', '{}')", int64(sealed.Seq))
		}
		return nil
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
	var got []*audit.Record
	for r, err := range s.AuditLog().Records(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 1 || got[0].Seq != sealed.Seq || got[0].ConversationID != "c1" {
		t.Errorf("audit log %+v, want the one record of c1", got)
	}

	fork = true
	err = s.Append(hctx, "c2", &toolgate.AppendParams{Messages: []toolgate.Message{msg}})
	if err == nil {
		t.Fatal("Append whose audit insert conflicts at COMMIT: no error")
	}
	if conv, err := s.Load(ctx, "c2"); err != nil || len(conv.Messages) != 0 {
		t.Errorf("Load of the conversation whose append failed: %v; want no messages", err)
	}
	var rows int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM audit_records WHERE conversation_id = 'c2'").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("audit rows of c2: %d, %v; want none", rows, err)
	}
	// Without the other writer's row, the store goes on: the next write
	// commits after the first record.
	mustExec(t, other, "DELETE FROM audit_records WHERE conversation_id = 'other'")
	fork = false
	if err := s.Append(hctx, "c3", &toolgate.AppendParams{Messages: []toolgate.Message{msg}}); err != nil {
		t.Fatalf("Append after the failed one: %v", err)
	}
	if sealed.Seq != got[0].Seq+1 {
		t.Errorf("the record after the failed write has seq %d, want %d", sealed.Seq, got[0].Seq+1)
	}
}
