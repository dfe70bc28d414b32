package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
)

// The keys of the test principals.
const (
	travellerKey = "key-traveller"
	approverKey  = "key-approver"
	approver2Key = "key-approver-2"
	guestKey     = "key-guest"
	selfKey      = "key-self" // a traveller who is also an approver
	adminKey     = "key-admin"
)

type fixture struct {
	t     testing.TB
	h     http.Handler
	srv   *server.Server
	tools *flightdemo.Tools
}

// newFixture returns the flight agent on the scripted model and a SQLite
// store, served with the test principals.
func newFixture(t testing.TB, store toolgate.ConversationStore) *fixture {
	t.Helper()
	return newFixtureWith(t, store, flightdemo.Model(), nil)
}

// newFixtureWith is newFixture with another model, and configure, if not
// nil, changing the configuration before the server is made.
func newFixtureWith(t testing.TB, store toolgate.ConversationStore, model toolgate.Model, configure func(*server.Config)) *fixture {
	t.Helper()
	if store == nil {
		s, err := sqlite.Open(context.Background(), t.TempDir()+"/toolgate.db", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		store = s
	}
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(model, tools.Tools(), &toolgate.ClientOptions{Store: store, SystemPrompt: flightdemo.SystemPrompt})
	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	// A SQL store keeps the server's records too, as Build sets it up.
	var rs records.Store
	if r, ok := store.(interface {
		Records(context.Context) (records.Store, error)
	}); ok {
		rs = mustRecords(t, r)
	}
	cfg := &server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			key(travellerKey, "ada", "traveller"),
			key(approverKey, "bob", "approver"),
			key(approver2Key, "cy", "approver"),
			key(guestKey, "eve", "guest"),
			key(selfKey, "sam", "traveller", "approver"),
			key(adminKey, "root", "admin"),
		},
		ReadAllRoles: []string{"admin"},
		MaxBodyBytes: 4096,
		Records:      rs,
	}
	if configure != nil {
		configure(cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv, tools: tools}
}

// do sends a request through the handler and returns the status and the
// decoded body.
func (f *fixture) do(method, path, key, body string) (int, map[string]any) {
	f.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		f.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, rec.Body, err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return rec.Code, out
}

// must is do, failing the test unless the status is want.
func (f *fixture) must(want int, method, path, key, body string) map[string]any {
	f.t.Helper()
	code, out := f.do(method, path, key, body)
	if code != want {
		f.t.Fatalf("%s %s: status %d %v, want %d", method, path, code, out, want)
	}
	return out
}

// pause creates a conversation for the traveller and pauses its turn; it
// returns the conversation id and the pause id.
func (f *fixture) pause(key string) (conv, pause string) {
	f.t.Helper()
	c := f.must(201, "POST", "/v1/conversations", key, `{"agent":"flights"}`)
	conv = c["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", key, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		f.t.Fatalf("turn: %v, want paused", out)
	}
	p := out["pause"].(map[string]any)
	if got := fmt.Sprint(p["awaiting"]); got != "[call_book]" {
		f.t.Fatalf("awaiting %s, want [call_book]", got)
	}
	return conv, p["id"].(string)
}

func decisionsPath(conv, pause string) string {
	return "/v1/conversations/" + conv + "/pauses/" + pause + "/decisions"
}

func (f *fixture) runs() (status, book int32) { return f.tools.Status.Load(), f.tools.Book.Load() }

