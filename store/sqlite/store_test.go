package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
)

// open opens a store on a new file and closes it when the test ends.
func open(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	return openAt(t, path, nil), path
}

func openAt(t testing.TB, path string, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// raw opens a plain connection pool on the file, bypassing the store.
func raw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("raw open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func TestConformance(t *testing.T) {
	toolgatetest.TestStore(t, func(t *testing.T) toolgate.ConversationStore {
		s, _ := open(t)
		return s
	})
}

// twoHandles spreads the operations over two Stores open on one file, as
// two processes would.
type twoHandles struct {
	s [2]*sqlite.Store
	n atomic.Uint32
}

func (h *twoHandles) next() *sqlite.Store { return h.s[h.n.Add(1)%2] }

func (h *twoHandles) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	return h.next().Load(ctx, id)
}

func (h *twoHandles) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	return h.next().Append(ctx, id, p)
}

func (h *twoHandles) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	return h.next().ClaimPause(ctx, id, pauseID, c)
}

func (h *twoHandles) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	return h.next().MarkStarted(ctx, id, pauseID, token, keys)
}

func TestConformanceTwoHandles(t *testing.T) {
	toolgatetest.TestStore(t, func(t *testing.T) toolgate.ConversationStore {
		a, path := open(t)
		return &twoHandles{s: [2]*sqlite.Store{a, openAt(t, path, nil)}}
	})
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	msgs := []toolgate.Message{
		&toolgate.UserMessage{Text: "Book VX205"},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "book", Arguments: `{"flight":"VX205"}`}}},
	}
	created := time.Date(2025, 3, 14, 15, 9, 26, 1, time.UTC)
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Append(t.Context(), "conv", &toolgate.AppendParams{
		Messages: msgs,
		Pause:    &toolgate.PauseRecord{ID: "p1", Awaiting: []string{"c1"}, CreatedAt: created},
	})
	if err != nil {
		t.Fatal(err)
	}
	claimed := time.Date(2025, 3, 14, 15, 10, 0, 999999999, time.UTC)
	decisions := []toolgate.Decision{toolgate.Allow("c1")}
	if err := s.ClaimPause(t.Context(), "conv", "p1", &toolgate.Claim{Token: "t1", At: claimed, Decisions: decisions}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkStarted(t.Context(), "conv", "p1", "t1", []string{"c1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, path, nil)
	got, err := s.Load(t.Context(), "conv")
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.Conversation{ID: "conv", Messages: msgs, Pause: &toolgate.PauseRecord{
		ID: "p1", Index: 1, Awaiting: []string{"c1"}, Claimed: true, CreatedAt: created,
		ClaimedAt: claimed, ClaimToken: "t1", Decisions: decisions, Started: []string{"c1"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load after reopening mismatch (-want +got):\n%s", diff)
	}

	db := raw(t, path)
	var mode string
	var version int
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || version != sqlite.SchemaVersion {
		t.Errorf("journal mode %q, schema version %d; want wal, %d", mode, version, sqlite.SchemaVersion)
	}
	// The rows hold the messages' JSON form, with format 1.
	var format int
	var body string
	if err := db.QueryRow("SELECT format, body FROM messages WHERE conversation_id = 'conv' AND seq = 0").Scan(&format, &body); err != nil {
		t.Fatal(err)
	}
	if format != 1 || body != `{"role":"user","text":"Book VX205"}` {
		t.Errorf("stored row: format %d, body %s", format, body)
	}
}

func TestCorruptRows(t *testing.T) {
	stored := []toolgate.Message{
		&toolgate.UserMessage{Text: "hi"},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "a"}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "a", Content: "1"}}},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c2", Name: "b"}}},
	}
	const where = ` WHERE conversation_id = 'conv'`
	tests := []struct {
		name string
		sql  string
		// appendToo: an append to the conversation must fail the same
		// way (the damage is in what an append reads).
		appendToo bool
	}{
		{"body not JSON", `UPDATE messages SET body = '{"role":"user","text":'` + where + ` AND seq = 0`, false},
		{"body an array", `UPDATE messages SET body = '[1, 2]'` + where + ` AND seq = 0`, false},
		{"body a string", `UPDATE messages SET body = '"hi"'` + where + ` AND seq = 0`, false},
		{"body empty", `UPDATE messages SET body = ''` + where + ` AND seq = 0`, false},
		{"body binary", `UPDATE messages SET body = x'00ff7b10'` + where + ` AND seq = 0`, false},
		{"body a number", `UPDATE messages SET body = 42` + where + ` AND seq = 0`, false},
		{"trailing garbage", `UPDATE messages SET body = '{"role":"user","text":"hi"} x'` + where + ` AND seq = 0`, false},
		{"unknown role", `UPDATE messages SET body = '{"role":"robot","text":"hi"}'` + where + ` AND seq = 0`, false},
		{"missing role", `UPDATE messages SET body = '{"text":"hi"}'` + where + ` AND seq = 0`, false},
		{"role not a string", `UPDATE messages SET body = '{"role":7}'` + where + ` AND seq = 0`, false},
		{"field of the wrong type", `UPDATE messages SET body = '{"role":"assistant","tool_calls":"x"}'` + where + ` AND seq = 1`, false},
		{"unknown result status", `UPDATE messages SET body = '{"role":"tool","results":[{"name":"a","content":"","status":"maybe"}]}'` + where + ` AND seq = 2`, false},
		{"format 2", `UPDATE messages SET format = 2` + where + ` AND seq = 0`, false},
		{"format 0", `UPDATE messages SET format = 0` + where + ` AND seq = 3`, false},
		{"format text", `UPDATE messages SET format = 'json'` + where + ` AND seq = 0`, false},
		{"gap in numbers", `UPDATE messages SET seq = 7` + where + ` AND seq = 2`, true},
		{"first missing", `DELETE FROM messages` + where + ` AND seq = 0`, true},
		{"number not integer", `UPDATE messages SET seq = 'x'` + where + ` AND seq = 2`, true},
		{"awaiting not JSON", `UPDATE pauses SET awaiting = '['` + where, true},
		{"awaiting not a list", `UPDATE pauses SET awaiting = '{"a":1}'` + where, true},
		{"claimed not boolean", `UPDATE pauses SET claimed = 5` + where, true},
		{"created_at text", `UPDATE pauses SET created_at = 'yesterday'` + where, true},
		{"created_at_nanos too large", `UPDATE pauses SET created_at_nanos = 2000000000` + where, true},
		{"pause index past the end", `UPDATE pauses SET msg_index = 4` + where, false},
		{"pause index negative", `UPDATE pauses SET msg_index = -1` + where, false},
		{"pause index text", `UPDATE pauses SET msg_index = 'one'` + where, true},
		{"pause on a user message", `UPDATE pauses SET msg_index = 0` + where, false},
		{"pause on a tool message", `UPDATE pauses SET msg_index = 2` + where, false},
		{"pause without messages", `DELETE FROM messages` + where, false},
		{"decisions not JSON", `UPDATE pauses SET claimed = 1, decisions = '[{'` + where, true},
		{"decision without verdict", `UPDATE pauses SET claimed = 1, decisions = '[{"key":"c2"}]'` + where, true},
		{"decision with an unknown verdict", `UPDATE pauses SET claimed = 1, decisions = '[{"key":"c2","verdict":"maybe"}]'` + where, true},
		{"decisions an object", `UPDATE pauses SET claimed = 1, decisions = '{"key":"c2"}'` + where, true},
		{"started not JSON", `UPDATE pauses SET claimed = 1, started = '["c2"'` + where, true},
		{"started not strings", `UPDATE pauses SET claimed = 1, started = '[1]'` + where, true},
		{"started key repeated", `UPDATE pauses SET claimed = 1, started = '["c2","c2"]'` + where, true},
		{"started key empty", `UPDATE pauses SET claimed = 1, started = '[""]'` + where, true},
		{"started while unclaimed", `UPDATE pauses SET started = '["c2"]'` + where, true},
		{"token while unclaimed", `UPDATE pauses SET claim_token = 'x'` + where, true},
		{"claim time while unclaimed", `UPDATE pauses SET claimed_at = 1700000000` + where, true},
		{"claim time text", `UPDATE pauses SET claimed = 1, claimed_at = 'noon'` + where, true},
		{"claim nanos too large", `UPDATE pauses SET claimed = 1, claimed_at = 1, claimed_at_nanos = 1000000000` + where, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := open(t)
			ctx := t.Context()
			if err := s.Append(ctx, "conv", &toolgate.AppendParams{Messages: stored, Pause: &toolgate.PauseRecord{ID: "p1"}}); err != nil {
				t.Fatal(err)
			}
			other := []toolgate.Message{&toolgate.UserMessage{Text: "unharmed"}}
			if err := s.Append(ctx, "other", &toolgate.AppendParams{Messages: other}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load(ctx, "conv"); err != nil {
				t.Fatalf("Load before the damage: %v", err)
			}

			mustExec(t, raw(t, path), tt.sql)

			c, err := s.Load(ctx, "conv")
			if !errors.Is(err, toolgate.ErrCorrupt) {
				t.Errorf("Load: got %+v, error %v; want an error wrapping %v", c, err, toolgate.ErrCorrupt)
			}
			if tt.appendToo {
				err := s.Append(ctx, "conv", &toolgate.AppendParams{At: 4, Messages: other})
				if !errors.Is(err, toolgate.ErrCorrupt) {
					t.Errorf("Append: got error %v, want one wrapping %v", err, toolgate.ErrCorrupt)
				}
			}
			got, err := s.Load(ctx, "other")
			if err != nil {
				t.Fatalf("Load of another conversation: %v", err)
			}
			if diff := cmp.Diff(other, got.Messages); diff != "" {
				t.Errorf("another conversation changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSchemaVersion(t *testing.T) {
	for _, v := range []int{sqlite.SchemaVersion + 1, 99, -1} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolgate.db")
			s, err := sqlite.Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db := raw(t, path)
			mustExec(t, db, fmt.Sprintf("PRAGMA user_version = %d", v))
			db.Close()

			s, err = sqlite.Open(t.Context(), path, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Open of a database at schema version %d succeeded", v)
			}
			if !errors.Is(err, toolgate.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", v)) {
				t.Errorf("Open: got error %v, want one wrapping %v that names version %d", err, toolgate.ErrCorrupt, v)
			}
		})
	}
}

func TestMigrateFromEmpty(t *testing.T) {
	// A database another program created (user_version 0, no tables of
	// ours) is brought to the current schema.
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := raw(t, path)
	mustExec(t, db, "CREATE TABLE unrelated (x INTEGER)")
	db.Close()
	s := openAt(t, path, nil)
	if err := s.Append(t.Context(), "conv", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
		t.Fatalf("Append after migrating: %v", err)
	}
	var version int
	if err := raw(t, path).QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != sqlite.SchemaVersion {
		t.Errorf("user_version = %d, want %d", version, sqlite.SchemaVersion)
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), path, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	}
	if !errors.Is(err, toolgate.ErrCorrupt) {
		t.Errorf("Open: got error %v, want one wrapping %v", err, toolgate.ErrCorrupt)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file:x.db", filepath.Join(t.TempDir(), "missing", "dir", "toolgate.db")} {
		s, err := sqlite.Open(t.Context(), path, nil)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", path)
		}
	}
}

