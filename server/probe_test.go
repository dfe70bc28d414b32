package server_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

// TestReadyzProbesWrites holds the store's write lock from another
// connection, as a stuck process would: /readyz fails the store's check
// (a ping would still answer), and passes again once the lock is gone. A
// broken last audit record fails it too.
func TestReadyzProbesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	st, err := sqlite.Open(t.Context(), path, &sqlite.Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{Store: st})
	srv, err := server.New(&server.Config{Agents: map[string]*server.Agent{"flights": {Client: client}}, Records: mustRecords(t, st), Audit: st.AuditLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}

	unlock := lockSQLite(t, path)
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping while the write lock is held: %v (the test needs a store that still answers reads)", err)
	}
	// An anonymous caller sees the agents' stores as one check.
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, `"stores":"failed"`) {
		t.Errorf("/readyz while the write lock is held: %d %s, want 503 with the stores failed", code, body)
	}
	unlock()
	if code, body := ready(); code != http.StatusOK || !strings.Contains(body, `"audit":"ok"`) {
		t.Errorf("/readyz once the lock is gone: %d %s, want 200 with the audit log checked", code, body)
	}
}

// lockSQLite takes the write lock of the SQLite database at path from a
// connection of its own, as a stuck process would, and returns the
// function that lets it go.
func lockSQLite(t *testing.T, path string) (unlock func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
}
