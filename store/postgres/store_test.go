package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
)

func TestConformance(t *testing.T) {
	toolgatetest.TestStore(t, func(t *testing.T) toolgate.ConversationStore {
		s, _ := open(t)
		return s
	})
}

// twoInstances spreads the operations over two Stores, each with its own
// connection pool, on one schema, as two server instances would.
type twoInstances struct {
	s [2]*postgres.Store
	n atomic.Uint32
}

func (h *twoInstances) next() *postgres.Store { return h.s[h.n.Add(1)%2] }

func (h *twoInstances) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	return h.next().Load(ctx, id)
}

func (h *twoInstances) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	return h.next().Append(ctx, id, p)
}

func (h *twoInstances) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	return h.next().ClaimPause(ctx, id, pauseID, c)
}

func (h *twoInstances) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	return h.next().MarkStarted(ctx, id, pauseID, token, keys)
}

// newTwoInstances returns two Stores on one new schema, made with [New] on
// two pools of maxConns connections each.
func newTwoInstances(t testing.TB, maxConns int32) *twoInstances {
	t.Helper()
	schema := newSchema(t)
	h := &twoInstances{}
	for i := range h.s {
		s, err := postgres.New(t.Context(), newPool(t, maxConns), &postgres.Options{Schema: schema})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		h.s[i] = s
	}
	return h
}

func TestConformanceTwoInstances(t *testing.T) {
	toolgatetest.TestStore(t, func(t *testing.T) toolgate.ConversationStore {
		return newTwoInstances(t, 4)
	})
}

// pausedReply is the reply the two-instance tests pause on.
var pausedReply = &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "book", Arguments: `{"flight":"VX205"}`}}}