func TestEndToEnd(t *testing.T) {
	f := newFixture(t, nil)
	f.must(200, "GET", "/healthz", "", "")
	conv, pause := f.pause(travellerKey)
	if s, b := f.runs(); s != 0 || b != 0 {
		t.Fatalf("runs before the decision: status %d book %d, want none", s, b)
	}

	// The inbox shows the pause to an approver, not to the traveller or a guest.
	inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")
	items := inbox["pauses"].([]any)
	if len(items) != 1 {
		t.Fatalf("approver's inbox: %v, want one pause", inbox)
	}
	item := items[0].(map[string]any)
	if item["conversation_id"] != conv || item["pause_id"] != pause || item["requester"] != "ada" {
		t.Errorf("inbox item %v", item)
	}
	calls := item["calls"].([]any)
	if len(calls) != 2 || calls[1].(map[string]any)["tool"] != "bookFlight" || calls[1].(map[string]any)["arguments"] != `{"flight":"VX205"}` {
		t.Errorf("inbox calls %v", calls)
	}
	for _, k := range []string{travellerKey, guestKey} {
		if got := f.must(200, "GET", "/v1/inbox", k, "")["pauses"].([]any); len(got) != 0 {
			t.Errorf("inbox of %s: %v, want empty", k, got)
		}
	}

	// Others' conversations are not visible, except to admin and, while
	// its pause waits for them, to the approvers who may decide it.
	f.must(404, "GET", "/v1/conversations/"+conv, guestKey, "")
	f.must(200, "GET", "/v1/conversations/"+conv, approverKey, "")
	f.must(200, "GET", "/v1/conversations/"+conv, adminKey, "")
	if got := f.must(200, "GET", "/v1/conversations", approverKey, "")["conversations"].([]any); len(got) != 0 {
		t.Errorf("approver's conversations: %v, want none", got)
	}
	if got := f.must(200, "GET", "/v1/conversations", travellerKey, "")["conversations"].([]any); len(got) != 1 {
		t.Errorf("traveller's conversations: %v, want one", got)
	}

	// A guest may not decide; the traveller may not decide their own call.
	body := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
	if code, out := f.do("POST", decisionsPath(conv, pause), guestKey, body); code != 404 {
		t.Errorf("guest's decision: %d %v, want 404", code, out)
	}
	if code, out := f.do("POST", decisionsPath(conv, pause), travellerKey, body); code != 403 || out["error"] != "forbidden" {
		t.Errorf("traveller's own decision: %d %v, want 403 forbidden", code, out)
	}

	out := f.must(200, "POST", decisionsPath(conv, pause), approverKey, body)
	if out["status"] != "completed" || out["text"] != "VX205 is on time. Your seat on VX205 is booked." {
		t.Errorf("decision: %v", out)
	}
	if d := out["decision"].(map[string]any); d["decided_by"] != "bob" || d["outcome"] != "decided" {
		t.Errorf("decision record %v", d)
	}
	if s, b := f.runs(); s != 1 || b != 1 {
		t.Errorf("runs: status %d book %d, want 1 1", s, b)
	}
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	if got["pause"] != nil || len(got["messages"].([]any)) != 4 || len(got["decisions"].([]any)) != 1 {
		t.Errorf("conversation after the decision: %v", got)
	}
	if got := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(got) != 0 {
		t.Errorf("inbox after the decision: %v", got)
	}
	// Decided, the pause no longer opens the conversation to its approver.
	f.must(404, "GET", "/v1/conversations/"+conv, approverKey, "")
	// The conversation goes on.
	f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"again"}`)
}

func TestOwnCallForbidden(t *testing.T) {
	f := newFixture(t, nil)
	conv, pause := f.pause(selfKey)
	if got := f.must(200, "GET", "/v1/inbox", selfKey, "")["pauses"].([]any); len(got) != 0 {
		t.Errorf("requester's inbox shows their own call: %v", got)
	}
	code, out := f.do("POST", decisionsPath(conv, pause), selfKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	if code != 403 || out["error"] != "own_call" {
		t.Errorf("own decision: %d %v, want 403 own_call", code, out)
	}
	if s, b := f.runs(); s != 0 || b != 0 {
		t.Errorf("runs: status %d book %d, want none", s, b)
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"deny","message":"Not this week."}]}`)
	if s, b := f.runs(); s != 1 || b != 0 {
		t.Errorf("runs after the denial: status %d book %d, want 1 0", s, b)
	}
}

// TestConcurrentDecisions races 64 decisions, allows and denials from two
// approvers, on one pause, many times, on each store.
func TestConcurrentDecisions(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	t.Run("memory", func(t *testing.T) { raceDecisions(t, newFixture(t, memory.New()), rounds) })
	t.Run("sqlite", func(t *testing.T) { raceDecisions(t, newFixture(t, nil), rounds) })
}

