package server_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

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

	unlock := lockSQLite(t, path)
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
	unlock()

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
	checkFaultInvariants(t, []*fixture{f}, rs, st.AuditLog(), pauses, records.OutcomeDecided)
}
