package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
)

const (
	auditorKey = "key-auditor"
	statusArgs = `{"flight":"VX205"}` // the arguments of both calls of the story
)

// auditFixture is the flight agent with an audit log.
type auditFixture struct {
	*fixture
	log   audit.Log
	path  string // the audit log's SQLite file; "" for a memory log
	store toolgate.ConversationStore
	// records are the server's records; nil: in memory.
	records records.Store
}

type auditOptions struct {
	// memory keeps the conversations and the audit log in memory (for
	// synctest bubbles); otherwise both are SQLite files.
	memory bool
	ttl    time.Duration
	// authorizer, when set, guards the agent, wrapped by AuditAuthorizer.
	authorizer func(context.Context, *toolgate.BeginParams) (toolgate.Authorizer, error)
	// log, when set, is the audit log.
	log audit.Log
	// inStore keeps the records and the audit log in the SQLite store's
	// database, written in its transactions.
	inStore bool
}

func newAuditFixture(t testing.TB, o auditOptions) *auditFixture {
	t.Helper()
	f := &auditFixture{log: o.log}
	if o.memory {
		f.store = memory.New()
		if f.log == nil {
			f.log = audit.NewMemoryLog()
		}
	} else {
		dir := t.TempDir()
		s, err := sqlite.Open(context.Background(), filepath.Join(dir, "toolgate.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f.store = s
		if o.inStore {
			f.records, f.log, f.path = mustRecords(t, s), s.AuditLog(), filepath.Join(dir, "toolgate.db")
		}
		if f.log == nil {
			f.path = filepath.Join(dir, "toolgate.audit.db")
			l, err := auditsqlite.Open(context.Background(), f.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			f.log = l
		}
	}
	tools := &flightdemo.Tools{}
	opts := &toolgate.ClientOptions{Store: f.store, SystemPrompt: flightdemo.SystemPrompt}
	if o.authorizer != nil {
		opts.Authorize = server.AuditAuthorizer(o.authorizer, f.log, nil)
	}
	client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), opts)
	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			key(travellerKey, "ada", "traveller"),
			key(approverKey, "bob", "approver"),
			key(guestKey, "eve", "guest"),
			key(adminKey, "root", "admin"),
			key(auditorKey, "ivy", "auditor"),
		},
		ReadAllRoles: []string{"admin"},
		AuditRoles:   []string{"auditor"},
		PauseTTL:     o.ttl,
		Audit:        f.log,
		Records:      f.records,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.fixture = &fixture{t: t, h: srv, srv: srv, tools: tools}
	return f
}

// auditRecords returns the audit records of a conversation, read from the log.
func auditRecords(t testing.TB, l audit.Reader, conv string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for r, err := range l.Records(context.Background(), &audit.Query{ConversationID: conv}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *r)
	}
	return out
}

// summary is a record in a line: kind, pause ("P" or "-"), call key,
// actor, reason.
func summary(r audit.Record) string {
	pause := "-"
	if r.PauseID != "" {
		pause = "P"
	}
	return fmt.Sprintf("%s %s %s %s:%s %s", r.Kind, pause, r.CallKey, r.Actor.Source, r.Actor.ID, r.Reason)
}

func summaries(rs []audit.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = summary(r)
	}
	return out
}

func (f *auditFixture) check(conv string, want ...string) []audit.Record {
	f.t.Helper()
	rs := auditRecords(f.t, f.log, conv)
	if diff := cmp.Diff(want, summaries(rs)); diff != "" {
		f.t.Errorf("audit records of %s (-want +got):\n%s", conv, diff)
	}
	return rs
}

