package server_test

// The attack suite: one test per way around the gate we know of, each
// asserting that the tool never ran and that the audit log says what
// happened.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/provider/scripted"
	recordspkg "github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

// The principals of the attack fixture, by API key.
const (
	atkRequester = "key-atk-ada" // ada: requester
	atkPayer     = "key-atk-pat" // pat: may decide pay
	atkWirer     = "key-atk-wes" // wes: may decide wire
	atkBoth      = "key-atk-bo"  // bo: may decide pay and wire
	atkReader    = "key-atk-rd"  // rd: reads every conversation
)

// atkKeys returns the API keys of the attack fixture; roles replaces the
// roles of the principals it names.
func atkKeys(roles map[string][]string) []server.APIKey {
	base := []struct {
		key, id string
		roles   []string
	}{
		{atkRequester, "ada", []string{"requester"}},
		{atkPayer, "pat", []string{"payer"}},
		{atkWirer, "wes", []string{"wirer"}},
		{atkBoth, "bo", []string{"payer", "wirer"}},
		{atkReader, "rd", []string{"reader"}},
	}
	var out []server.APIKey
	for _, b := range base {
		r := b.roles
		if x, ok := roles[b.id]; ok {
			r = x
		}
		out = append(out, server.APIKey{SHA256: server.HashAPIKey(b.key), Principal: toolgate.Principal{ID: b.id, Roles: r}})
	}
	return out
}

// atkFixture is an agent with one ungated tool (lookup) and two gated ones
// (pay, wire), each recording the arguments it ran with, on a model whose
// next reply the test sets, with an audit log.
type atkFixture struct {
	*fixture
	log    *audit.MemoryLog
	store  toolgate.ConversationStore
	client *toolgate.Client

	mu         sync.Mutex
	reply      []toolgate.ToolCall               // guarded by mu: the model's next reply to a user message
	ran        map[string][]string               // guarded by mu: tool → arguments it ran with
	panic      func(call toolgate.ToolCall) bool // guarded by mu: the confirmation policy panics when it says so
	panicModel bool                              // guarded by mu: the model panics
	panicTool  string                            // guarded by mu: a tool middleware panics for this tool
}

type atkOptions struct {
	configure func(*server.Config)
	clientOpt func(*toolgate.ClientOptions)
	store     toolgate.ConversationStore
	log       *audit.MemoryLog
}

func newAtkFixture(t testing.TB, o atkOptions) *atkFixture {
	t.Helper()
	f := &atkFixture{ran: map[string][]string{}, log: o.log, store: o.store}
	if f.log == nil {
		f.log = audit.NewMemoryLog()
	}
	if f.store == nil {
		f.store = memory.New()
	}
	tool := func(name string, gated bool) *toolgate.Tool {
		return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: name, InputSchema: &jsonschema.Schema{Type: "object"}},
			toolgate.ToolMetadata{RequiresConfirmation: gated},
			func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
				f.mu.Lock()
				f.ran[name] = append(f.ran[name], string(req.Arguments))
				f.mu.Unlock()
				return name + " done", nil
			})
	}
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		f.mu.Lock()
		pm := f.panicModel
		f.mu.Unlock()
		if pm {
			panic("model failure")
		}
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage); ok {
			f.mu.Lock()
			defer f.mu.Unlock()
			return scripted.Reply{ToolCalls: slices.Clone(f.reply)}, nil
		}
		return scripted.Reply{Text: "done"}, nil
	})
	opts := &toolgate.ClientOptions{Store: f.store,
		Policy: func(call toolgate.ToolCall, _ toolgate.ToolMetadata) bool {
			f.mu.Lock()
			p := f.panic
			f.mu.Unlock()
			if p != nil && p(call) {
				panic("policy failure on " + call.Name)
			}
			// Arguments holding "gate" need a decision, whatever the tool.
			return strings.Contains(call.Arguments, `"gate"`)
		},
	}
	opts.ToolMiddleware = append(opts.ToolMiddleware, func(next toolgate.ToolFunc) toolgate.ToolFunc {
		return func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
			f.mu.Lock()
			pt := f.panicTool
			f.mu.Unlock()
			if pt != "" && pt == req.Call.Name {
				panic("middleware failure on " + pt)
			}
			return next(ctx, req)
		}
	})
	if o.clientOpt != nil {
		o.clientOpt(opts)
	}
	client := toolgate.NewClient(model, []*toolgate.Tool{tool("lookup", false), tool("pay", true), tool("wire", true)}, opts)
	f.client = client
	cfg := &server.Config{
		Agents: map[string]*server.Agent{"ops": {
			Client:         client,
			RequesterRoles: []string{"requester"},
			Approvals: []server.ApprovalRule{
				{Tools: []string{"pay"}, Roles: []string{"payer"}, StickyMax: 60e9 * 60},
				{Tools: []string{"wire"}, Roles: []string{"wirer"}},
			},
		}},
		APIKeys:      atkKeys(nil),
		ReadAllRoles: []string{"reader"},
		Audit:        f.log,
		Logger:       slog.New(slog.DiscardHandler),
	}
	if o.configure != nil {
		o.configure(cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.fixture = &fixture{t: t, h: srv, srv: srv}
	return f
}

// setReply sets the model's next reply to a user message.
func (f *atkFixture) setReply(calls ...toolgate.ToolCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = calls
}

// ranWith returns the arguments tool ran with, in order.
func (f *atkFixture) ranWith(tool string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ran[tool])
}

