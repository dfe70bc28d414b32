package postgres_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	if got, want := tables(t, schema), []string{"audit_records", "audit_schema", "audit_unsealed", "conversations", "messages", "pauses", "toolgate_schema_version", "vaults"}; !slices.Equal(got, want) {
		t.Fatalf("tables after Open: %v, want %v", got, want)
	}
	rs := recs(t, s)
	want := []string{"audit_records", "audit_schema", "audit_unsealed", "conversations", "messages", "pauses", "server_approvals", "server_conversations", "server_decisions",
		"server_grants", "server_pending", "server_request_keys", "server_schema_version", "server_secrets", "server_sessions", "toolgate_schema_version", "vaults"}
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
	db := raw(t, schema)
	mustExec(t, db, "DROP TABLE server_schema_version")
	undoPendingTools(t, db)

	c, err := recs(t, openIn(t, schema)).Conversation(t.Context(), "c")
	if err != nil || c.Owner.ID != "ada" {
		t.Fatalf("Conversation after the upgrade: %+v, %v", c, err)
	}
	// Version 1, then every later migration of this build.
	if got, want := recordsVersions(t, schema), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
}

// undoPendingTools takes the records of the schema db's search path names
// back to version 2: an index without tools.
func undoPendingTools(t *testing.T, db *pgx.Conn) {
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
	s, schema := open(t)
	recs(t, s)
	db := raw(t, schema)
	undoPendingTools(t, db)
	mustExec(t, db, "DELETE FROM server_schema_version WHERE version > 2")
	mustExec(t, db, "INSERT INTO server_pending (conversation_id, agent, pause_id, created_at) VALUES ('conv_old', 'flights', 'pause_1', 1), ('conv_train', 'trains', 'pause_1', 2)")

	rs := recs(t, openIn(t, schema))
	if got, want := recordsVersions(t, schema), allVersions(); !slices.Equal(got, want) {
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
	if err := rs.AddPending(ctx, &records.Pending{ConversationID: "conv_old", Agent: "flights", PauseID: "pause_1", CreatedAt: time.Unix(0, 1), Tools: []string{"cancel"}}); err != nil {
		t.Fatal(err)
	}
	if got := ids(records.Scope{Agent: "flights", Tools: []string{"bookFlight"}}); len(got) != 0 {
		t.Errorf("scope of bookFlight after indexing again: %v, want none", got)
	}
}

// version5PendingTools is what migrations 3 to 5 left of the index's
// tools: a table of (agent, tool) rows, kept by a trigger.
var version5PendingTools = []string{
	`CREATE TABLE server_pending_tools (agent text NOT NULL, tool text, created_at bigint NOT NULL, conversation_id text NOT NULL)`,
	`CREATE INDEX server_pending_tools_scope ON server_pending_tools (agent, tool, created_at, conversation_id)`,
	`CREATE INDEX server_pending_tools_conversation ON server_pending_tools (conversation_id)`,
	`CREATE FUNCTION server_pending_tools_sync() RETURNS trigger LANGUAGE plpgsql AS $fn$
	BEGIN
		IF TG_OP <> 'INSERT' THEN
			DELETE FROM server_pending_tools WHERE conversation_id = OLD.conversation_id;
		END IF;
		IF TG_OP <> 'DELETE' THEN
			INSERT INTO server_pending_tools (agent, tool, created_at, conversation_id)
				SELECT NEW.agent, t, NEW.created_at, NEW.conversation_id
				FROM unnest(CASE WHEN cardinality(NEW.tools) > 0 THEN NEW.tools ELSE ARRAY[NULL::text] END) AS t;
		END IF;
		RETURN NULL;
	END
	$fn$`,
	`CREATE TRIGGER server_pending_tools_sync AFTER INSERT OR UPDATE OR DELETE ON server_pending
		FOR EACH ROW EXECUTE FUNCTION server_pending_tools_sync()`,
}

// TestRecordsPendingAgentMigration upgrades records of version 5, whose
// index kept a table of (agent, tool) rows by a trigger: the table, the
// trigger and its function go, the entries stay and list by scope as
// before (those of unknown tools in every scope of their agent), and
// later writes of the index list by their tools.
func TestRecordsPendingAgentMigration(t *testing.T) {
	s, schema := open(t)
	recs(t, s)
	db := raw(t, schema)
	mustExec(t, db, "DROP INDEX server_pending_agent")
	for _, q := range version5PendingTools {
		mustExec(t, db, q)
	}
	mustExec(t, db, "DELETE FROM server_schema_version WHERE version > 5")
	mustExec(t, db, `INSERT INTO server_pending (conversation_id, agent, pause_id, created_at, tools) VALUES
		('conv_old', 'flights', 'pause_1', 1, NULL), ('conv_book', 'flights', 'pause_1', 2, '{bookFlight}'),
		('conv_both', 'flights', 'pause_1', 3, '{bookFlight,refund}'), ('conv_train', 'trains', 'pause_1', 4, '{bookFlight}'),
		('conv_empty', 'flights', 'pause_1', 5, '{}')`)
	var rows int
	if err := db.QueryRow(t.Context(), "SELECT count(*) FROM server_pending_tools").Scan(&rows); err != nil || rows != 6 {
		t.Fatalf("rows of server_pending_tools before the upgrade: %d, %v; want 6", rows, err)
	}

	rs := recs(t, openIn(t, schema))
	if got, want := recordsVersions(t, schema), allVersions(); !slices.Equal(got, want) {
		t.Errorf("records versions %v, want %v", got, want)
	}
	if got := tables(t, schema); slices.Contains(got, "server_pending_tools") {
		t.Errorf("tables after the upgrade: %v, want no server_pending_tools", got)
	}
	var left int
	if err := db.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'server_pending'::regclass AND NOT tgisinternal)
		+ (SELECT count(*) FROM pg_proc WHERE proname = 'server_pending_tools_sync' AND pronamespace = $1::regnamespace)`, schema).Scan(&left); err != nil || left != 0 {
		t.Errorf("triggers and functions left after the upgrade: %d, %v; want none", left, err)
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