// TestConcurrentServers races decisions on one pause through two servers
// sharing a SQLite file, as two instances would: they share the
// conversation's owner and the decision records, so every loser is told
// who decided.
func TestConcurrentServers(t *testing.T) {
	path := t.TempDir() + "/shared.db"
	open := func() toolgate.ConversationStore {
		s, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := newFixture(t, open()), newFixture(t, open())
	for round := range 10 {
		conv, pause := a.pause(travellerKey)
		const n = 16
		codes := make([]int, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			f := a
			if i%2 == 1 {
				f = b
			}
			wg.Go(func() {
				<-start
				req := httptest.NewRequest("POST", decisionsPath(conv, pause), strings.NewReader(`{"decisions":[{"key":"call_book","verdict":"allow"}]}`))
				req.Header.Set("Authorization", "Bearer "+approverKey)
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, req)
				codes[i] = rec.Code
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, c := range codes {
			switch c {
			case 200:
				ok++
			case 409:
			default:
				t.Errorf("round %d: decision %d: status %d", round, i, c)
			}
		}
		_, ba := a.runs()
		_, bb := b.runs()
		if ok != 1 || ba+bb != int32(round+1) {
			t.Fatalf("round %d: %d decisions succeeded, bookFlight ran %d times in all; want 1, %d", round, ok, ba+bb, round+1)
		}
	}
}

func raceDecisions(t *testing.T, f *fixture, rounds int) {
	for round := range rounds {
		conv, pause := f.pause(travellerKey)
		s0, b0 := f.runs()
		const n = 64
		codes := make([]int, n)
		errs := make([]string, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			body := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
			if i%2 == 1 {
				body = `{"decisions":[{"key":"call_book","verdict":"deny"}]}`
			}
			key := approverKey
			if i%3 == 0 {
				key = approver2Key
			}
			wg.Go(func() {
				<-start
				req := httptest.NewRequest("POST", decisionsPath(conv, pause), strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, req)
				codes[i] = rec.Code
				var e struct{ Error string }
				json.Unmarshal(rec.Body.Bytes(), &e)
				errs[i] = e.Error
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, c := range codes {
			switch {
			case c == 200:
				ok++
			case c == 409 && errs[i] == "already_decided":
			default:
				t.Errorf("round %d: decision %d: %d %s", round, i, c, errs[i])
			}
		}
		s1, b1 := f.runs()
		if ok != 1 || s1-s0 != 1 || b1-b0 > 1 {
			t.Fatalf("round %d: %d decisions succeeded, flightStatus ran %d times, bookFlight %d; want 1, 1, at most 1", round, ok, s1-s0, b1-b0)
		}
	}
}

func TestForgery(t *testing.T) {
	f := newFixture(t, nil)
	conv, pause := f.pause(travellerKey)
	path := decisionsPath(conv, pause)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		problem    string
	}{
		{"unknown key", `{"decisions":[{"key":"call_book","verdict":"allow"},{"key":"call_evil","verdict":"allow"}]}`, 422, "invalid_decisions", "unknown_key"},
		{"missing decision", `{"decisions":[]}`, 422, "invalid_decisions", "missing_decision"},
		{"duplicate", `{"decisions":[{"key":"call_book","verdict":"allow"},{"key":"call_book","verdict":"deny"}]}`, 422, "invalid_decisions", "duplicate_decision"},
		{"bad verdict", `{"decisions":[{"key":"call_book","verdict":"yes"}]}`, 422, "invalid_decisions", "invalid_verdict"},
		{"client reply", `{"decisions":[{"key":"call_book","verdict":"allow"}],"reply":{"role":"assistant","tool_calls":[{"id":"call_book","name":"bookFlight","arguments":"{\"flight\":\"XX1\"}"}]}}`, 400, "unknown_field", ""},
		{"client arguments as text", `{"decisions":[{"key":"call_book","verdict":"allow","arguments":"{\"flight\":\"XX1\"}"}]}`, 422, "invalid_decisions", "invalid_arguments"},
		{"client tool", `{"decisions":[{"key":"call_book","verdict":"allow","tool":"flightStatus","arguments":{"flight":"XX1"}}]}`, 400, "unknown_field", ""},
		{"malformed", `{"decisions":[`, 400, "invalid_json", ""},
		{"two values", `{"decisions":[{"key":"call_book","verdict":"allow"}]} {}`, 400, "invalid_json", ""},
		{"too large", `{"decisions":[{"key":"call_book","verdict":"deny","message":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "body_too_large", ""},
		{"other pause", `{"decisions":[{"key":"call_book","verdict":"allow"}]}`, 404, "pause_not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.name == "other pause" {
				p = decisionsPath(conv, "pause_OTHER")
			}
			code, out := f.do("POST", p, approverKey, tc.body)
			if code != tc.status || out["error"] != tc.code || (tc.problem != "" && out["problem"] != tc.problem) {
				t.Errorf("got %d %v, want %d %s %s", code, out, tc.status, tc.code, tc.problem)
			}
		})
	}
	if s, b := f.runs(); s != 0 || b != 0 {
		t.Fatalf("runs after refused decisions: status %d book %d, want none", s, b)
	}
	// The pause is still open: a valid decision goes through once, and its
	// replay is refused.
	body := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
	f.must(200, "POST", path, approverKey, body)
	out := f.must(409, "POST", path, approverKey, body)
	if out["error"] != "already_decided" || out["decision"].(map[string]any)["decided_by"] != "bob" {
		t.Errorf("replay: %v", out)
	}
	if s, b := f.runs(); s != 1 || b != 1 {
		t.Errorf("runs: status %d book %d, want 1 1", s, b)
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"no key", "GET", "/v1/inbox", "", "", 401, "unauthorized"},
		{"unknown key", "GET", "/v1/conversations", "nope", "", 401, "unauthorized"},
		{"no key to create", "POST", "/v1/conversations", "", "{}", 401, "unauthorized"},
		{"wrong role", "POST", "/v1/conversations", guestKey, `{"agent":"flights"}`, 403, "forbidden"},
		{"unknown agent", "POST", "/v1/conversations", travellerKey, `{"agent":"trains"}`, 422, "unknown_agent"},
		{"unknown route", "GET", "/v1/nothing", travellerKey, "", 404, "not_found"},
		{"wrong method", "DELETE", "/v1/inbox", travellerKey, "", 405, "method_not_allowed"},
		{"malformed", "POST", "/v1/conversations", travellerKey, `{"agent":`, 400, "invalid_json"},
		{"unknown field", "POST", "/v1/conversations", travellerKey, `{"agent":"flights","owner":"bob"}`, 400, "unknown_field"},
		{"too large", "POST", "/v1/conversations", travellerKey, `{"agent":"` + strings.Repeat("a", 5000) + `"}`, 413, "body_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := f.do(tc.method, tc.path, tc.key, tc.body)
			if code != tc.status || out["error"] != tc.code {
				t.Errorf("got %d %v, want %d %s", code, out, tc.status, tc.code)
			}
		})
	}
	// Posting to another's conversation, or when the pause is open.
	conv, _ := f.pause(travellerKey)
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", selfKey, `{"input":"hi"}`); code != 404 {
		t.Errorf("post to another's conversation: %d %v, want 404", code, out)
	}
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", adminKey, `{"input":"hi"}`); code != 403 {
		t.Errorf("admin posts to another's conversation: %d %v, want 403", code, out)
	}
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"hi"}`); code != 409 || out["error"] != "pause_open" {
		t.Errorf("post while paused: %d %v, want 409 pause_open", code, out)
	}
	f.srv.Close()
	if code, _ := f.do("GET", "/healthz", "", ""); code != 503 {
		t.Errorf("after Close: %d, want 503", code)
	}
}

func TestNewInvalidConfig(t *testing.T) {
	client := toolgate.NewClient(flightdemo.Model(), nil, nil)
	for _, tc := range []struct {
		name string
		cfg  *server.Config
		want string
	}{
		{"nil", nil, "no agents"},
		{"nil client", &server.Config{Agents: map[string]*server.Agent{"a": {}}}, `agent "a": no client`},
		{"bad hash", &server.Config{Agents: map[string]*server.Agent{"a": {Client: client}}, APIKeys: []server.APIKey{{SHA256: "abc", Principal: toolgate.Principal{ID: "x"}}}}, "api_keys[0]: sha256"},
		{"no principal", &server.Config{Agents: map[string]*server.Agent{"a": {Client: client}}, APIKeys: []server.APIKey{{SHA256: server.HashAPIKey("k")}}}, "api_keys[0]: empty principal id"},
		{"duplicate", &server.Config{Agents: map[string]*server.Agent{"a": {Client: client}}, APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey("k"), Principal: toolgate.Principal{ID: "x"}},
			{SHA256: server.HashAPIKey("k"), Principal: toolgate.Principal{ID: "y"}},
		}}, "api_keys[1]: the same key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestOpenAPICoversRoutes checks that every route the server registers is
// in docs/openapi.yaml, and nothing else is.
func TestOpenAPICoversRoutes(t *testing.T) {
	f := newFixture(t, memory.New())
	data, err := readFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	documented := openAPIRoutes(string(data))
	registered := map[string]bool{}
	for _, r := range f.srv.Routes() {
		registered[r] = true
		if !documented[r] {
			t.Errorf("route %q is not in docs/openapi.yaml", r)
		}
	}
	for r := range documented {
		if !registered[r] {
			t.Errorf("docs/openapi.yaml documents %q, which the server does not serve", r)
		}
	}
}

// openAPIRoutes returns "METHOD /path" for each operation of an OpenAPI
// document's paths section: a path is a two-space-indented key starting
// with '/', a method a four-space-indented key.
func openAPIRoutes(doc string) map[string]bool {
	out := map[string]bool{}
	inPaths, path := false, ""
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && line[0] != ' ' && line[0] != '#':
			inPaths = false
		case inPaths && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case inPaths && path != "" && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(strings.TrimSpace(line), ":")
			switch m {
			case "get", "post", "put", "patch", "delete":
				out[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	return out
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