func TestClaimAcrossInstances(t *testing.T) {
	// 64 claims of one pause, split over two instances with 16 connections
	// each: exactly one wins, every time.
	const claims, rounds = 64, 40
	h := newTwoInstances(t, 16)
	ctx := t.Context()
	for r := range rounds {
		id := fmt.Sprintf("conv-%d", r)
		err := h.s[r%2].Append(ctx, id, &toolgate.AppendParams{
			Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Book VX205"}, pausedReply},
			Pause:    &toolgate.PauseRecord{ID: "p1", Awaiting: []string{"c1"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, claims)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range claims {
			wg.Go(func() {
				<-start
				errs[i] = h.s[i%2].ClaimPause(ctx, id, "p1", &toolgate.Claim{Token: fmt.Sprint("claim-", i)})
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, toolgate.ErrNoOpenPause):
				t.Errorf("round %d, claim %d: got error %v, want nil or one wrapping %v", r, i, err, toolgate.ErrNoOpenPause)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d claims succeeded, want exactly 1", r, won, claims)
		}
		for i, s := range h.s {
			c, err := s.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.Pause == nil || !c.Pause.Claimed {
				t.Fatalf("round %d: instance %d loads pause %+v, want it claimed", r, i, c.Pause)
			}
		}
	}
}

func TestAppendAcrossInstances(t *testing.T) {
	// Appends at the same At from both instances: exactly one wins, the
	// others get ErrConflict, and the winner's messages are stored whole.
	const writers, rounds = 32, 20
	h := newTwoInstances(t, 16)
	ctx := t.Context()
	for r := range rounds {
		id := fmt.Sprintf("conv-%d", r)
		first := []toolgate.Message{&toolgate.UserMessage{Text: "start"}}
		if err := h.s[0].Append(ctx, id, &toolgate.AppendParams{Messages: first}); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-start
				errs[i] = h.s[i%2].Append(ctx, id, &toolgate.AppendParams{At: 1, Messages: []toolgate.Message{
					&toolgate.UserMessage{Text: fmt.Sprintf("writer %d", i)},
					&toolgate.AssistantMessage{Text: fmt.Sprintf("reply %d", i)},
				}})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: appends %d and %d at the same At both succeeded", r, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, toolgate.ErrConflict):
				t.Errorf("round %d, append %d: got error %v, want nil or one wrapping %v", r, i, err, toolgate.ErrConflict)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: none of %d appends succeeded", r, writers)
		}
		want := append(first,
			&toolgate.UserMessage{Text: fmt.Sprintf("writer %d", winner)},
			&toolgate.AssistantMessage{Text: fmt.Sprintf("reply %d", winner)})
		c, err := h.s[1].Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, c.Messages); diff != "" {
			t.Fatalf("round %d: stored messages mismatch (-want +got):\n%s", r, diff)
		}
	}
}

func TestConcurrentOpen(t *testing.T) {
	// Instances starting together on a new schema migrate it once, one
	// after the other, and all start.
	const instances = 8
	schema := newSchema(t)
	url := testURL(t)
	stores := make([]*postgres.Store, instances)
	errs := make([]error, instances)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range instances {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(t.Context(), url, &postgres.Options{Schema: schema})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	var versions []int32
	rows, err := raw(t, schema).Query(t.Context(), "SELECT version FROM toolgate_schema_version ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int32
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var want []int32
	for v := range int32(postgres.SchemaVersion) {
		want = append(want, v+1)
	}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("toolgate_schema_version mismatch (-want +got):\n%s", diff)
	}
	for i, s := range stores {
		id := fmt.Sprintf("conv-%d", i)
		if err := s.Append(t.Context(), id, &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
			t.Errorf("Append through store %d: %v", i, err)
		}
	}
}

func TestReopen(t *testing.T) {
	schema := newSchema(t)
	msgs := []toolgate.Message{
		&toolgate.UserMessage{Text: "Book VX205"},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "book", Arguments: `{"flight":"VX205"}`}}},
	}
	created := time.Date(1969, 3, 14, 15, 9, 26, 999999999, time.UTC)
	s, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema})
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

	s = openIn(t, schema)
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

	// The rows hold the messages' JSON form, with format 1, and the pause's
	// time to the microsecond.
	conn := raw(t, schema)
	var format int32
	var body string
	if err := conn.QueryRow(t.Context(), "SELECT format, body FROM messages WHERE conversation_id = 'conv' AND seq = 0").Scan(&format, &body); err != nil {
		t.Fatal(err)
	}
	if format != 1 || body != `{"role":"user","text":"Book VX205"}` {
		t.Errorf("stored row: format %d, body %s", format, body)
	}
	var at time.Time
	if err := conn.QueryRow(t.Context(), "SELECT created_at FROM pauses WHERE conversation_id = 'conv'").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if !at.Equal(created.Truncate(time.Microsecond)) {
		t.Errorf("stored created_at = %v, want %v", at, created.Truncate(time.Microsecond))
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
		{"body null", `UPDATE messages SET body = 'null'` + where + ` AND seq = 0`, false},
		{"body a number", `UPDATE messages SET body = '42'` + where + ` AND seq = 0`, false},
		{"trailing garbage", `UPDATE messages SET body = '{"role":"user","text":"hi"} x'` + where + ` AND seq = 0`, false},
		{"unknown role", `UPDATE messages SET body = '{"role":"robot","text":"hi"}'` + where + ` AND seq = 0`, false},
		{"missing role", `UPDATE messages SET body = '{"text":"hi"}'` + where + ` AND seq = 0`, false},
		{"role not a string", `UPDATE messages SET body = '{"role":7}'` + where + ` AND seq = 0`, false},
		{"field of the wrong type", `UPDATE messages SET body = '{"role":"assistant","tool_calls":"x"}'` + where + ` AND seq = 1`, false},
		{"unknown result status", `UPDATE messages SET body = '{"role":"tool","results":[{"name":"a","content":"","status":"maybe"}]}'` + where + ` AND seq = 2`, false},
		{"format 2", `UPDATE messages SET format = 2` + where + ` AND seq = 0`, false},
		{"format 0", `UPDATE messages SET format = 0` + where + ` AND seq = 3`, false},
		{"format negative", `UPDATE messages SET format = -1` + where + ` AND seq = 3`, false},
		{"gap in numbers", `UPDATE messages SET seq = 7` + where + ` AND seq = 2`, true},
		{"first missing", `DELETE FROM messages` + where + ` AND seq = 0`, true},
		{"numbers shifted", `UPDATE messages SET seq = seq + 10` + where, true},
		{"awaiting not JSON", `UPDATE pauses SET awaiting = '['` + where, true},
		{"awaiting not a list", `UPDATE pauses SET awaiting = '{"a":1}'` + where, true},
		{"awaiting a list of numbers", `UPDATE pauses SET awaiting = '[1]'` + where, true},
		{"created_at_nanos too large", `UPDATE pauses SET created_at_nanos = 2000000000` + where, true},
		{"created_at_nanos negative", `UPDATE pauses SET created_at_nanos = -1` + where, true},
		{"pause index past the end", `UPDATE pauses SET msg_index = 4` + where, false},
		{"pause index negative", `UPDATE pauses SET msg_index = -1` + where, false},
		{"pause on a user message", `UPDATE pauses SET msg_index = 0` + where, false},
		{"pause on a tool message", `UPDATE pauses SET msg_index = 2` + where, false},
		{"pause without messages", `DELETE FROM messages` + where, false},
		{"decisions not JSON", `UPDATE pauses SET claimed = true, decisions = '[{'` + where, true},
		{"decision without verdict", `UPDATE pauses SET claimed = true, decisions = '[{"key":"c2"}]'` + where, true},
		{"decisions an object", `UPDATE pauses SET claimed = true, decisions = '{"key":"c2"}'` + where, true},
		{"started key repeated", `UPDATE pauses SET claimed = true, started = '{c2,c2}'` + where, true},
		{"started key empty", `UPDATE pauses SET claimed = true, started = '{""}'` + where, true},
		{"started key null", `UPDATE pauses SET claimed = true, started = '{NULL}'` + where, true},
		{"started while unclaimed", `UPDATE pauses SET started = '{c2}'` + where, true},
		{"token while unclaimed", `UPDATE pauses SET claim_token = 'x'` + where, true},
		{"claim time while unclaimed", `UPDATE pauses SET claimed_at = now()` + where, true},
		{"claim nanos too large", `UPDATE pauses SET claimed = true, claimed_at = now(), claimed_at_nanos = 1000000000` + where, true},
	}
	s, schema := open(t)
	conn := raw(t, schema)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			id := fmt.Sprintf("conv-%d", i)
			if err := s.Append(ctx, id, &toolgate.AppendParams{Messages: stored, Pause: &toolgate.PauseRecord{ID: "p1"}}); err != nil {
				t.Fatal(err)
			}
			other := []toolgate.Message{&toolgate.UserMessage{Text: "unharmed"}}
			otherID := fmt.Sprintf("other-%d", i)
			if err := s.Append(ctx, otherID, &toolgate.AppendParams{Messages: other}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load(ctx, id); err != nil {
				t.Fatalf("Load before the damage: %v", err)
			}

			mustExec(t, conn, strings.ReplaceAll(tt.sql, "'conv'", "'"+id+"'"))

			c, err := s.Load(ctx, id)
			if !errors.Is(err, toolgate.ErrCorrupt) {
				t.Errorf("Load: got %+v, error %v; want an error wrapping %v", c, err, toolgate.ErrCorrupt)
			}
			if tt.appendToo {
				err := s.Append(ctx, id, &toolgate.AppendParams{At: 4, Messages: other})
				if !errors.Is(err, toolgate.ErrCorrupt) {
					t.Errorf("Append: got error %v, want one wrapping %v", err, toolgate.ErrCorrupt)
				}
			}
			got, err := s.Load(ctx, otherID)
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
	for _, v := range []int{postgres.SchemaVersion + 1, 99} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			s, schema := open(t)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			mustExec(t, raw(t, schema), "INSERT INTO toolgate_schema_version (version) VALUES ($1)", v)

			s, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema})
			if err == nil {
				s.Close()
				t.Fatalf("Open of a schema at version %d succeeded", v)
			}
			if !errors.Is(err, toolgate.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", v)) {
				t.Errorf("Open: got error %v, want one wrapping %v that names version %d", err, toolgate.ErrCorrupt, v)
			}
		})
	}
}