// noneRan fails the test when any of tools ran.
func (f *atkFixture) noneRan(tools ...string) {
	f.t.Helper()
	for _, tool := range tools {
		if got := f.ranWith(tool); len(got) > 0 {
			f.t.Errorf("%s ran with %q; want it never to run", tool, got)
		}
	}
}

// call is a tool call of a reply.
func call(id, tool, args string) toolgate.ToolCall {
	return toolgate.ToolCall{ID: id, Name: tool, Arguments: args}
}

// paused starts a conversation for ada whose turn pauses on calls; it
// returns the conversation's and the pause's ids.
func (f *atkFixture) paused(calls ...toolgate.ToolCall) (conv, pause string) {
	f.t.Helper()
	f.setReply(calls...)
	conv = f.must(201, "POST", "/v1/conversations", atkRequester, `{"agent":"ops"}`)["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"go"}`)
	if out["status"] != "paused" {
		f.t.Fatalf("turn: %v, want paused", out)
	}
	return conv, out["pause"].(map[string]any)["id"].(string)
}

// records returns the audit records of conversation conv.
func (f *atkFixture) records(conv string) []audit.Record {
	f.t.Helper()
	var out []audit.Record
	for r, err := range f.log.Records(context.Background(), &audit.Query{ConversationID: conv}) {
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, *r)
	}
	return out
}

// recordsOf returns the kinds and reasons of the records of conv about
// the call with key, as "kind: reason".
func (f *atkFixture) recordsOf(conv, key string) []string {
	f.t.Helper()
	var out []string
	for _, r := range f.records(conv) {
		if r.CallKey == key {
			out = append(out, string(r.Kind)+": "+r.Reason)
		}
	}
	return out
}

// wantRecord fails the test unless conv has a record of kind about the
// call with key whose reason contains reason.
func (f *atkFixture) wantRecord(conv, key string, kind audit.Kind, reason string) {
	f.t.Helper()
	for _, r := range f.records(conv) {
		if r.CallKey == key && r.Kind == kind && strings.Contains(r.Reason, reason) {
			return
		}
	}
	f.t.Errorf("no %s record of call %s with reason %q; the records of the call: %q", kind, key, reason, f.recordsOf(conv, key))
}

// noRecord fails the test when conv has a record of kind about key.
func (f *atkFixture) noRecord(conv, key string, kind audit.Kind) {
	f.t.Helper()
	for _, r := range f.records(conv) {
		if r.CallKey == key && r.Kind == kind {
			f.t.Errorf("a %s record of call %s (%q); want none", kind, key, r.Reason)
		}
	}
}

// decide posts a decision request.
func (f *atkFixture) decide(key, conv, pause, body string) (int, map[string]any) {
	f.t.Helper()
	return f.do("POST", decisionsPath(conv, pause), key, body)
}

func TestAttackEditSmugglingOnASiblingCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []toolgate.ToolCall
		body  string
		key   string // the call the request smuggles into
	}{
		{"edit of a call that awaited nothing",
			[]toolgate.ToolCall{call("c1", "lookup", `{"q":"a"}`), call("c2", "pay", `{"amount":1}`)},
			`{"decisions":[{"key":"c2","verdict":"allow"},{"key":"c1","verdict":"allow","arguments":{"q":"DROP"}}]}`, "c1"},
		{"deny of a call of a tool the decider may not decide",
			[]toolgate.ToolCall{call("c1", "lookup", `{"q":"a"}`), call("c2", "pay", `{"amount":1}`)},
			`{"decisions":[{"key":"c2","verdict":"allow"},{"key":"c1","verdict":"deny","message":"no"}]}`, "c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAtkFixture(t, atkOptions{})
			conv, pause := f.paused(tc.calls...)
			code, out := f.decide(atkPayer, conv, pause, tc.body)
			if code != 403 || out["error"] != "not_decidable" || out["key"] != tc.key {
				t.Fatalf("decision: %d %v, want 403 not_decidable naming %s", code, out, tc.key)
			}
			f.noneRan("lookup", "pay", "wire")
			f.wantRecord(conv, tc.key, audit.KindRefused, "not_decidable")
			f.noRecord(conv, "c2", audit.KindDecided)
			// The pause is still open: a decision within the rules runs.
			f.must(200, "POST", decisionsPath(conv, pause), atkPayer, `{"decisions":[{"key":"c2","verdict":"allow"}]}`)
			if got := f.ranWith("lookup"); !slices.Equal(got, []string{`{"q":"a"}`}) {
				t.Errorf("lookup ran with %q, want the model's arguments once", got)
			}
		})
	}
}

func TestAttackEditOnAGatedSiblingOfAnotherApprover(t *testing.T) {
	// pat may decide pay, not wire; a reply awaiting only pay, with a
	// wire call that the policy did not gate, cannot be edited by pat.
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1}`), call("c2", "wire", `{"to":"x"}`))
	code, out := f.decide(atkPayer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"},{"key":"c2","verdict":"allow","arguments":{"to":"evil"}}]}`)
	if code != 403 {
		t.Fatalf("decision: %d %v, want 403", code, out)
	}
	f.noneRan("pay", "wire")
	if len(f.records(conv)) == 0 {
		t.Error("no audit records")
	}
}

func TestAttackDuplicateJSONMembers(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"two decisions members", `{"decisions":[{"key":"c1","verdict":"deny"}],"decisions":[{"key":"c1","verdict":"allow"}]}`},
		{"two verdicts", `{"decisions":[{"key":"c1","verdict":"deny","verdict":"allow"}]}`},
		{"a case variant", `{"Decisions":[{"key":"c1","verdict":"allow"}]}`},
		{"a case variant inside", `{"decisions":[{"key":"c1","Verdict":"allow"}]}`},
		{"invalid UTF-8", "{\"decisions\":[{\"key\":\"c1\",\"verdict\":\"allow\",\"message\":\"\xff\"}]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAtkFixture(t, atkOptions{})
			conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
			code, out := f.decide(atkPayer, conv, pause, tc.body)
			if code != 400 {
				t.Fatalf("decision: %d %v, want 400", code, out)
			}
			f.noneRan("pay")
			f.noRecord(conv, "c1", audit.KindDecided)
			f.wantRecord(conv, "c1", audit.KindRequested, "awaiting")
		})
	}
	f := newAtkFixture(t, atkOptions{})
	if code, out := f.do("POST", "/v1/conversations", atkRequester, `{"Agent":"ops"}`); code != 400 || out["error"] != "unknown_field" {
		t.Errorf(`{"Agent":...}: %d %v, want 400 unknown_field`, code, out)
	}
	if code, out := f.do("POST", "/v1/conversations", atkRequester, `{"agent":"ops","agent":"ops"}`); code != 400 || out["error"] != "invalid_json" {
		t.Errorf(`two "agent" members: %d %v, want 400 invalid_json`, code, out)
	}
}