func TestAuditAllow(t *testing.T) {
	f := newAuditFixture(t, auditOptions{})
	conv, pause := f.pause(travellerKey)
	rs := f.check(conv, "requested P call_book person:ada awaiting a decision")
	if rs[0].PauseID != pause || rs[0].Tool != "bookFlight" || rs[0].ConversationID != conv {
		t.Errorf("requested record %+v", rs[0])
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	rs = f.check(conv,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob allow",
		"executed P call_status person:bob ok",
		"executed P call_book person:bob ok",
	)
	// One call, one digest, from the request to the run.
	want := audit.Digest([]byte(statusArgs))
	for _, r := range rs {
		if r.ArgsDigest != want {
			t.Errorf("%s: digest %s, want %s", summary(r), r.ArgsDigest, want)
		}
	}
	if rep, err := audit.Verify(t.Context(), f.log, nil); err != nil || rep.Records != 4 {
		t.Errorf("Verify = %+v, %v; want 4 intact records", rep, err)
	}
}

func TestAuditDeny(t *testing.T) {
	f := newAuditFixture(t, auditOptions{})
	conv, pause := f.pause(travellerKey)
	const message = "not on the card of ada.lovelace@example.com"
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"deny","message":"`+message+`"}]}`)
	digest := audit.Digest([]byte(message))
	rs := f.check(conv,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob deny",
		"executed P call_status person:bob ok",
		"denied P call_book person:bob denied; message "+digest,
	)
	for _, r := range rs {
		if strings.Contains(r.Reason, "ada.lovelace") {
			t.Errorf("record %s quotes the deny message", summary(r))
		}
	}
	if _, b := f.runs(); b != 0 {
		t.Errorf("bookFlight ran %d times", b)
	}
}

func TestAuditExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newAuditFixture(t, auditOptions{memory: true, ttl: ttl})
		conv, pause := f.pause(travellerKey)
		time.Sleep(ttl)
		synctest.Wait()
		want := []string{
			"requested P call_book person:ada awaiting a decision",
			"expired P call_status system: expired before a decision",
			"expired P call_book system: expired before a decision",
		}
		rs := f.check(conv, want...)
		for _, r := range rs {
			if r.PauseID != pause {
				t.Errorf("%s: pause %q, want %q", summary(r), r.PauseID, pause)
			}
		}
		// A late decision decides nothing, and writes nothing.
		f.must(409, "POST", decisionsPath(conv, pause), approverKey, allowBook)
		f.check(conv, want...)
	})
}

// refuser is an authorizer that refuses replies calling bookFlight while
// refuse is set: neutrally, or with a denial that ends the turn.
type refuser struct {
	refuse atomic.Bool
	deny   bool
}

func (x *refuser) Begin(_ context.Context, r *toolgate.BeginParams) (toolgate.Authorizer, error) {
	return &refuserRequest{x: x, tools: r.Tools}, nil
}

type refuserRequest struct {
	x     *refuser
	tools []*toolgate.Tool
}

func (r *refuserRequest) Tools(context.Context) ([]*toolgate.Tool, error) { return r.tools, nil }

func (r *refuserRequest) CheckPrompt(context.Context, []*toolgate.Tool, *toolgate.Prompt) error {
	return nil
}

func (r *refuserRequest) CheckReply(_ context.Context, _ *toolgate.Prompt, reply *toolgate.AssistantMessage) ([]toolgate.ToolResult, error) {
	if !r.x.refuse.Load() || !slices.ContainsFunc(reply.ToolCalls, func(c toolgate.ToolCall) bool { return c.Name == "bookFlight" }) {
		return nil, nil
	}
	if r.x.deny {
		return nil, &authz.DenialError{Code: authz.CodeExecutionDenied, Phase: authz.PhaseExecution, Tool: "bookFlight", Reason: "no bookings today"}
	}
	out := make([]toolgate.ToolResult, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		out[i] = toolgate.ToolResult{CallID: c.ID, Name: c.Name, Content: "not allowed", Status: toolgate.ResultRefused}
	}
	return out, nil
}

func TestAuditRefused(t *testing.T) {
	t.Run("in a turn", func(t *testing.T) {
		x := &refuser{}
		x.refuse.Store(true)
		f := newAuditFixture(t, auditOptions{authorizer: x.Begin})
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
		if out["status"] != "completed" {
			t.Fatalf("turn %v, want completed", out)
		}
		rs := f.check(conv,
			"refused - call_status rule:authorization refused by the authorizer",
			"refused - call_book rule:authorization refused by the authorizer",
		)
		if rs[1].Tool != "bookFlight" || rs[1].ArgsDigest != audit.Digest([]byte(statusArgs)) {
			t.Errorf("refused record %+v", rs[1])
		}
	})
	t.Run("a denial ends the turn", func(t *testing.T) {
		x := &refuser{deny: true}
		x.refuse.Store(true)
		f := newAuditFixture(t, auditOptions{authorizer: x.Begin})
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		out := f.must(403, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
		if out["error"] != "authorization_denied" || out["denial"] != "EXECUTION_DENIED" || out["tool"] != "bookFlight" {
			t.Errorf("a denied turn: %v, want 403 authorization_denied EXECUTION_DENIED for bookFlight", out)
		}
		f.check(conv,
			"refused - call_status rule:authorization denied by authorization: EXECUTION_DENIED: no bookings today",
			"refused - call_book rule:authorization denied by authorization: EXECUTION_DENIED: no bookings today",
		)
	})
	t.Run("when the pause resumes", func(t *testing.T) {
		x := &refuser{}
		f := newAuditFixture(t, auditOptions{authorizer: x.Begin})
		conv, pause := f.pause(travellerKey)
		x.refuse.Store(true) // access revoked while the pause waited
		f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
		f.check(conv,
			"requested P call_book person:ada awaiting a decision",
			"decided P call_book person:bob allow",
			"refused P call_status rule:authorization refused by the authorizer when the pause resumed",
			"refused P call_book rule:authorization refused by the authorizer when the pause resumed",
		)
		if s, b := f.runs(); s != 0 || b != 0 {
			t.Errorf("runs: status %d book %d, want none", s, b)
		}
	})
}

// flakyLog is a memory log whose appends fail while fail is set.
type flakyLog struct {
	audit.MemoryLog
	fail atomic.Bool
}

func (l *flakyLog) Append(ctx context.Context, recs ...*audit.Record) error {
	if l.fail.Load() {
		return errors.New("the disk is full")
	}
	return l.MemoryLog.Append(ctx, recs...)
}

func TestAuditDecisionFailsClosed(t *testing.T) {
	l := &flakyLog{}
	f := newAuditFixture(t, auditOptions{log: l})
	conv, pause := f.pause(travellerKey)
	l.fail.Store(true)
	f.must(500, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	if s, b := f.runs(); s != 0 || b != 0 {
		t.Fatalf("a decision that was not audited ran: status %d book %d", s, b)
	}
	// The pause is still open: decided again once the log works.
	l.fail.Store(false)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	f.check(conv,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob allow",
		"executed P call_status person:bob ok",
		"executed P call_book person:bob ok",
	)
}

func TestAuditEndpoint(t *testing.T) {
	f := newAuditFixture(t, auditOptions{})
	conv, pause := f.pause(travellerKey)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	other, _ := f.pause(travellerKey)
	path := "/v1/conversations/" + conv + "/audit"

	for _, key := range []string{travellerKey, adminKey, auditorKey} {
		out := f.must(200, "GET", path, key, "")
		if out["verified"] != true || out["conversation_id"] != conv {
			t.Errorf("%s: %v, want verified", key, out)
		}
		var kinds []string
		for _, r := range out["records"].([]any) {
			rec := r.(map[string]any)
			if rec["conversation_id"] != conv {
				t.Errorf("%s: a record of another conversation: %v", key, rec)
			}
			kinds = append(kinds, rec["kind"].(string))
		}
		if got, want := strings.Join(kinds, " "), "requested decided executed executed"; got != want {
			t.Errorf("%s: kinds %q, want %q", key, got, want)
		}
		v := out["verification"].(map[string]any)
		if v["records"] != 5.0 || !strings.HasPrefix(v["head"].(string), "5:") || v["anchor"] != v["head"] {
			t.Errorf("%s: verification %v, want 5 records, anchored at the head", key, v)
		}
	}
	// An approver who is no reader, and another user, see nothing.
	for _, key := range []string{approverKey, guestKey} {
		if code, out := f.do("GET", path, key, ""); code != 404 || out["error"] != "not_found" {
			t.Errorf("%s: %d %v, want 404", key, code, out)
		}
	}
	f.must(401, "GET", path, "", "")
	f.must(404, "GET", "/v1/conversations/conv_nope/audit", auditorKey, "")
	if out := f.must(200, "GET", "/v1/conversations/"+other+"/audit", auditorKey, ""); len(out["records"].([]any)) != 1 {
		t.Errorf("the other conversation's records: %v", out["records"])
	}

	// An anchor from elsewhere: it must be in the log.
	rs := auditRecords(t, f.log, conv)
	anchor := rs[1].Anchor().String()
	if out := f.must(200, "GET", path+"?anchor="+anchor, auditorKey, ""); out["verified"] != true {
		t.Errorf("with anchor %s: %v", anchor, out)
	}
	out := f.must(200, "GET", path+"?anchor=99:"+strings.Repeat("a", 64), auditorKey, "")
	if v := out["verification"].(map[string]any); out["verified"] != false || v["problem"] != "anchor_mismatch" {
		t.Errorf("with an anchor past the end: %v", out)
	}
	f.must(400, "GET", path+"?anchor=nope", auditorKey, "")
}

func TestAuditEndpointWithoutLog(t *testing.T) {
	f := newFixture(t, nil)
	conv, _ := f.pause(travellerKey)
	if code, out := f.do("GET", "/v1/conversations/"+conv+"/audit", travellerKey, ""); code != 404 || out["error"] != "no_audit" {
		t.Errorf("%d %v, want 404 no_audit", code, out)
	}
}

// TestAuditEndpointCatchesTampering alters the rows of a log the service
// wrote: the endpoint says it does not verify, and where it breaks.
func TestAuditEndpointCatchesTampering(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		problem   string
		seq       float64
	}{
		{"an edited row", `UPDATE audit_records SET body = replace(body, '"reason":"allow"', '"reason":"deny"') WHERE seq = 2`, "hash_mismatch", 2},
		{"a deleted row", `DELETE FROM audit_records WHERE seq = 3`, "out_of_sequence", 3},
		{"the last row deleted", `DELETE FROM audit_records WHERE seq = 4`, "anchor_mismatch", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAuditFixture(t, auditOptions{})
			conv, pause := f.pause(travellerKey)
			f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
			db, err := sql.Open("sqlite", f.path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if res, err := db.Exec(tc.sql); err != nil {
				t.Fatal(err)
			} else if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("%d rows changed, want 1", n)
			}
			out := f.must(200, "GET", "/v1/conversations/"+conv+"/audit", travellerKey, "")
			v := out["verification"].(map[string]any)
			if out["verified"] != false || v["problem"] != tc.problem || v["seq"] != tc.seq {
				t.Errorf("%v, want not verified: %s at %v", out, tc.problem, tc.seq)
			}
		})
	}
}

// TestAuditCallerAnchorAddsACheck: a caller's older anchor does not stand
// in for the server's own, so records deleted at the end are still found.
func TestAuditCallerAnchorAddsACheck(t *testing.T) {
	f := newAuditFixture(t, auditOptions{})
	conv, pause := f.pause(travellerKey)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	old := auditRecords(t, f.log, conv)[0].Anchor().String()
	db, err := sql.Open("sqlite", f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM audit_records WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	out := f.must(200, "GET", "/v1/conversations/"+conv+"/audit?anchor="+old, travellerKey, "")
	v := out["verification"].(map[string]any)
	if out["verified"] != false || v["problem"] != "anchor_mismatch" || v["caller_anchor"] != old {
		t.Errorf("%v, want not verified (anchor_mismatch) with the caller's anchor %s", out, old)
	}
}

func TestAuditConfigProblems(t *testing.T) {
	client := toolgate.NewClient(flightdemo.Model(), nil, nil)
	for _, tc := range []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"reveal without privacy", server.Config{Audit: audit.NewMemoryLog(), Agents: map[string]*server.Agent{"a": {Client: client, RevealRoles: []string{"r"}}}}, "without a privacy guard"},
		{"reveal without audit", server.Config{Agents: map[string]*server.Agent{"a": {Client: client, RevealRoles: []string{"r"}}}}, "without an audit log"},
		{"digest key without audit", server.Config{AuditDigestKey: []byte("k"), Agents: map[string]*server.Agent{"a": {Client: client}}}, "digest key without an audit log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.New(&tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestAuditAuthorizerPanicsOnNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	server.AuditAuthorizer(nil, audit.NewMemoryLog(), nil)
}

func TestBuildAuditLog(t *testing.T) {
	key := strings.Repeat("7e", 32)
	t.Setenv("TG_TEST_DIGEST_KEY", key)
	for _, tc := range []struct {
		name, audit, file string
		keyed             bool
	}{
		{"in the store", "", "data/toolgate.db", false},
		{"named, with keyed digests", "audit:\n\tsqlite: logs/audit.db\n\tdigest_key_env: TG_TEST_DIGEST_KEY\n", "logs/audit.db", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, strings.Replace(validConfig, "store:\n", tc.audit+"store:\n", 1))
			fc, err := serve.LoadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			f := build(t, fc)
			conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
			f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
			l, err := auditsqlite.Open(t.Context(), filepath.Join(filepath.Dir(path), tc.file), &auditsqlite.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rs := auditRecords(t, l, conv)
			if len(rs) != 1 || rs[0].Kind != audit.KindRequested {
				t.Fatalf("records %v, want one requested", summaries(rs))
			}
			want := audit.Digest([]byte(statusArgs))
			if tc.keyed {
				want = audit.KeyedDigest([]byte(strings.Repeat("\x7e", 32)), []byte(statusArgs))
			}
			if rs[0].ArgsDigest != want {
				t.Errorf("digest %s, want %s", rs[0].ArgsDigest, want)
			}
		})
	}
}
