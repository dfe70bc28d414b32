package postgres_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/store/postgres"
)

// tables returns the names of the tables of schema, sorted.
func tables(t *testing.T, schema string) []string {
	t.Helper()
	rows, err := raw(t, schema).Query(t.Context(), "SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", schema)
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
func recordsVersions(t *testing.T, schema string) []int32 {
	t.Helper()
	rows, err := raw(t, schema).Query(t.Context(), "SELECT version FROM server_schema_version ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int32
	for rows.Next() {
		var v int32
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

// TestOpenCreatesNoRecords checks that a schema used for conversations
// only has no tables of the approval service (only those of the
// conversations and of the audit log, which the conversation store's own
// writes may append to), and that Records creates them.
func TestOpenCreatesNoRecords(t *testing.T) {
	s, schema := open(t)
	if got, want := tables(t, schema), []string{"audit_records", "audit_schema", "conversations", "messages", "pauses", "toolgate_schema_version", "vaults"}; !slices.Equal(got, want) {
		t.Fatalf("tables after Open: %v, want %v", got, want)
	}
	rs := recs(t, s)
	want := []string{"audit_records", "audit_schema", "conversations", "messages", "pauses", "server_approvals", "server_conversations", "server_decisions",
		"server_grants", "server_pending", "server_schema_version", "toolgate_schema_version", "vaults"}
	if got := tables(t, schema); !slices.Equal(got, want) {
		t.Fatalf("tables after Records: %v, want %v", got, want)
	}
	if got, want := recordsVersions(t, schema), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
	// One store, which the hooks given for it are matched against.
	if again := recs(t, s); again != rs {
		t.Errorf("a second Records returned another store")
	}
	other := openIn(t, schema)
	if err := recs(t, other).CreateConversation(t.Context(), &records.Conversation{ID: "c", Agent: "a", Owner: toolgate.Principal{ID: "ada"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := rs.Conversation(t.Context(), "c"); err != nil || c.Owner.ID != "ada" {
		t.Errorf("Conversation through the first store: %+v, %v", c, err)
	}
}

// TestRecordsOfEarlierBuild opens a schema whose records were created by
// the conversations' migration 2 of an earlier build (no
// server_schema_version): its rows stay, and it counts as version 1.
func TestRecordsOfEarlierBuild(t *testing.T) {
	s, schema := open(t)
	if err := recs(t, s).CreateConversation(t.Context(), &records.Conversation{ID: "c", Agent: "a", Owner: toolgate.Principal{ID: "ada"}}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, raw(t, schema), "DROP TABLE server_schema_version")

	c, err := recs(t, openIn(t, schema)).Conversation(t.Context(), "c")
	if err != nil || c.Owner.ID != "ada" {
		t.Fatalf("Conversation after the upgrade: %+v, %v", c, err)
	}
	// Version 1, then every later migration of this build.
	if got, want := recordsVersions(t, schema), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
}

// TestRecordsSchemaNewer checks that records written by a newer build are
// refused.
func TestRecordsSchemaNewer(t *testing.T) {
	s, schema := open(t)
	recs(t, s)
	mustExec(t, raw(t, schema), "INSERT INTO server_schema_version (version) VALUES ($1)", postgres.RecordsSchemaVersion+1)
	if _, err := openIn(t, schema).Records(t.Context()); !errors.Is(err, toolgate.ErrCorrupt) {
		t.Errorf("Records on a newer schema: got %v, want an error wrapping %v", err, toolgate.ErrCorrupt)
	}
}

// allVersions are the records versions a schema upgraded by this build
// holds: 1 to [postgres.RecordsSchemaVersion].
func allVersions() []int32 {
	var vs []int32
	for v := int32(1); v <= postgres.RecordsSchemaVersion; v++ {
		vs = append(vs, v)
	}
	return vs
}