func TestOddPath(t *testing.T) {
	// Characters with a meaning in URIs are part of the file name.
	dir := filepath.Join(t.TempDir(), "a ?b#c%20d&e")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x?y.db")
	s := openAt(t, path, nil)
	if err := s.Append(t.Context(), "conv", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at the path given: %v", err)
	}
}

func TestUnencodableMessage(t *testing.T) {
	s, _ := open(t)
	bad := &toolgate.ToolMessage{Results: []toolgate.ToolResult{{Name: "a", Status: toolgate.ResultStatus(9)}}}
	err := s.Append(t.Context(), "conv", &toolgate.AppendParams{Messages: []toolgate.Message{bad}})
	if !errors.Is(err, toolgate.ErrInvalidAppend) {
		t.Errorf("Append of a result with status 9: got error %v, want one wrapping %v", err, toolgate.ErrInvalidAppend)
	}
	// The rules come first: a stale At is still a conflict.
	err = s.Append(t.Context(), "conv", &toolgate.AppendParams{At: 3, Messages: []toolgate.Message{bad}})
	if !errors.Is(err, toolgate.ErrConflict) {
		t.Errorf("Append at a stale At: got error %v, want one wrapping %v", err, toolgate.ErrConflict)
	}
	c, err := s.Load(t.Context(), "conv")
	if err != nil || len(c.Messages) != 0 {
		t.Errorf("Load after failed appends: %d messages, error %v; want none, nil", len(c.Messages), err)
	}
}

