package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/records/recordstest"
	"github.com/toolgate/toolgate/store/sqlite"
)

func openRecords(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := t.TempDir() + "/records.db"
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	recs(t, s) // the records' tables, for the tests that write rows
	return s, path
}

// recs returns the record store of s.
func recs(t testing.TB, s *sqlite.Store) records.Store {
	t.Helper()
	rs, err := s.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRecords(t *testing.T) {
	recordstest.Run(t, func(t *testing.T) records.Store {
		s, _ := openRecords(t)
		return recs(t, s)
	})
}

// TestRecordsShared runs the kit's concurrency on two Stores of one file,
// as two server instances use it.
func TestRecordsShared(t *testing.T) {
	a, path := openRecords(t)
	b, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	d := &records.Decision{ConversationID: "c", PauseID: "p", Source: records.SourcePerson, DecidedBy: "bob", Outcome: records.OutcomeDeciding, Decisions: []toolgate.Decision{}}
	if prior, err := recs(t, a).Begin(ctx, d); err != nil || prior != nil {
		t.Fatalf("Begin on a: %v, %v", prior, err)
	}
	d2 := *d
	d2.DecidedBy = "cy"
	prior, err := recs(t, b).Begin(ctx, &d2)
	if err != nil || prior == nil || prior.DecidedBy != "bob" {
		t.Fatalf("Begin on b: %+v, %v; want bob's record", prior, err)
	}
}

// TestRecordsCorrupt checks that damaged rows give errors wrapping
// toolgate.ErrCorrupt, never a panic or a different record.
func TestRecordsCorrupt(t *testing.T) {
	s, path := openRecords(t)
	db := raw(t, path)
	mustExec(t, db, `INSERT INTO server_conversations (id, agent, owner_id, owner, created_at) VALUES ('c1', 'a', 'ada', '{"id":"bob"}', 1)`)
	mustExec(t, db, `INSERT INTO server_conversations (id, agent, owner_id, owner, created_at) VALUES ('c2', 'a', 'ada', 'not json', 1)`)
	mustExec(t, db, `INSERT INTO server_decisions (conversation_id, pause_id, outcome, record) VALUES ('c1', 'p1', 'decided', '{"source":"robot"}')`)
	mustExec(t, db, `INSERT INTO server_decisions (conversation_id, pause_id, outcome, record) VALUES ('c1', 'p2', 'won', '{"source":"person"}')`)
	mustExec(t, db, `INSERT INTO server_decisions (conversation_id, pause_id, outcome, record) VALUES ('c1', 'p3', 'decided', '{"source":"person","decisions":[{"key":"k","verdict":"maybe"}]}')`)
	mustExec(t, db, `INSERT INTO server_approvals (conversation_id, pause_id, approver, approved_at, decisions) VALUES ('c1', 'p1', 'bob', 1, '{')`)
	rs := recs(t, s)
	ctx := t.Context()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, toolgate.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", what, err)
		}
	}
	_, err := rs.Conversation(ctx, "c1")
	check("owner of another id", err)
	_, err = rs.Conversation(ctx, "c2")
	check("owner not JSON", err)
	_, err = rs.ListConversations(ctx, nil)
	check("list", err)
	for _, p := range []string{"p1", "p2", "p3"} {
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
		s, _ := openRecords(b)
		return recs(b, s)
	})
}

// TestRecordsInTransactions runs the kit of hooks in the store's
// transactions, on two Stores of one file as two instances would use it.
func TestRecordsInTransactions(t *testing.T) {
	recordstest.RunTx(t, func(t *testing.T) recordstest.TxOpener {
		path := t.TempDir() + "/records.db"
		return func(t *testing.T) (toolgate.ConversationStore, records.Transactional) {
			s, err := sqlite.Open(t.Context(), path, &sqlite.Options{BusyTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, recs(t, s).(records.Transactional)
		}
	})
}

// TestGrantDigestMigration: a sticky grant stored with a digest of the
// form before the canonical one ends when the schema is upgraded; a grant
// for any arguments and one of the current form stay.
func TestGrantDigestMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	current := records.ArgumentsDigest(`{"flight":"VX205"}`)
	for _, g := range []records.Grant{
		{ID: "old", ArgumentsDigest: strings.Repeat("ab", 32)},
		{ID: "any"},
		{ID: "current", ArgumentsDigest: current},
	} {
		g.ConversationID, g.Tool, g.GrantedBy, g.GrantedAt, g.ExpiresAt = "conv_1", "bookFlight", "bob", at, at.Add(time.Hour)
		if err := rs.AddGrant(t.Context(), &g); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db := raw(t, path)
	// The records' schema as the build before the canonical digest left it.
	undoPendingTools(t, db)
	mustExec(t, db, "DELETE FROM server_schema_version WHERE version > 1")
	db.Close()

	s, err = sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err = s.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err := rs.Grants(t.Context(), "conv_1", at)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range got {
		ids = append(ids, g.ID)
	}
	if fmt.Sprint(ids) != "[any current]" {
		t.Errorf("live grants after the upgrade: %v, want [any current]", ids)
	}
}