func TestMigrateExistingSchema(t *testing.T) {
	// A schema that exists and holds other tables is brought to the
	// current version, and the other tables are left alone.
	schema := newSchema(t)
	conn := raw(t, schema)
	mustExec(t, conn, "CREATE SCHEMA "+quote(schema))
	mustExec(t, conn, "CREATE TABLE unrelated (x integer)")
	mustExec(t, conn, "INSERT INTO unrelated VALUES (7)")
	s := openIn(t, schema)
	if err := s.Append(t.Context(), "conv", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
		t.Fatalf("Append after migrating: %v", err)
	}
	var x int32
	if err := conn.QueryRow(t.Context(), "SELECT x FROM unrelated").Scan(&x); err != nil || x != 7 {
		t.Errorf("unrelated table: %d, %v; want 7", x, err)
	}
}

func TestSchemaNames(t *testing.T) {
	// Schemas are independent, and names that need quoting work.
	ctx := t.Context()
	base := newSchema(t)
	odd := base + `_ A"b; DROP`
	conn := raw(t, base)
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+quote(odd)+" CASCADE")
	})
	a, b := openIn(t, base), openIn(t, odd)
	msg := []toolgate.Message{&toolgate.UserMessage{Text: "in a"}}
	if err := a.Append(ctx, "conv", &toolgate.AppendParams{Messages: msg}); err != nil {
		t.Fatal(err)
	}
	c, err := b.Load(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 0 {
		t.Errorf("a store in another schema loads %d messages, want 0", len(c.Messages))
	}
	if err := b.Append(ctx, "conv", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "in b"}}}); err != nil {
		t.Fatal(err)
	}
	c, err = a.Load(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msg, c.Messages); diff != "" {
		t.Errorf("schema %q mismatch (-want +got):\n%s", base, diff)
	}
}

