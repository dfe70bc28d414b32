package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

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

var serviceTables = []string{"server_approvals", "server_conversations", "server_decisions", "server_grants", "server_pending", "server_request_keys", "server_schema_version", "server_secrets", "server_sessions"}

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
	db := raw(t, path)
	mustExec(t, db, "DROP TABLE server_schema_version")
	undoPendingTools(t, db)

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

// undoPendingTools takes the records of the file db has open back to
// version 2: an index without tools, and no idempotency keys.
func undoPendingTools(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, q := range []string{
		"DROP INDEX server_pending_agent", "ALTER TABLE server_pending DROP COLUMN tools", "DROP TABLE server_request_keys", "DROP TABLE server_sessions", "DROP TABLE server_secrets",
	} {
		mustExec(t, db, q)
	}
}

// TestRecordsPendingToolsMigration upgrades records of version 2, whose
// index does not know the tools its pauses await: those entries stay,
// every scope of their agent lists them (a principal who may decide one
// of the agent's tools still sees them), and an entry indexed again lists
// by its tools.
func TestRecordsPendingToolsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s := openAt(t, path, nil)
	recs(t, s)
	s.Close()
	db := raw(t, path)
	undoPendingTools(t, db)
	mustExec(t, db, "DELETE FROM server_schema_version WHERE version > 2")
	mustExec(t, db, "INSERT INTO server_pending (conversation_id, agent, pause_id, created_at) VALUES ('conv_old', 'flights', 'pause_1', 1), ('conv_train', 'trains', 'pause_1', 2)")

	s = openAt(t, path, nil)
	rs := recs(t, s)
	if got, want := recordsVersions(t, path), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
	ctx := t.Context()
	if err := rs.AddPending(ctx, &records.Pending{ConversationID: "conv_new", Agent: "flights", PauseID: "pause_1", CreatedAt: time.Unix(0, 3), Tools: []string{"refund"}}); err != nil {
		t.Fatal(err)
	}
	ids := func(scopes ...records.Scope) []string {
		t.Helper()
		page, err := rs.ListPending(ctx, &records.ListParams{Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range page.Pending {
			out = append(out, e.ConversationID)
			if e.ConversationID == "conv_old" && e.Tools != nil {
				t.Errorf("an entry of version 2 has tools %v, want nil (not known)", e.Tools)
			}
		}
		return out
	}
	if got, want := ids(records.Scope{Agent: "flights", Tools: []string{"bookFlight"}}), []string{"conv_old"}; !slices.Equal(got, want) {
		t.Errorf("scope of bookFlight after the upgrade: %v, want %v", got, want)
	}
	if got, want := ids(records.Scope{Agent: "flights", Tools: []string{"refund"}}), []string{"conv_old", "conv_new"}; !slices.Equal(got, want) {
		t.Errorf("scope of refund after the upgrade: %v, want %v", got, want)
	}
	if got, want := ids(records.Scope{Agent: "trains"}), []string{"conv_train"}; !slices.Equal(got, want) {
		t.Errorf("scope of any tool of trains after the upgrade: %v, want %v", got, want)
	}
	// Indexed again with its tools, the old entry lists by them.
	if err := rs.AddPending(ctx, &records.Pending{ConversationID: "conv_old", Agent: "flights", PauseID: "pause_1", CreatedAt: time.Unix(0, 1), Tools: []string{"cancel"}}); err != nil {
		t.Fatal(err)
	}
	if got := ids(records.Scope{Agent: "flights", Tools: []string{"bookFlight"}}); len(got) != 0 {
		t.Errorf("scope of bookFlight after indexing again: %v, want none", got)
	}
}

// version5PendingTools is what migrations 3 to 5 left of the index's
// tools: a table of (agent, tool) rows, kept by triggers.
var version5PendingTools = []string{
	`CREATE TABLE server_pending_tools (agent TEXT NOT NULL, tool TEXT, created_at INTEGER NOT NULL, conversation_id TEXT NOT NULL)`,
	`CREATE INDEX server_pending_tools_scope ON server_pending_tools (agent, tool, created_at, conversation_id)`,
	`CREATE INDEX server_pending_tools_conversation ON server_pending_tools (conversation_id)`,
	`CREATE TRIGGER server_pending_tools_insert AFTER INSERT ON server_pending BEGIN
		INSERT INTO server_pending_tools (agent, tool, created_at, conversation_id)
			SELECT new.agent, value, new.created_at, new.conversation_id FROM json_each(coalesce(nullif(new.tools, '[]'), '[null]'));
	END`,
	`CREATE TRIGGER server_pending_tools_update AFTER UPDATE ON server_pending BEGIN
		DELETE FROM server_pending_tools WHERE conversation_id = old.conversation_id;
		INSERT INTO server_pending_tools (agent, tool, created_at, conversation_id)
			SELECT new.agent, value, new.created_at, new.conversation_id FROM json_each(coalesce(nullif(new.tools, '[]'), '[null]'));
	END`,
	`CREATE TRIGGER server_pending_tools_delete AFTER DELETE ON server_pending BEGIN
		DELETE FROM server_pending_tools WHERE conversation_id = old.conversation_id;
	END`,
}

// TestRecordsPendingAgentMigration upgrades records of version 5, whose
// index kept a table of (agent, tool) rows by triggers: the table and the
// triggers go, the entries stay and list by scope as before (those of
// unknown tools in every scope of their agent), and later writes of the
// index list by their tools.
func TestRecordsPendingAgentMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s := openAt(t, path, nil)
	recs(t, s)
	s.Close()
	db := raw(t, path)
	mustExec(t, db, "DROP INDEX server_pending_agent")
	for _, q := range version5PendingTools {
		mustExec(t, db, q)
	}
	mustExec(t, db, "DELETE FROM server_schema_version WHERE version > 5")
	mustExec(t, db, `INSERT INTO server_pending (conversation_id, agent, pause_id, created_at, tools) VALUES
		('conv_old', 'flights', 'pause_1', 1, NULL), ('conv_book', 'flights', 'pause_1', 2, '["bookFlight"]'),
		('conv_both', 'flights', 'pause_1', 3, '["bookFlight","refund"]'), ('conv_train', 'trains', 'pause_1', 4, '["bookFlight"]'),
		('conv_empty', 'flights', 'pause_1', 5, '[]')`)
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM server_pending_tools").Scan(&rows); err != nil || rows != 6 {
		t.Fatalf("rows of server_pending_tools before the upgrade: %d, %v; want 6", rows, err)
	}

	s = openAt(t, path, nil)
	rs := recs(t, s)
	if got, want := recordsVersions(t, path), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
	if got := tables(t, path); slices.Contains(got, "server_pending_tools") {
		t.Errorf("tables after the upgrade: %v, want no server_pending_tools", got)
	}
	var triggers int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'").Scan(&triggers); err != nil || triggers != 0 {
		t.Errorf("triggers after the upgrade: %d, %v; want none", triggers, err)
	}
	ctx := t.Context()
	ids := func(scopes ...records.Scope) []string {
		t.Helper()
		page, err := rs.ListPending(ctx, &records.ListParams{Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range page.Pending {
			out = append(out, e.ConversationID)
		}
		return out
	}
	for _, tc := range []struct {
		scope records.Scope
		want  []string
	}{
		{records.Scope{Agent: "flights", Tools: []string{"bookFlight"}}, []string{"conv_old", "conv_book", "conv_both", "conv_empty"}},
		{records.Scope{Agent: "flights", Tools: []string{"refund"}}, []string{"conv_old", "conv_both", "conv_empty"}},
		{records.Scope{Agent: "flights", Tools: []string{"cancel"}}, []string{"conv_old", "conv_empty"}},
		{records.Scope{Agent: "flights"}, []string{"conv_old", "conv_book", "conv_both", "conv_empty"}},
		{records.Scope{Agent: "trains", Tools: []string{"bookFlight"}}, []string{"conv_train"}},
		{records.Scope{Agent: "trains", Tools: []string{"refund"}}, []string{}},
	} {
		if got := ids(tc.scope); !slices.Equal(got, tc.want) {
			t.Errorf("scope %+v after the upgrade: %v, want %v", tc.scope, got, tc.want)
		}
	}
	// Written again, an entry lists by its new tools; removed, by none.
	if err := rs.AddPending(ctx, &records.Pending{ConversationID: "conv_old", Agent: "flights", PauseID: "pause_2", CreatedAt: time.Unix(0, 6), Tools: []string{"cancel"}}); err != nil {
		t.Fatal(err)
	}
	if err := rs.RemovePending(ctx, "conv_both", "pause_1"); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(records.Scope{Agent: "flights", Tools: []string{"cancel"}}), []string{"conv_empty", "conv_old"}; !slices.Equal(got, want) {
		t.Errorf("scope of cancel after writes: %v, want %v", got, want)
	}
	if got, want := ids(records.Scope{Agent: "flights", Tools: []string{"refund"}}), []string{"conv_empty"}; !slices.Equal(got, want) {
		t.Errorf("scope of refund after writes: %v, want %v", got, want)
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
