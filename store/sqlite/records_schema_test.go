package sqlite_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/store/sqlite"
)

// tables returns the names of the tables of the file at path, sorted.
func tables(t *testing.T, path string) []string {
	t.Helper()
	rows, err := raw(t, path).Query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// recordsVersions returns the versions in server_schema_version.
func recordsVersions(t *testing.T, path string) []int {
	t.Helper()
	rows, err := raw(t, path).Query("SELECT version FROM server_schema_version ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

var serviceTables = []string{"server_approvals", "server_conversations", "server_decisions", "server_grants", "server_pending", "server_schema_version"}

// TestOpenCreatesNoRecords checks that a store used for conversations only
// has no tables of the approval service (only those of the conversations
// and of the audit log, which the store's own writes may append to), and
// that Records creates them, once.
func TestOpenCreatesNoRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s := openAt(t, path, nil)
	atOpen := []string{"audit_records", "audit_schema", "messages", "pauses", "vaults"}
	if got := tables(t, path); !slices.Equal(got, atOpen) {
		t.Fatalf("tables after Open: %v, want %v", got, atOpen)
	}
	rs := recs(t, s)
	want := append(slices.Clone(atOpen), serviceTables...)
	slices.Sort(want)
	if got := tables(t, path); !slices.Equal(got, want) {
		t.Fatalf("tables after Records: %v, want %v", got, want)
	}
	if got, want := recordsVersions(t, path), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
	if again := recs(t, s); again != rs {
		t.Errorf("a second Records returned another store")
	}
	// Another Store on the file finds the tables made.
	other := openAt(t, path, nil)
	if err := recs(t, other).CreateConversation(t.Context(), &records.Conversation{ID: "c", Agent: "a", Owner: toolgate.Principal{ID: "ada"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := rs.Conversation(t.Context(), "c"); err != nil || c.Owner.ID != "ada" {
		t.Errorf("Conversation through the first store: %+v, %v", c, err)
	}
}

// TestRecordsOfEarlierBuild opens a database whose records were created by
// the conversations' migration 3 of an earlier build (no
// server_schema_version): its rows stay, it counts as version 1, and it
// is upgraded from there.
func TestRecordsOfEarlierBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s := openAt(t, path, nil)
	if err := recs(t, s).CreateConversation(t.Context(), &records.Conversation{ID: "c", Agent: "a", Owner: toolgate.Principal{ID: "ada"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	mustExec(t, raw(t, path), "DROP TABLE server_schema_version")

	s = openAt(t, path, nil)
	c, err := recs(t, s).Conversation(t.Context(), "c")
	if err != nil || c.Owner.ID != "ada" {
		t.Fatalf("Conversation after the upgrade: %+v, %v", c, err)
	}
	// Version 1, then every later migration of this build.
	if got, want := recordsVersions(t, path), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
}

// TestRecordsSchemaNewer checks that records written by a newer build are
// refused, while the conversations stay usable.
func TestRecordsSchemaNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s := openAt(t, path, nil)
	recs(t, s)
	s.Close()
	mustExec(t, raw(t, path), "INSERT INTO server_schema_version (version, applied_at) VALUES (?, 0)", sqlite.RecordsSchemaVersion+1)
	s = openAt(t, path, nil)
	if _, err := s.Records(t.Context()); !errors.Is(err, toolgate.ErrCorrupt) {
		t.Errorf("Records on a newer schema: got %v, want an error wrapping %v", err, toolgate.ErrCorrupt)
	}
	if _, err := s.Load(t.Context(), "c"); err != nil {
		t.Errorf("Load: %v", err)
	}
}

// allVersions are the records versions a database upgraded by this build
// holds: 1 to [sqlite.RecordsSchemaVersion].
func allVersions() []int {
	var vs []int
	for v := 1; v <= sqlite.RecordsSchemaVersion; v++ {
		vs = append(vs, v)
	}
	return vs
}
