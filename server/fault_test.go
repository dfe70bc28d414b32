package server_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

// faultHistory checks what a fault suite's run left for the pauses
// (conversation → pause) it decided once each: every pause resolved once
// (its record decided, out of the inbox), bookFlight run once per pause,
// exactly one requested, one decided and one executed record per call in
// the store's audit log, and the chain intact.
func faultHistory(t *testing.T, f *fixture, rs records.Store, log audit.Log, pauses map[string]string, booked int32) {
	t.Helper()
	faultHistoryOutcome(t, f, rs, log, pauses, booked, records.OutcomeDecided)
}

// faultHistoryOutcome is faultHistory with the outcome the decisions'
// records must have; "" takes any, and then the inbox is not checked (a
// failed resumption stays indexed for the recovery).
func faultHistoryOutcome(t *testing.T, f *fixture, rs records.Store, log audit.Log, pauses map[string]string, booked int32, outcome records.Outcome) {
	t.Helper()
	ctx := context.Background()
	if _, book := f.runs(); book != booked {
		t.Errorf("bookFlight ran %d times, want %d: once per pause", book, booked)
	}
	for conv, pause := range pauses {
		rec, err := rs.Decision(ctx, conv, pause)
		if err != nil || outcome != "" && rec.Outcome != outcome {
			t.Errorf("decision of %s: %+v, %v; want %q", conv, rec, err, outcome)
		}
		var kinds []string
		for r, err := range log.Records(ctx, &audit.Query{ConversationID: conv}) {
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, string(r.Kind)+" "+r.CallKey)
		}
		want := []string{"requested call_book", "decided call_book", "executed call_status", "executed call_book"}
		if !slices.Equal(kinds, want) {
			t.Errorf("audit records of %s: %v, want %v", conv, kinds, want)
		}
	}
	if page, err := rs.ListPending(ctx, nil); outcome != "" && (err != nil || len(page.Pending) != 0) {
		t.Errorf("inbox index after the run: %+v, %v; want empty", page, err)
	}
	if rep, err := audit.Verify(ctx, log, nil); err != nil || rep.Records != uint64(4*len(pauses)) {
		t.Errorf("Verify = %+v, %v; want %d intact records", rep, err, 4*len(pauses))
	}
}

// TestFaultLockedSQLite: another connection holds the SQLite store's write
// lock past the store's bound. Decisions sent meanwhile fail fast with 503
// and Retry-After, /readyz fails, and nothing of them is carried out; once
// the lock is gone their retries with the same Idempotency-Key decide each
// pause once, with its records, and a second retry answers the same.
func TestFaultLockedSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	st, err := sqlite.Open(t.Context(), path, &sqlite.Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rs := mustRecords(t, st)
	f := newFixtureWith(t, st, flightdemo.Model(), func(c *server.Config) { c.Audit = st.AuditLog() })
	pauses := map[string]string{}
	for range 3 {
		conv, pause := f.pause(travellerKey)
		pauses[conv] = pause
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
	key := func(conv string) string { return "decide-" + conv }
	for conv, pause := range pauses {
		start := time.Now()
		rec := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, key(conv), allowBook)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("decision while the store is locked: %d %s (Retry-After %q), want 503 with Retry-After", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the refused decision took %v, want it to fail fast", d)
		}
	}
	ready := httptest.NewRecorder()
	f.h.ServeHTTP(ready, httptest.NewRequest("GET", "/readyz", nil))
	if ready.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while the store is locked: %d, want 503", ready.Code)
	}
	if _, book := f.runs(); book != 0 {
		t.Fatalf("bookFlight ran %d times while the store was locked, want 0", book)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}

	answers := map[string]string{}
	for conv, pause := range pauses {
		rec := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, key(conv), allowBook)
		if out := decodeBody(t, rec); rec.Code != http.StatusOK || out["status"] != "completed" {
			t.Fatalf("retry once the lock is gone: %d %s, want 200 completed", rec.Code, rec.Body)
		}
		answers[conv] = rec.Body.String()
	}
	for conv, pause := range pauses {
		rec := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, key(conv), allowBook)
		if rec.Code != http.StatusOK || rec.Body.String() != answers[conv] {
			t.Errorf("second retry: %d %s, want the first answer", rec.Code, rec.Body)
		}
	}
	faultHistory(t, f, rs, st.AuditLog(), pauses, int32(len(pauses)))
}
