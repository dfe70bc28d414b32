package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

// TestAuditInStore takes a pause through allow and deny with the records
// and the audit log in the SQLite store's database: the records are the
// same as with a separate log, the chain verifies, and the decision's
// outcome and the inbox agree with them.
func TestAuditInStore(t *testing.T) {
	f := newAuditFixture(t, auditOptions{inStore: true})
	conv, pause := f.pause(travellerKey)
	f.check(conv, "requested P call_book person:ada awaiting a decision")
	if item := f.inboxItem(approverKey); item == nil || item["pause_id"] != pause {
		t.Fatalf("inbox item %v, want pause %s", item, pause)
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	f.check(conv,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob allow",
		"executed P call_status person:bob ok",
		"executed P call_book person:bob ok",
	)
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	ds := got["decisions"].([]any)
	if len(ds) != 1 || ds[0].(map[string]any)["outcome"] != "decided" {
		t.Errorf("decision records %v, want one decided", ds)
	}
	if items := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(items) != 0 {
		t.Errorf("the inbox still holds %v", items)
	}

	conv2, pause2 := f.pause(travellerKey)
	f.must(200, "POST", decisionsPath(conv2, pause2), approverKey, `{"decisions":[{"key":"call_book","verdict":"deny","message":"no"}]}`)
	f.check(conv2,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob deny",
		"executed P call_status person:bob ok",
		"denied P call_book person:bob denied; message "+audit.Digest([]byte("no")),
	)
	if rep, err := audit.Verify(t.Context(), f.log, nil); err != nil || rep.Records != 8 {
		t.Errorf("Verify = %+v, %v; want 8 intact records", rep, err)
	}
}

// TestPauseStoredWithItsRecords breaks the audit log's last record, so
// that no audit record can be appended, and posts a message that pauses:
// the request fails, and nothing of the pause is stored — no pause
// missing from the inbox or without its requested record. With the log
// repaired the same message pauses, fully recorded.
func TestPauseStoredWithItsRecords(t *testing.T) {
	f := newAuditFixture(t, auditOptions{inStore: true})
	conv0, _ := f.pause(travellerKey)
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(f.path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var body string
	if err := db.QueryRow("SELECT body FROM audit_records ORDER BY seq DESC LIMIT 1").Scan(&body); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE audit_records SET body = '{' WHERE seq = (SELECT max(seq) FROM audit_records)"); err != nil {
		t.Fatal(err)
	}

	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`); code != 500 {
		t.Fatalf("a message whose pause cannot be audited: %d %v, want 500", code, out)
	}
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	if got["pause"] != nil {
		t.Errorf("a pause was stored although its records were not: %v", got["pause"])
	}
	for _, item := range f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any) {
		if item.(map[string]any)["conversation_id"] == conv {
			t.Errorf("the inbox shows the pause whose records were not written")
		}
	}

	if _, err := db.Exec("UPDATE audit_records SET body = ? WHERE seq = (SELECT max(seq) FROM audit_records)", body); err != nil {
		t.Fatal(err)
	}
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("after the repair: %v, want paused", out)
	}
	f.check(conv, "requested P call_book person:ada awaiting a decision")
	f.check(conv0, "requested P call_book person:ada awaiting a decision")
}

// writeCounter wraps the records of a store, counting the writes made
// outside the store's own transactions (its record writes, and appends to
// its audit log).
type writeCounter struct {
	records.Transactional
	log    *countingLog
	writes atomic.Int64
}

func (w *writeCounter) Unwrap() records.Store { return w.Transactional }
func (w *writeCounter) AuditLog() audit.Log   { return w.log }
func (w *writeCounter) Begin(ctx context.Context, d *records.Decision) (*records.Decision, error) {
	w.writes.Add(1)
	return w.Transactional.Begin(ctx, d)
}
func (w *writeCounter) Finish(ctx context.Context, conv, pause string, o records.Outcome) error {
	w.writes.Add(1)
	return w.Transactional.Finish(ctx, conv, pause, o)
}
func (w *writeCounter) AddPending(ctx context.Context, p *records.Pending) error {
	w.writes.Add(1)
	return w.Transactional.AddPending(ctx, p)
}
func (w *writeCounter) RemovePending(ctx context.Context, conv, pause string) error {
	w.writes.Add(1)
	return w.Transactional.RemovePending(ctx, conv, pause)
}

// countingLog counts the appends to the log it wraps.
type countingLog struct {
	audit.Log
	appends atomic.Int64
}

func (l *countingLog) Append(ctx context.Context, recs ...*audit.Record) error {
	l.appends.Add(1)
	return l.Log.Append(ctx, recs...)
}

// TestDecisionInStoreTransactions: with the records and the audit log in
// the store's database, a pause, its decision, the resolution and the
// answer write nothing outside the store's transactions: the decision
// record and its decided records go with the claim, the executed records
// with the resolution, the outcome with the answer. The records and the
// audit log say what happened all the same.
func TestDecisionInStoreTransactions(t *testing.T) {
	s, err := sqlite.Open(t.Context(), t.TempDir()+"/toolgate.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tx := mustRecords(t, s).(records.Transactional)
	wc := &writeCounter{Transactional: tx, log: &countingLog{Log: tx.AuditLog()}}
	f := newFixtureWith(t, s, flightdemo.Model(), func(cfg *server.Config) {
		cfg.Records, cfg.Audit = wc, wc.log
	})
	conv, pause := f.pause(travellerKey)
	out := f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	if out["status"] != "completed" {
		t.Fatalf("decision: %v, want completed", out)
	}
	if n, a := wc.writes.Load(), wc.log.appends.Load(); n != 0 || a != 0 {
		t.Errorf("%d record writes and %d audit appends outside the store's transactions, want none", n, a)
	}
	rec, err := tx.Decision(t.Context(), conv, pause)
	if err != nil || rec.Outcome != records.OutcomeDecided || rec.DecidedBy != "bob" {
		t.Errorf("decision record %+v, %v; want decided by bob", rec, err)
	}
	var kinds []string
	for r, err := range tx.AuditLog().Records(t.Context(), &audit.Query{ConversationID: conv}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, string(r.Kind)+" "+r.CallKey)
	}
	want := []string{"requested call_book", "decided call_book", "executed call_status", "executed call_book"}
	if !slices.Equal(kinds, want) {
		t.Errorf("audit records %v, want %v", kinds, want)
	}
	if page, err := tx.ListPending(t.Context(), nil); err != nil || len(page.Pending) != 0 {
		t.Errorf("index after the decision: %+v, %v; want empty", page, err)
	}
}

// lostClaims is a store whose claims fail: after committing (the answer
// of the commit lost, as with a connection dropped mid-commit) when
// commit is set, before writing anything otherwise.
type lostClaims struct {
	*sqlite.Store
	commit bool
	armed  atomic.Bool
}

func (s *lostClaims) Unwrap() toolgate.ConversationStore { return s.Store }

func (s *lostClaims) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	if !s.armed.Swap(false) {
		return s.Store.ClaimPause(ctx, id, pauseID, c)
	}
	if s.commit {
		if err := s.Store.ClaimPause(ctx, id, pauseID, c); err != nil {
			return err
		}
	}
	return errors.New("connection lost")
}

// TestDecisionClaimLost: a decision whose claim fails is answered 500, and
// the records say what the store holds. When the claim did not commit,
// nothing was decided: the pause stays in the inbox and another decision
// takes it. When it committed and only its answer was lost, the decision
// stands: its record says "failed", not forgotten, and a second decision
// is answered 409 with the first one.
func TestDecisionClaimLost(t *testing.T) {
	for _, commit := range []bool{false, true} {
		t.Run(fmt.Sprintf("committed %v", commit), func(t *testing.T) {
			st, err := sqlite.Open(t.Context(), t.TempDir()+"/toolgate.db", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			store := &lostClaims{Store: st, commit: commit}
			rs := mustRecords(t, st)
			f := newFixtureWith(t, store, flightdemo.Model(), func(cfg *server.Config) { cfg.Records = rs })
			conv, pause := f.pause(travellerKey)
			store.armed.Store(true)
			f.must(500, "POST", decisionsPath(conv, pause), approverKey, allowBook)
			rec, err := rs.Decision(t.Context(), conv, pause)
			if !commit {
				if !errors.Is(err, records.ErrNotFound) {
					t.Errorf("decision record after a claim that did not commit: %+v, %v; want none", rec, err)
				}
				if item := f.inboxItem(approverKey); item["pause_id"] != pause {
					t.Errorf("inbox %v, want the pause", item)
				}
				if out := f.must(200, "POST", decisionsPath(conv, pause), approver2Key, allowBook); out["status"] != "completed" {
					t.Errorf("a second decision: %v, want completed", out)
				}
				return
			}
			if err != nil || rec.Outcome != records.OutcomeFailed || rec.DecidedBy != "bob" {
				t.Errorf("decision record after a committed claim: %+v, %v; want bob's, failed", rec, err)
			}
			out := f.must(409, "POST", decisionsPath(conv, pause), approver2Key, allowBook)
			if d, _ := out["decision"].(map[string]any); out["error"] != "already_decided" || d["decided_by"] != "bob" {
				t.Errorf("a second decision: %v, want 409 with bob's", out)
			}
		})
	}
}