func TestAttackRevokedRoleBeforeDecision(t *testing.T) {
	t.Run("the owner's role", func(t *testing.T) {
		f := newAtkFixture(t, atkOptions{})
		conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
		if err := f.srv.SetAPIKeys(atkKeys(map[string][]string{"ada": nil})); err != nil {
			t.Fatal(err)
		}
		code, out := f.decide(atkPayer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"}]}`)
		if code != 403 || out["error"] != "owner_unavailable" {
			t.Fatalf("decision: %d %v, want 403 owner_unavailable", code, out)
		}
		f.noneRan("pay")
		f.wantRecord(conv, "c1", audit.KindRefused, "owner_unavailable")
		f.noRecord(conv, "c1", audit.KindDecided)
	})
	t.Run("the approver's role", func(t *testing.T) {
		f := newAtkFixture(t, atkOptions{})
		conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
		if err := f.srv.SetAPIKeys(atkKeys(map[string][]string{"pat": {"wirer"}})); err != nil {
			t.Fatal(err)
		}
		code, out := f.decide(atkPayer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"}]}`)
		if code != 404 && code != 403 {
			t.Fatalf("decision: %d %v, want 403 or 404", code, out)
		}
		f.noneRan("pay")
		f.noRecord(conv, "c1", audit.KindDecided)
	})
	t.Run("the owner's key removed", func(t *testing.T) {
		f := newAtkFixture(t, atkOptions{})
		conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
		var keys []server.APIKey
		for _, k := range atkKeys(nil) {
			if k.Principal.ID != "ada" {
				keys = append(keys, k)
			}
		}
		if err := f.srv.SetAPIKeys(keys); err != nil {
			t.Fatal(err)
		}
		code, out := f.decide(atkPayer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"}]}`)
		if code != 403 || out["error"] != "owner_unavailable" {
			t.Fatalf("decision: %d %v, want 403 owner_unavailable", code, out)
		}
		f.noneRan("pay")
		if code, _ := f.do("GET", "/v1/conversations/"+conv, atkRequester, ""); code != 401 {
			t.Errorf("the removed key still authenticates: %d", code)
		}
	})
}

func TestAttackRevokedRoleRunsTurnsWithTheCurrentOne(t *testing.T) {
	// An authorizer that lets only "requester" run pay: the roles it sees
	// are the ones the request authenticated, not those stored with the
	// conversation.
	var mu sync.Mutex
	var seen [][]string
	f := newAtkFixture(t, atkOptions{clientOpt: func(o *toolgate.ClientOptions) {
		o.ToolMiddleware = append(o.ToolMiddleware, func(next toolgate.ToolFunc) toolgate.ToolFunc {
			return func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
				mu.Lock()
				seen = append(seen, slices.Clone(req.Principal.Roles))
				mu.Unlock()
				return next(ctx, req)
			}
		})
	}})
	f.setReply(call("c1", "lookup", `{}`))
	conv := f.must(201, "POST", "/v1/conversations", atkRequester, `{"agent":"ops"}`)["id"].(string)
	f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"one"}`)
	if err := f.srv.SetAPIKeys(atkKeys(map[string][]string{"ada": {"requester", "extra"}})); err != nil {
		t.Fatal(err)
	}
	f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"two"}`)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[[requester] [requester extra]]" {
		t.Errorf("the tools saw roles %v, want [[requester] [requester extra]]", seen)
	}
}
func TestAttackStickyWithEdits(t *testing.T) {
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1000}`))
	f.must(200, "POST", decisionsPath(conv, pause), atkPayer,
		`{"decisions":[{"key":"c1","verdict":"allow","arguments":{"amount":1}}],"sticky":{"minutes":10,"same_arguments":true}}`)
	if got := f.ranWith("pay"); !slices.Equal(got, []string{`{"amount":1}`}) {
		t.Fatalf("pay ran with %q, want the edited arguments", got)
	}
	// The model asks again with what it wrote first: that was never
	// allowed, so it waits for a person.
	f.setReply(call("c2", "pay", `{"amount":1000}`))
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"again"}`)
	if out["status"] != "paused" {
		t.Fatalf("the model's original arguments: %v, want a pause", out)
	}
	if got := f.ranWith("pay"); len(got) != 1 {
		t.Errorf("pay ran %d times, want once", len(got))
	}
	f.noRecord(conv, "c2", audit.KindDecided)
	f.wantRecord(conv, "c2", audit.KindRequested, "awaiting")
	// What ran is covered.
	f.must(200, "POST", decisionsPath(conv, out["pause"].(map[string]any)["id"].(string)), atkPayer, `{"decisions":[{"key":"c2","verdict":"deny"}]}`)
	f.setReply(call("c3", "pay", `{ "amount" : 1 }`))
	if out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"small"}`); out["status"] != "completed" {
		t.Errorf("the edited arguments again: %v, want completed by the grant", out)
	}
	f.wantRecord(conv, "c3", audit.KindDecided, "allow")
}

func TestAttackStickyAfterARuleChange(t *testing.T) {
	grant := func(t *testing.T, o atkOptions) (*atkFixture, string) {
		f := newAtkFixture(t, o)
		conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
		f.must(200, "POST", decisionsPath(conv, pause), atkPayer, `{"decisions":[{"key":"c1","verdict":"allow"}],"sticky":{"minutes":30}}`)
		return f, conv
	}
	again := func(t *testing.T, f, first *atkFixture, conv string) {
		t.Helper()
		f.setReply(call("c2", "pay", `{"amount":1}`))
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"again"}`)
		if out["status"] != "paused" {
			t.Fatalf("after the change: %v, want a pause", out)
		}
		if got := len(first.ranWith("pay")); got != 1 {
			t.Errorf("pay ran %d times, want once (before the change)", got)
		}
		if f != first {
			f.noneRan("pay")
		}
		f.noRecord(conv, "c2", audit.KindDecided)
	}
	t.Run("the granter's role revoked", func(t *testing.T) {
		f, conv := grant(t, atkOptions{})
		if err := f.srv.SetAPIKeys(atkKeys(map[string][]string{"pat": {"wirer"}})); err != nil {
			t.Fatal(err)
		}
		again(t, f, f, conv)
	})
	// The other changes need a new configuration: a second server on the
	// same stores, as after a restart.
	for _, tc := range []struct {
		name   string
		change func(*server.Config)
	}{
		{"sticky_max removed", func(c *server.Config) { c.Agents["ops"].Approvals[0].StickyMax = 0 }},
		{"sticky_max below the grant", func(c *server.Config) { c.Agents["ops"].Approvals[0].StickyMax = 60e9 * 5 }},
		{"two approvers now", func(c *server.Config) {
			c.Agents["ops"].Approvals[0].StickyMax = 0
			c.Agents["ops"].Approvals[0].Approvers = 2
		}},
		{"another role decides", func(c *server.Config) { c.Agents["ops"].Approvals[0].Roles = []string{"wirer"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := recordspkg.NewMemory()
			f, conv := grant(t, atkOptions{configure: func(c *server.Config) { c.Records = shared }})
			g := newAtkFixture(t, atkOptions{store: f.store, log: f.log, configure: func(c *server.Config) {
				c.Records = shared
				tc.change(c)
			}})
			again(t, g, f, conv)
		})
	}
}

