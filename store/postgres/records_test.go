package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/records/recordstest"
	"github.com/toolgate/toolgate/store/postgres"
)

// recs returns the record store of s.
func recs(t testing.TB, s *postgres.Store) records.Store {
	t.Helper()
	rs, err := s.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRecords(t *testing.T) {
	recordstest.Run(t, func(t *testing.T) records.Store {
		s, _ := open(t)
		return recs(t, s)
	})
}

// TestRecordsShared takes one pause through two Stores with pools of their
// own on one schema, as two server instances do.
func TestRecordsShared(t *testing.T) {
	a, schema := open(t)
	other := openIn(t, schema)
	ctx := t.Context()
	d := &records.Decision{ConversationID: "c", PauseID: "p", Source: records.SourcePerson, DecidedBy: "bob", Outcome: records.OutcomeDeciding, Decisions: []toolgate.Decision{}}
	if prior, err := recs(t, a).Begin(ctx, d); err != nil || prior != nil {
		t.Fatalf("Begin on a: %v, %v", prior, err)
	}
	d2 := *d
	d2.DecidedBy = "cy"
	prior, err := recs(t, other).Begin(ctx, &d2)
	if err != nil || prior == nil || prior.DecidedBy != "bob" {
		t.Fatalf("Begin on b: %+v, %v; want bob's record", prior, err)
	}
}

// TestRecordsCorrupt checks that damaged rows give errors wrapping
// toolgate.ErrCorrupt, never a panic or a different record.
func TestRecordsCorrupt(t *testing.T) {
	s, schema := open(t)
	rs := recs(t, s)
	db := raw(t, schema)
	mustExec(t, db, `INSERT INTO server_conversations (id, agent, owner_id, owner, created_at) VALUES ('c1', 'a', 'ada', '{"id":"bob"}', 1)`)
	mustExec(t, db, `INSERT INTO server_decisions (conversation_id, pause_id, outcome, record) VALUES ('c1', 'p1', 'decided', '{"source":"robot"}')`)
	mustExec(t, db, `INSERT INTO server_decisions (conversation_id, pause_id, outcome, record) VALUES ('c1', 'p2', 'won', '{"source":"person"}')`)
	mustExec(t, db, `INSERT INTO server_approvals (conversation_id, pause_id, approver, approved_at, decisions) VALUES ('c1', 'p1', 'bob', 1, '{')`)
	ctx := t.Context()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, toolgate.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", what, err)
		}
	}
	_, err := rs.Conversation(ctx, "c1")
	check("owner of another id", err)
	_, _, err = rs.(records.ConversationLoader).LoadConversation(ctx, "c1")
	check("owner of another id, loaded with the conversation", err)
	_, err = rs.ListConversations(ctx, nil)
	check("list", err)
	for _, p := range []string{"p1", "p2"} {
		_, err = rs.Decision(ctx, "c1", p)
		check("decision "+p, err)
	}
	_, err = rs.Decisions(ctx, "c1")
	check("decisions", err)
	_, err = rs.Approval(ctx, "c1", "p1")
	check("approval", err)
}

func BenchmarkRecords(b *testing.B) {
	recordstest.Benchmark(b, func(b *testing.B) records.Store {
		s, _ := open(b)
		return recs(b, s)
	})
}

// TestRecordsInTransactions runs the kit of hooks in the store's
// transactions, on Stores with pools of their own on one schema, as
// instances of a service use it.
func TestRecordsInTransactions(t *testing.T) {
	recordstest.RunTx(t, func(t *testing.T) recordstest.TxOpener {
		schema := newSchema(t)
		return func(t *testing.T) (toolgate.ConversationStore, records.Transactional) {
			s := openIn(t, schema)
			return s, recs(t, s).(records.Transactional)
		}
	})
}

// TestLoadConversation reads a conversation's record and the conversation
// in one statement: the same values as Conversation and Load, with and
// without a pause, and ErrNotFound without a record.
func TestLoadConversation(t *testing.T) {
	s, _ := open(t)
	rs := recs(t, s)
	l, ok := rs.(records.ConversationLoader)
	if !ok {
		t.Fatal("the record store is not a records.ConversationLoader")
	}
	ctx := t.Context()
	owner := toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}
	at := time.Unix(1700000000, 123000000)
	for _, id := range []string{"empty", "paused", "messages"} {
		if err := rs.CreateConversation(ctx, &records.Conversation{ID: id, Agent: "flights", Owner: owner, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}}
	if err := s.Append(ctx, "paused", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "book it"}, reply},
		Pause: &toolgate.PauseRecord{ID: "p1", Awaiting: []string{"c1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "messages", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}, &toolgate.AssistantMessage{Text: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"empty", "paused", "messages"} {
		wantRec, err := rs.Conversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantConv, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rec, conv, err := l.LoadConversation(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if diff := cmp.Diff(wantRec, rec); diff != "" {
			t.Errorf("%s: record mismatch (-Conversation +LoadConversation):\n%s", id, diff)
		}
		if diff := cmp.Diff(wantConv, conv); diff != "" {
			t.Errorf("%s: conversation mismatch (-Load +LoadConversation):\n%s", id, diff)
		}
	}
	if _, conv, err := l.LoadConversation(ctx, "paused"); err != nil || conv.Pause == nil || conv.Pause.ID != "p1" || len(conv.Messages) != 2 {
		t.Errorf("paused: %+v, %v; want its pause p1 on 2 messages", conv, err)
	}
	// Messages without a record, and nothing at all.
	if err := s.Append(ctx, "norecord", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"norecord", "nothing"} {
		if _, _, err := l.LoadConversation(ctx, id); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", id, err)
		}
	}
}