func quote(ident string) string {
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

func TestOpenErrors(t *testing.T) {
	url := testURL(t)
	for _, cs := range []string{"postgres://toolgate:secret@127.0.0.1:1/x?connect_timeout=1&sslmode=disable", "not a connection string: secret=x%"} {
		s, err := postgres.Open(t.Context(), cs, nil)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", cs)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open error %q shows the password", err)
		}
	}
	// A canceled context stops the migration.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s, err := postgres.Open(ctx, url, &postgres.Options{Schema: newSchema(t)})
	if err == nil {
		s.Close()
		t.Error("Open with a canceled context succeeded")
	}
}

func TestNewLeavesPoolOpen(t *testing.T) {
	pool := newPool(t, 2)
	s, err := postgres.New(t.Context(), pool, &postgres.Options{Schema: newSchema(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(t.Context()); err != nil {
		t.Errorf("the pool given to New is closed after Close: %v", err)
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
		t.Errorf("Load after failed appends: %v, error %v; want no messages, nil", c, err)
	}
}

func TestTextRoundTrip(t *testing.T) {
	// Text that is awkward for PostgreSQL (a NUL character, invalid UTF-8,
	// a lone surrogate escape) is stored as its JSON form and read back as
	// json.Marshal and UnmarshalMessage agree it should be.
	s, _ := open(t)
	in := []toolgate.Message{
		&toolgate.UserMessage{Text: "nul \x00 byte"},
		&toolgate.UserMessage{Text: "bad \xff utf-8"},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "t", Arguments: "{\"a\":\"\\u0000\\ud800\"}"}}},
	}
	if err := s.Append(t.Context(), "conv", &toolgate.AppendParams{Messages: in}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(t.Context(), "conv")
	if err != nil {
		t.Fatal(err)
	}
	want := []toolgate.Message{
		&toolgate.UserMessage{Text: "nul \x00 byte"},
		&toolgate.UserMessage{Text: "bad \ufffd utf-8"},
		in[2],
	}
	if diff := cmp.Diff(want, c.Messages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestMigrateLegacyClaim(t *testing.T) {
	// A pause claimed by a version before schema 2 keeps its claim, with no
	// token, time, decisions or started keys; it is taken over by naming
	// the empty token.
	schema := newSchema(t)
	conn := raw(t, schema)
	mustExec(t, conn, "CREATE SCHEMA "+quote(schema))
	mustExec(t, conn, `CREATE TABLE toolgate_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
	INSERT INTO toolgate_schema_version (version) VALUES (1);
	CREATE TABLE conversations (id text PRIMARY KEY);
	CREATE TABLE messages (conversation_id text NOT NULL REFERENCES conversations (id), seq integer NOT NULL, format integer NOT NULL,
		body text NOT NULL, PRIMARY KEY (conversation_id, seq));
	CREATE TABLE pauses (conversation_id text PRIMARY KEY REFERENCES conversations (id), id text NOT NULL, msg_index integer NOT NULL,
		awaiting text NOT NULL, claimed boolean NOT NULL DEFAULT false, created_at timestamptz NOT NULL, created_at_nanos integer NOT NULL);
	CREATE TABLE vaults (conversation_id text PRIMARY KEY, sealed bytea NOT NULL);
	INSERT INTO conversations VALUES ('conv');
	INSERT INTO messages VALUES ('conv', 0, 1, '{"role":"user","text":"book"}'),
		('conv', 1, 1, '{"role":"assistant","tool_calls":[{"id":"c1","name":"book","arguments":"{}"}]}');
	INSERT INTO pauses VALUES ('conv', 'p1', 1, '["c1"]', true, to_timestamp(1700000000), 5);`)
	s := openIn(t, schema)
	c, err := s.Load(t.Context(), "conv")
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.PauseRecord{ID: "p1", Index: 1, Awaiting: []string{"c1"}, Claimed: true, CreatedAt: time.Unix(1700000000, 5)}
	if diff := cmp.Diff(want, c.Pause); diff != "" {
		t.Errorf("legacy pause mismatch (-want +got):\n%s", diff)
	}
	if err := s.MarkStarted(t.Context(), "conv", "p1", "any", []string{"c1"}); !errors.Is(err, toolgate.ErrClaimLost) {
		t.Errorf("MarkStarted on a legacy claim: got error %v, want one wrapping %v", err, toolgate.ErrClaimLost)
	}
	if err := s.ClaimPause(t.Context(), "conv", "p1", &toolgate.Claim{Token: "t2", TakeOver: true}); err != nil {
		t.Fatalf("taking over a legacy claim: %v", err)
	}
	if err := s.MarkStarted(t.Context(), "conv", "p1", "t2", []string{"c1"}); err != nil {
		t.Errorf("MarkStarted after the takeover: %v", err)
	}
}

// An append refused by the rules, or failing in its writes, rolls its
// transaction back: nothing of it is stored, and the pool keeps its
// connection, outside any transaction, for the next operation.
func TestAppendRollsBack(t *testing.T) {
	schema := newSchema(t)
	pool := newPool(t, 1)
	s, err := postgres.New(t.Context(), pool, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	first := []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}
	if err := s.Append(ctx, "conv", &toolgate.AppendParams{Messages: first}); err != nil {
		t.Fatal(err)
	}
	// Refused by the rules, after the reads.
	err = s.Append(ctx, "conv", &toolgate.AppendParams{At: 7, Messages: first})
	if !errors.Is(err, toolgate.ErrConflict) {
		t.Fatalf("Append at a stale At: got error %v, want one wrapping %v", err, toolgate.ErrConflict)
	}
	// Failing in the writes: the database refuses the message.
	mustExec(t, raw(t, schema), `ALTER TABLE messages ADD CONSTRAINT no_boom CHECK (body NOT LIKE '%boom%')`)
	boom := []toolgate.Message{&toolgate.UserMessage{Text: "boom"}}
	if err := s.Append(ctx, "conv", &toolgate.AppendParams{At: 1, Messages: boom}); err == nil {
		t.Fatal("Append of a message the database refuses succeeded")
	}
	second := []toolgate.Message{&toolgate.UserMessage{Text: "again"}}
	if err := s.Append(ctx, "conv", &toolgate.AppendParams{At: 1, Messages: second}); err != nil {
		t.Fatalf("Append after the failures: %v", err)
	}
	c, err := s.Load(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(first, second...), c.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if n := pool.Stat().NewConnsCount(); n != 1 {
		t.Errorf("the pool opened %d connections, want 1: a failed append left its connection in a transaction", n)
	}
}

// TestLoadFailingStatement: a Load whose statement the database refuses
// (its tables dropped under a running store, or its connection ended)
// returns the database's error; it never panics.
func TestLoadFailingStatement(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		break_ string
	}{
		{"tables dropped", "DROP TABLE messages, pauses CASCADE"},
		{"connection ended", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'toolgate-load-test'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := newSchema(t)
			cfg, err := pgxpool.ParseConfig(testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 1
			cfg.ConnConfig.RuntimeParams["application_name"] = "toolgate-load-test"
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			s, err := postgres.New(ctx, pool, &postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, "conv", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
				t.Fatal(err)
			}
			// Load once, so that its statement is prepared and described
			// on the connection before the break.
			if _, err := s.Load(ctx, "conv"); err != nil {
				t.Fatal(err)
			}
			mustExec(t, raw(t, schema), tc.break_)
			c, err := s.Load(ctx, "conv")
			if err == nil {
				t.Fatalf("Load after %s: got %v, want an error", tc.name, c)
			}
			if errors.Is(err, toolgate.ErrCorrupt) {
				t.Errorf("Load after %s: %v; want the database's error, not a verdict on the data", tc.name, err)
			}
		})
	}
}