func TestAttackGrantRevoked(t *testing.T) {
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
	out := f.must(200, "POST", decisionsPath(conv, pause), atkPayer, `{"decisions":[{"key":"c1","verdict":"allow"}],"sticky":{"minutes":30}}`)
	id := out["grants"].([]any)[0].(map[string]any)["id"].(string)
	// Neither the requester nor a stranger may revoke it; the granter may.
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/grants/"+id+"/revoke", atkRequester, ""); code != 403 && code != 404 {
		t.Errorf("the requester's revocation: %d %v, want 403 or 404", code, out)
	}
	f.must(200, "POST", "/v1/conversations/"+conv+"/grants/"+id+"/revoke", atkPayer, "")
	f.setReply(call("c2", "pay", `{"amount":1}`))
	if out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"again"}`); out["status"] != "paused" {
		t.Fatalf("after the revocation: %v, want a pause", out)
	}
	if got := f.ranWith("pay"); len(got) != 1 {
		t.Errorf("pay ran %d times, want once", len(got))
	}
	var revoked bool
	for _, r := range f.records(conv) {
		if r.Kind == audit.KindRevoked && strings.Contains(r.Reason, id) && r.Actor.ID == "pat" {
			revoked = true
		}
	}
	if !revoked {
		t.Errorf("no revoked record naming the grant; records: %v", f.records(conv))
	}
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/grants/"+id+"/revoke", atkPayer, ""); code != 404 {
		t.Errorf("revoking again: %d %v, want 404", code, out)
	}
}

func TestAttackPanics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		// where panics: "policy" (the confirmation policy, on the
		// ungated call), "model", or "tool" (a tool middleware, when the
		// paused reply resumes)
		where string
	}{
		{"policy in a plain turn", false, "policy"},
		{"policy in a streamed turn", true, "policy"},
		{"model in a plain turn", false, "model"},
		{"model in a streamed turn", true, "model"},
		{"tool middleware in a resumed turn", false, "tool"},
		{"tool middleware in a streamed resumed turn", true, "tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAtkFixture(t, atkOptions{})
			f.mu.Lock()
			switch tc.where {
			case "policy":
				f.panic = func(c toolgate.ToolCall) bool { return c.Name == "lookup" }
			case "model":
				f.panicModel = true
			case "tool":
				f.panicTool = "pay"
			}
			f.mu.Unlock()
			f.setReply(call("c1", "lookup", `{}`), call("c2", "pay", `{}`))
			conv := f.must(201, "POST", "/v1/conversations", atkRequester, `{"agent":"ops"}`)["id"].(string)
			path, body := "/v1/conversations/"+conv+"/messages", `{"input":"go"}`
			if tc.where == "tool" {
				out := f.must(200, "POST", path, atkRequester, body)
				path, body = decisionsPath(conv, out["pause"].(map[string]any)["id"].(string)), `{"decisions":[{"key":"c2","verdict":"allow"}]}`
			}
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			key := atkRequester
			if tc.where == "tool" {
				key = atkPayer
			}
			req.Header.Set("Authorization", "Bearer "+key)
			if tc.stream {
				req.Header.Set("Accept", "text/event-stream")
			}
			rec := f.serve(req)
			got := rec.Body.String()
			failed := strings.Contains(got, `"internal"`) && (rec.Code == 500 || strings.Contains(got, "event: error"))
			paused := rec.Code == 200 && strings.Contains(got, `"paused"`)
			switch tc.where {
			case "policy":
				if !failed && !paused {
					t.Errorf("%d %q, want a typed error or a pause", rec.Code, got)
				}
				f.noneRan("lookup")
				f.noRecord(conv, "c2", audit.KindExecuted)
			case "model":
				if !failed {
					t.Errorf("%d %q, want 500 internal or an error event", rec.Code, got)
				}
				f.noneRan("lookup")
			case "tool":
				// A panic of code around a tool (its middleware) ends
				// the resumption with a typed error: the call does not
				// start, and no record says it ran.
				if !failed {
					t.Errorf("%d %q, want 500 internal or an error event", rec.Code, got)
				}
				f.noRecord(conv, "c2", audit.KindExecuted)
			}
			f.noneRan("pay", "wire")
			// The server keeps serving.
			f.mu.Lock()
			f.panic, f.panicModel, f.panicTool = nil, false, ""
			f.mu.Unlock()
			f.must(200, "GET", "/v1/conversations/"+conv, atkRequester, "")
		})
	}
}

func TestAttackPIIInDecisionRecords(t *testing.T) {
	path := privacyConfig(t)
	fc, err := serve.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	pauseOf := func() (string, string) {
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.PrivateInput+`"}`)
		return conv, out["pause"].(map[string]any)["id"].(string)
	}
	// A deny message and an edit, both with personal data the approver
	// typed.
	conv, pause := pauseOf()
	deny := `{"decisions":[{"key":"call_book","verdict":"deny","message":"not for ada.lovelace@example.com"}]}`
	out := f.must(200, "POST", decisionsPath(conv, pause), approverKey, deny)
	if got := holdsPrivate(jsonText(t, out)); got != nil {
		t.Errorf("the decision's answer shows %v: %v", got, out["decision"])
	}
	conv2, pause2 := pauseOf()
	edit := `{"decisions":[{"key":"call_book","verdict":"allow","arguments":{"flight":"VX205","email":"ada.lovelace@example.com"}}]}`
	out = f.must(200, "POST", decisionsPath(conv2, pause2), approverKey, edit)
	if got := holdsPrivate(jsonText(t, out)); got != nil {
		t.Errorf("the edit's answer shows %v: %v", got, out["decision"])
	}
	for _, c := range []string{conv, conv2} {
		view := f.must(200, "GET", "/v1/conversations/"+c, travellerKey, "")
		if got := holdsPrivate(jsonText(t, view["decisions"])); got != nil {
			t.Errorf("the owner's view of the decision records shows %v: %v", got, view["decisions"])
		}
		if !strings.Contains(jsonText(t, view["decisions"]), "[EMAIL_ADDRESS_") {
			t.Errorf("the decision records show no token: %v", view["decisions"])
		}
		// A revealer sees the originals, and the reveal is audited.
		view = f.must(200, "GET", "/v1/conversations/"+c+"?reveal=true", revealerKey, "")
		if got := holdsPrivate(jsonText(t, view["decisions"])); got == nil {
			t.Errorf("the revealed decision records show no original: %v", view["decisions"])
		}
	}
	// A 409: tokens for the approvers who may decide, and no record at all
	// for who may not decide nor read.
	code, out := f.do("POST", decisionsPath(conv, pause), approverKey, deny)
	if code != 409 || out["decision"] == nil {
		t.Fatalf("a second decision: %d %v, want 409 with the first decision", code, out)
	}
	if got := holdsPrivate(jsonText(t, out)); got != nil {
		t.Errorf("the 409 shows %v: %v", got, out)
	}
}