func TestBusyTimeout(t *testing.T) {
	// Another connection holds the write lock: a write waits for it up to
	// the timeout, then fails, and succeeds once the lock is released.
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s := openAt(t, path, &sqlite.Options{BusyTimeout: 50 * time.Millisecond})
	db := raw(t, path)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	p := &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}
	if err := s.Append(t.Context(), "conv", p); err == nil {
		t.Error("Append succeeded while another connection held the write lock")
	}
	// Reads go on meanwhile.
	if _, err := s.Load(t.Context(), "conv"); err != nil {
		t.Errorf("Load while another connection held the write lock: %v", err)
	}
	if _, err := conn.ExecContext(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "conv", p); err != nil {
		t.Errorf("Append after the lock was released: %v", err)
	}
	c, err := s.Load(t.Context(), "conv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Messages, c.Messages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("stored messages mismatch (-want +got):\n%s", diff)
	}
}

func TestMigrateLegacyClaim(t *testing.T) {
	// A pause claimed by a version before schema 3 keeps its claim, with
	// no token, time, decisions or started keys; a recovery takes it over
	// by naming the empty token.
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := raw(t, path)
	mustExec(t, db, `CREATE TABLE messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, format INTEGER NOT NULL, body TEXT NOT NULL,
		PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID;
	CREATE TABLE pauses (conversation_id TEXT NOT NULL PRIMARY KEY, id TEXT NOT NULL, msg_index INTEGER NOT NULL, awaiting TEXT NOT NULL,
		claimed INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, created_at_nanos INTEGER NOT NULL) WITHOUT ROWID;
	CREATE TABLE vaults (conversation_id TEXT NOT NULL PRIMARY KEY, sealed BLOB NOT NULL) WITHOUT ROWID;
	PRAGMA user_version = 2;`)
	mustExec(t, db, `INSERT INTO messages VALUES ('conv', 0, 1, '{"role":"user","text":"book"}'),
		('conv', 1, 1, '{"role":"assistant","tool_calls":[{"id":"c1","name":"book","arguments":"{}"}]}')`)
	mustExec(t, db, `INSERT INTO pauses VALUES ('conv', 'p1', 1, '["c1"]', 1, 1700000000, 5)`)
	db.Close()

	s := openAt(t, path, nil)
	c, err := s.Load(t.Context(), "conv")
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.PauseRecord{ID: "p1", Index: 1, Awaiting: []string{"c1"}, Claimed: true, CreatedAt: time.Unix(1700000000, 5)}
	if diff := cmp.Diff(want, c.Pause); diff != "" {
		t.Errorf("legacy pause mismatch (-want +got):\n%s", diff)
	}
	err = s.MarkStarted(t.Context(), "conv", "p1", "any", []string{"c1"})
	if !errors.Is(err, toolgate.ErrClaimLost) {
		t.Errorf("MarkStarted on a legacy claim: got error %v, want one wrapping %v", err, toolgate.ErrClaimLost)
	}
	// A recovery answers every call interrupted: whether it ran is
	// unknown, and it is not run again.
	runs := 0
	book := toolgate.NewTool(toolgate.ToolDefinition{Name: "book"}, toolgate.ToolMetadata{RequiresConfirmation: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) { runs++; return "booked", nil })
	client := toolgate.NewClient(scripted.New(), []*toolgate.Tool{book}, &toolgate.ClientOptions{Store: s})
	res, err := client.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: "p1", Lease: time.Hour})
	if err != nil {
		t.Fatalf("RecoverPause of a legacy claim: %v", err)
	}
	wantResults := []toolgate.ToolResult{{CallID: "c1", Name: "book", Content: toolgate.InterruptedMessage, Status: toolgate.ResultInterrupted}}
	if diff := cmp.Diff(wantResults, res.Results); diff != "" || res.Response != nil || runs != 0 {
		t.Errorf("recovery of a legacy claim: response %v, %d runs, results (-want +got):\n%s", res.Response, runs, diff)
	}
	if c := load(t, s, "conv"); c.Pause != nil || len(c.Messages) != 3 {
		t.Errorf("after the recovery: pause %+v, %d messages", c.Pause, len(c.Messages))
	}
}