func TestAttackConflictBodyForStrangers(t *testing.T) {
	// wes may decide wire, not pay: a 409 on a pay pause does not show
	// him what pat decided.
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
	f.must(200, "POST", decisionsPath(conv, pause), atkPayer, `{"decisions":[{"key":"c1","verdict":"deny","message":"secret reason"}]}`)
	code, out := f.decide(atkWirer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"}]}`)
	if code != 409 || out["decision"] != nil {
		t.Errorf("a stranger's decision: %d %v, want 409 without the first decision", code, out)
	}
	code, out = f.decide(atkBoth, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"}]}`)
	if code != 409 {
		t.Errorf("another payer's decision: %d %v, want 409", code, out)
	}
	if code, out := f.decide(atkPayer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow"}]}`); code != 409 || out["decision"] == nil {
		t.Errorf("the decider again: %d %v, want 409 with the decision", code, out)
	}
	f.noneRan("pay")
}

func TestAttackKeysThatLookLikeIDs(t *testing.T) {
	// The second call's id is "#0", the first call's key: deciding by id
	// would allow the wrong call. The pause is flagged and shows each
	// call's key.
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("", "pay", `{"amount":1}`), call("#0", "wire", `{"to":"x"}`))
	item := f.must(200, "GET", "/v1/inbox", atkBoth, "")["pauses"].([]any)[0].(map[string]any)
	if item["keys_confusable"] != true {
		t.Errorf("inbox item %v, want keys_confusable", item)
	}
	var keys []string
	for _, c := range item["calls"].([]any) {
		keys = append(keys, c.(map[string]any)["key"].(string))
	}
	if fmt.Sprint(keys) != "[#0 #1]" {
		t.Errorf("keys %v, want [#0 #1]", keys)
	}
	view := f.must(200, "GET", "/v1/conversations/"+conv, atkRequester, "")
	if view["pause"].(map[string]any)["keys_confusable"] != true {
		t.Errorf("conversation pause %v, want keys_confusable", view["pause"])
	}
	// Plain ids are not flagged.
	g := newAtkFixture(t, atkOptions{})
	g.paused(call("c1", "pay", `{}`))
	if item := g.must(200, "GET", "/v1/inbox", atkPayer, "")["pauses"].([]any)[0].(map[string]any); item["keys_confusable"] != nil {
		t.Errorf("plain ids flagged: %v", item)
	}
	f.noneRan("pay", "wire")
	if code, _ := f.decide(atkBoth, conv, pause, `{"decisions":[{"key":"#1","verdict":"deny"},{"key":"#0","verdict":"allow"}]}`); code != 200 {
		t.Errorf("decision by keys: %d", code)
	}
	if got := f.ranWith("pay"); len(got) != 1 {
		t.Errorf("pay ran %d times, want once", len(got))
	}
	f.noneRan("wire")
}

func TestAttackDecisionBounds(t *testing.T) {
	f := newAtkFixture(t, atkOptions{configure: func(c *server.Config) { c.MaxDenyMessage, c.MaxEditedArguments = 10, 32 }})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
	for _, tc := range []struct{ body, code string }{
		{`{"decisions":[{"key":"c1","verdict":"deny","message":"ééééééééééé"}]}`, "message_too_long"},
		{`{"decisions":[{"key":"c1","verdict":"allow","arguments":{"amount":1,"memo":"` + strings.Repeat("x", 40) + `"}}]}`, "arguments_too_large"},
	} {
		if code, out := f.decide(atkPayer, conv, pause, tc.body); code != 422 || out["error"] != tc.code || out["key"] != "c1" {
			t.Errorf("%s: %d %v, want 422 %s", tc.body, code, out, tc.code)
		}
	}
	f.noneRan("pay")
	f.wantRecord(conv, "c1", audit.KindRefused, "message_too_long")
	// Ten characters are accepted.
	f.must(200, "POST", decisionsPath(conv, pause), atkPayer, `{"decisions":[{"key":"c1","verdict":"deny","message":"éééééééééé"}]}`)
	if item := newAtkFixture(t, atkOptions{}); item != nil {
		item.paused(call("c1", "pay", `{}`))
		got := item.must(200, "GET", "/v1/inbox", atkPayer, "")["pauses"].([]any)[0].(map[string]any)["max_deny_message"]
		if got != 2000.0 {
			t.Errorf("max_deny_message %v, want the default 2000", got)
		}
	}
}

func TestAttackTwoPersonRuleOnePerson(t *testing.T) {
	two := func(c *server.Config) {
		c.Agents["ops"].Approvals[1].Approvers = 2
		c.APIKeys = append(c.APIKeys,
			server.APIKey{SHA256: server.HashAPIKey("key-atk-wes-oidc"), Principal: toolgate.Principal{ID: "00u-wes", Roles: []string{"wirer"}}},
			server.APIKey{SHA256: server.HashAPIKey("key-atk-WES"), Principal: toolgate.Principal{ID: "WES", Roles: []string{"wirer"}}})
	}
	for _, tc := range []struct {
		name, second string
		configure    func(*server.Config)
	}{
		{"linked identities", "key-atk-wes-oidc", func(c *server.Config) { c.Identities = map[string]string{"00u-wes": "wes"} }},
		{"case-insensitive ids", "key-atk-WES", func(c *server.Config) { c.CaseInsensitiveIDs = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAtkFixture(t, atkOptions{configure: func(c *server.Config) { two(c); tc.configure(c) }})
			conv, pause := f.paused(call("c1", "wire", `{"to":"x"}`))
			allow := `{"decisions":[{"key":"c1","verdict":"allow"}]}`
			f.must(202, "POST", decisionsPath(conv, pause), atkWirer, allow)
			if code, out := f.decide(tc.second, conv, pause, allow); code != 409 || out["error"] != "same_approver" {
				t.Errorf("the same person again: %d %v, want 409 same_approver", code, out)
			}
			f.noneRan("wire")
			f.noRecord(conv, "c1", audit.KindDecided)
			// A second, distinct person completes it.
			f.must(200, "POST", decisionsPath(conv, pause), atkBoth, allow)
		})
	}
}

func TestAPIAnswersAreNotCached(t *testing.T) {
	f := newAtkFixture(t, atkOptions{})
	for _, path := range []string{"/v1/inbox", "/v1/conversations", "/healthz"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+atkPayer)
		if got := f.serve(req).Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, got)
		}
	}
}

func TestSessionFollowsTheKeyTable(t *testing.T) {
	f := newAtkFixture(t, atkOptions{})
	cookie := signIn(t, f.h, atkPayer)
	if code, _ := f.doCookie("GET", "/v1/inbox", cookie, ""); code != 200 {
		t.Fatalf("with the session: %d", code)
	}
	var keys []server.APIKey
	for _, k := range atkKeys(nil) {
		if k.Principal.ID != "pat" {
			keys = append(keys, k)
		}
	}
	if err := f.srv.SetAPIKeys(keys); err != nil {
		t.Fatal(err)
	}
	if code, _ := f.doCookie("GET", "/v1/inbox", cookie, ""); code != 401 {
		t.Errorf("the session of a removed key: %d, want 401", code)
	}
	if err := f.srv.SetAPIKeys([]server.APIKey{{SHA256: "nope"}}); err == nil {
		t.Error("SetAPIKeys of a bad table succeeded")
	}
}

// countingStore counts the conversations loaded.
type countingStore struct {
	*memory.Store
	loads atomic.Int64
}

func (s *countingStore) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	s.loads.Add(1)
	return s.Store.Load(ctx, id)
}

func TestInboxLoadsOnlyDecidablePauses(t *testing.T) {
	store := &countingStore{Store: memory.New()}
	// Only the inbox's loads are counted: the background recovery of
	// claims, whose first pass reads every open pause's conversation and
	// may run at any moment after the server starts, is off.
	f := newAtkFixture(t, atkOptions{store: store, configure: func(c *server.Config) { c.ClaimLease = -1 }})
	for range 5 {
		f.paused(call("c1", "pay", `{}`))
	}
	store.loads.Store(0)
	if got := f.must(200, "GET", "/v1/inbox", atkReader, "")["pauses"].([]any); len(got) != 0 {
		t.Errorf("the reader's inbox: %v, want empty", got)
	}
	if n := store.loads.Load(); n != 0 {
		t.Errorf("the inbox of who approves nothing loaded %d conversations, want 0", n)
	}
	if got := f.must(200, "GET", "/v1/inbox", atkPayer, "")["pauses"].([]any); len(got) != 5 {
		t.Errorf("the payer's inbox: %d pauses, want 5", len(got))
	}
	if n := store.loads.Load(); n != 5 {
		t.Errorf("the payer's inbox loaded %d conversations, want 5", n)
	}
}