// TestLoadSnapshot loads a conversation while another goroutine pauses it
// and resolves the pause, round after round: every Load must see the
// messages and the pause of one moment (a pause on the last message, or no
// pause after a resolved round), never the pause of one and the messages
// of another.
func TestLoadSnapshot(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	const rounds = 100
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			for i := range rounds {
				pauseID := fmt.Sprint("p", i)
				reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "a"}}}
				if err := s.Append(ctx, "conv", &toolgate.AppendParams{At: 4 * i,
					Messages: []toolgate.Message{&toolgate.UserMessage{Text: "go"}, reply},
					Pause:    &toolgate.PauseRecord{ID: pauseID, Awaiting: []string{"c1"}}}); err != nil {
					return err
				}
				if err := s.ClaimPause(ctx, "conv", pauseID, &toolgate.Claim{Token: "t"}); err != nil {
					return err
				}
				if err := s.Append(ctx, "conv", &toolgate.AppendParams{At: 4*i + 2, Resolves: pauseID, Messages: []toolgate.Message{
					&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "a", Content: "ok"}}},
					&toolgate.AssistantMessage{Text: "done"},
				}}); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	for loads := 0; ; loads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			if loads == 0 {
				t.Log("the writer finished before the first load")
			}
			return
		default:
		}
		c, err := s.Load(ctx, "conv")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		n := len(c.Messages)
		switch {
		case c.Pause == nil && n%4 != 0:
			t.Fatalf("Load: %d messages and no pause, want a multiple of 4 without a pause", n)
		case c.Pause != nil && (n%4 != 2 || c.Pause.Index != n-1 || c.Pause.ID != fmt.Sprint("p", n/4)):
			t.Fatalf("Load: %d messages and pause %q at %d, want pause p%d on the last of 4k+2 messages", n, c.Pause.ID, c.Pause.Index, n/4)
		}
	}
}
