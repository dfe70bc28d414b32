package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/postgres"
	"github.com/toolgate/toolgate/store/sqlite"
)

// sharedStore is a conversation store that also keeps the server's
// records, as both SQL stores do.
type sharedStore interface {
	toolgate.ConversationStore
	Records(context.Context) (records.Store, error)
	Close() error
}

func openSQLite(t *testing.T, path string) sharedStore {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// postgresSchema returns the connection string of the test database and a
// fresh schema, dropped when the test ends; the test is skipped without
// TOOLGATE_POSTGRES_URL, and fails without it under CI.
func postgresSchema(t *testing.T) (string, string) {
	t.Helper()
	return pgtest.Schema(t, "toolgate_server_")
}

func openPostgres(t *testing.T, url, schema string) sharedStore {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRestart restarts the server on the same SQLite file: the
// conversation, its owner and its pause are still there, the inbox still
// lists the pause, and a decision record survives the next restart.
func TestRestart(t *testing.T) {
	path := t.TempDir() + "/toolgate.db"
	store := openSQLite(t, path)
	f := newFixture(t, store)
	conv, pause := f.pause(travellerKey)
	f.srv.Close()
	store.Close()

	store = openSQLite(t, path)
	f = newFixture(t, store)
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	if p, _ := got["pause"].(map[string]any); p == nil || p["id"] != pause || got["owner"] != "ada" {
		t.Fatalf("conversation after a restart: %v, want ada's, with pause %s", got, pause)
	}
	if list := f.must(200, "GET", "/v1/conversations", travellerKey, "")["conversations"].([]any); len(list) != 1 {
		t.Errorf("ada's conversations after a restart: %v, want one", list)
	}
	inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any)
	if len(inbox) != 1 || inbox[0].(map[string]any)["pause_id"] != pause {
		t.Fatalf("inbox after a restart: %v, want the pause", inbox)
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	f.srv.Close()
	store.Close()

	store = openSQLite(t, path)
	defer store.Close()
	f = newFixture(t, store)
	recs := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["decisions"].([]any)
	if len(recs) != 1 {
		t.Fatalf("decision records after a restart: %v, want one", recs)
	}
	if r := recs[0].(map[string]any); r["decided_by"] != "bob" || r["source"] != "person" || r["outcome"] != "decided" || r["pause_id"] != pause {
		t.Errorf("decision record after a restart: %v", r)
	}
	out := f.must(409, "POST", decisionsPath(conv, pause), approver2Key, allowBook)
	if out["error"] != "already_decided" || out["decision"].(map[string]any)["decided_by"] != "bob" {
		t.Errorf("a decision after the restart: %v, want already_decided by bob", out)
	}
	if got := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(got) != 0 {
		t.Errorf("inbox: %v, want empty", got)
	}
}

// TestInstancesShareRecords runs two servers on one database: what one
// records, the other knows.
func TestInstancesShareRecords(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := t.TempDir() + "/shared.db"
		shareRecords(t, func() sharedStore { return openSQLite(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		url, schema := postgresSchema(t)
		shareRecords(t, func() sharedStore { return openPostgres(t, url, schema) })
	})
}

func shareRecords(t *testing.T, open func() sharedStore) {
	sa, sb := open(), open()
	defer sa.Close()
	defer sb.Close()
	a, b := newFixture(t, sa), newFixture(t, sb)
	conv, pause := a.pause(travellerKey)
	// b knows the owner, the conversation and the pause.
	if got := b.must(200, "GET", "/v1/conversations", travellerKey, "")["conversations"].([]any); len(got) != 1 || got[0].(map[string]any)["id"] != conv {
		t.Errorf("b lists %v, want %s", got, conv)
	}
	// The approver may read the conversation while its pause waits for
	// them, on either instance.
	b.must(200, "GET", "/v1/conversations/"+conv, approverKey, "")
	inbox := b.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any)
	if len(inbox) != 1 || inbox[0].(map[string]any)["pause_id"] != pause {
		t.Fatalf("b's inbox: %v, want the pause", inbox)
	}
	b.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	out := a.must(409, "POST", decisionsPath(conv, pause), approver2Key, allowBook)
	if out["error"] != "already_decided" || out["decision"].(map[string]any)["decided_by"] != "bob" {
		t.Errorf("a late decision on a: %v, want already_decided by bob", out)
	}
	if got := a.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(got) != 0 {
		t.Errorf("a's inbox after b's decision: %v", got)
	}

	// Decisions raced through both instances: one wins, every loser is
	// told by whom.
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		conv, pause := a.pause(travellerKey)
		const n = 16
		codes, errs := make([]int, n), make([]string, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			f := a
			if i%2 == 1 {
				f = b
			}
			key := approverKey
			if i%3 == 0 {
				key = approver2Key
			}
			wg.Go(func() {
				<-start
				code, out := f.do("POST", decisionsPath(conv, pause), key, allowBook)
				codes[i] = code
				if e, _ := out["error"].(string); e != "" {
					errs[i] = e
				}
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
		_, ba := a.runs()
		_, bb := b.runs()
		if ok != 1 || ba+bb != int32(round+2) {
			t.Fatalf("round %d: %d decisions succeeded, bookFlight ran %d times in all; want 1, %d", round, ok, ba+bb, round+2)
		}
	}
}

// twoPerson makes bookFlight need two approvers.
func twoPerson(cfg *server.Config) {
	cfg.Agents["flights"].Approvals = []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, Approvers: 2}}
}

func TestTwoPersonRule(t *testing.T) {
	f := newFixtureWith(t, nil, flightdemo.Model(), twoPerson)
	conv, pause := f.pause(travellerKey)
	path := decisionsPath(conv, pause)

	out := f.must(202, "POST", path, approverKey, allowBook)
	if out["status"] != "awaiting_second_approval" || out["approval"].(map[string]any)["by"] != "bob" || out["pause_id"] != pause {
		t.Errorf("first approval: %v", out)
	}
	if s, b := f.runs(); s != 0 || b != 0 {
		t.Fatalf("runs after one approval: status %d book %d, want none", s, b)
	}
	// The second approver's inbox shows the first approval.
	inbox := f.must(200, "GET", "/v1/inbox", approver2Key, "")["pauses"].([]any)
	if len(inbox) != 1 || inbox[0].(map[string]any)["approval"].(map[string]any)["by"] != "bob" {
		t.Errorf("second approver's inbox: %v", inbox)
	}
	// The same approver again, whatever they send.
	for _, body := range []string{allowBook, `{"decisions":[{"key":"call_book","verdict":"allow","arguments":{"flight":"VX206"}}]}`} {
		out = f.must(409, "POST", path, approverKey, body)
		if out["error"] != "same_approver" || out["approval"].(map[string]any)["by"] != "bob" {
			t.Errorf("same approver: %v", out)
		}
	}
	// A second approver with other decisions (here, an edit the first
	// did not make).
	out = f.must(409, "POST", path, approver2Key, `{"decisions":[{"key":"call_book","verdict":"allow","arguments":{"flight":"VX206"}}]}`)
	if out["error"] != "decisions_differ" || out["approval"].(map[string]any)["by"] != "bob" {
		t.Errorf("differing decisions: %v", out)
	}
	if s, b := f.runs(); s != 0 || b != 0 {
		t.Fatalf("runs after refused approvals: status %d book %d, want none", s, b)
	}
	// The requester, even holding the role, is no approver.
	f.must(403, "POST", path, travellerKey, allowBook)

	out = f.must(200, "POST", path, approver2Key, allowBook)
	rec := out["decision"].(map[string]any)
	if out["status"] != "completed" || rec["decided_by"] != "cy" || rec["source"] != "person" || fmt.Sprint(rec["approvers"]) != "[bob cy]" {
		t.Errorf("second approval: %v", out)
	}
	if s, b := f.runs(); s != 1 || b != 1 {
		t.Errorf("runs: status %d book %d, want 1 1", s, b)
	}
	out = f.must(409, "POST", path, approverKey, allowBook)
	if out["error"] != "already_decided" || fmt.Sprint(out["decision"].(map[string]any)["approvers"]) != "[bob cy]" {
		t.Errorf("after the decision: %v", out)
	}
}

// A denial needs one person under the two-person rule, before or after a
// first approval.
func TestTwoPersonRuleDeny(t *testing.T) {
	f := newFixtureWith(t, nil, flightdemo.Model(), twoPerson)
	deny := `{"decisions":[{"key":"call_book","verdict":"deny","message":"No."}]}`
	conv, pause := f.pause(travellerKey)
	out := f.must(200, "POST", decisionsPath(conv, pause), approverKey, deny)
	if rec := out["decision"].(map[string]any); rec["decided_by"] != "bob" || rec["approvers"] != nil {
		t.Errorf("denial: %v", out)
	}
	conv, pause = f.pause(travellerKey)
	f.must(202, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	out = f.must(200, "POST", decisionsPath(conv, pause), approver2Key, deny)
	if rec := out["decision"].(map[string]any); rec["decided_by"] != "cy" || rec["approvers"] != nil {
		t.Errorf("denial after an approval: %v", out)
	}
	if s, b := f.runs(); s != 2 || b != 0 {
		t.Errorf("runs: status %d book %d, want 2 0", s, b)
	}
}

// Concurrent first approvals by two approvers: one is the first, the other
// the second, and the pause is decided once.
func TestTwoPersonRuleRace(t *testing.T) {
	f := newFixtureWith(t, nil, flightdemo.Model(), twoPerson)
	for round := range 10 {
		conv, pause := f.pause(travellerKey)
		codes := make([]int, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, key := range []string{approverKey, approver2Key} {
			wg.Go(func() {
				<-start
				codes[i], _ = f.do("POST", decisionsPath(conv, pause), key, allowBook)
			})
		}
		close(start)
		wg.Wait()
		if got := fmt.Sprint(min(codes[0], codes[1]), max(codes[0], codes[1])); got != "200 202" {
			t.Fatalf("round %d: statuses %v, want one 202 and one 200", round, codes)
		}
		if _, b := f.runs(); b != int32(round+1) {
			t.Fatalf("round %d: bookFlight ran %d times, want %d", round, b, round+1)
		}
	}
}

// bookModel books the flight named by the last word of the user's input,
// in a reply with one call.
func bookModel() *scripted.Model {
	return scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		switch m := p.Messages[len(p.Messages)-1].(type) {
		case *toolgate.UserMessage:
			words := strings.Fields(m.Text)
			args := fmt.Sprintf(`{"flight":%q}`, words[len(words)-1])
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "call_book", Name: "bookFlight", Arguments: args}}}, nil
		case *toolgate.ToolMessage:
			return scripted.Reply{Text: "done: " + string(m.Results[0].Status) + " " + m.Results[0].Content}, nil
		}
		return scripted.Reply{}, fmt.Errorf("unexpected prompt")
	})
}

// stickyFixture serves bookModel on a memory store, with bob and cy
// allowed to make bookFlight sticky for 30 minutes.
func stickyFixture(t *testing.T) *fixture {
	return newFixtureWith(t, memory.New(), bookModel(), func(cfg *server.Config) {
		cfg.Agents["flights"].Approvals = []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, StickyMax: 30 * time.Minute}}
	})
}

// post posts input to conv as the traveller.
func (f *fixture) post(conv, input string) map[string]any {
	f.t.Helper()
	return f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+input+`"}`)
}

func TestStickyApproval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := stickyFixture(t)
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
		out := f.post(conv, "book VX1")
		pause := out["pause"].(map[string]any)["id"].(string)
		out = f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}],"sticky":{"minutes":10}}`)
		grants := out["grants"].([]any)
		if len(grants) != 1 || grants[0].(map[string]any)["tool"] != "bookFlight" || grants[0].(map[string]any)["granted_by"] != "bob" {
			t.Fatalf("decision with sticky: %v", out)
		}
		grantID := grants[0].(map[string]any)["id"]

		// Within the grant, another booking resumes by itself.
		time.Sleep(10*time.Minute - time.Second)
		out = f.post(conv, "book VX2")
		rec, _ := out["decision"].(map[string]any)
		if out["status"] != "completed" || rec == nil || rec["source"] != "sticky" || rec["decided_by"] != "" {
			t.Fatalf("turn within the grant: %v, want completed by the sticky grant", out)
		}
		if g := rec["grants"].([]any)[0].(map[string]any); g["id"] != grantID || g["granted_by"] != "bob" {
			t.Errorf("sticky decision's grants: %v", rec["grants"])
		}
		if _, b := f.runs(); b != 2 {
			t.Errorf("bookFlight ran %d times, want 2", b)
		}
		if got := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(got) != 0 {
			t.Errorf("inbox: %v, want empty", got)
		}

		// Once it ends, calls pause again.
		time.Sleep(time.Second)
		out = f.post(conv, "book VX3")
		if out["status"] != "paused" {
			t.Fatalf("turn after the grant: %v, want paused", out)
		}
		recs := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["decisions"].([]any)
		var sources []string
		for _, r := range recs {
			sources = append(sources, r.(map[string]any)["source"].(string))
		}
		if fmt.Sprint(sources) != "[person sticky]" {
			t.Errorf("decision sources %v, want [person sticky]", sources)
		}
		// Grants are per conversation.
		other := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
		if out := f.post(other, "book VX2"); out["status"] != "paused" {
			t.Errorf("another conversation: %v, want paused", out)
		}
	})
}

func TestStickySameArguments(t *testing.T) {
	f := stickyFixture(t)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	pause := f.post(conv, "book VX1")["pause"].(map[string]any)["id"].(string)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}],"sticky":{"minutes":30,"same_arguments":true}}`)
	if out := f.post(conv, "book VX1"); out["status"] != "completed" || out["decision"].(map[string]any)["source"] != "sticky" {
		t.Errorf("same arguments: %v, want completed by the grant", out)
	}
	out := f.post(conv, "book VX2")
	if out["status"] != "paused" {
		t.Errorf("other arguments: %v, want paused", out)
	}
	if _, b := f.runs(); b != 2 {
		t.Errorf("bookFlight ran %d times, want 2", b)
	}
	if got := fmt.Sprint(f.tools.BookArgs()); got != `[{"flight":"VX1"} {"flight":"VX1"}]` {
		t.Errorf("bookFlight ran with %s", got)
	}
}

func TestStickyRefused(t *testing.T) {
	allow := `{"decisions":[{"key":"call_book","verdict":"allow"}],"sticky":`
	for _, tc := range []struct {
		name, body string
		plain      bool // on the fixture whose rule allows no sticky approvals
		status     int
		code       string
	}{
		{"rule forbids", allow + `{"minutes":5}}`, true, 422, "sticky_not_allowed"},
		{"zero minutes", allow + `{"minutes":0}}`, false, 422, "invalid_sticky"},
		{"negative minutes", allow + `{"minutes":-5}}`, false, 422, "invalid_sticky"},
		{"over the maximum", allow + `{"minutes":31}}`, false, 422, "sticky_not_allowed"},
		{"huge minutes", allow + `{"minutes":9000000000000000000}}`, false, 422, "sticky_not_allowed"},
		{"beyond int64", allow + `{"minutes":99999999999999999999}}`, false, 400, "invalid_json"},
		{"fractional minutes", allow + `{"minutes":1.5}}`, false, 400, "invalid_json"},
		{"not an object", allow + `"forever"}`, false, 400, "invalid_json"},
		{"unknown field", allow + `{"minutes":5,"tools":["*"]}}`, false, 400, "unknown_field"},
		{"on a denial", `{"decisions":[{"key":"call_book","verdict":"deny"}],"sticky":{"minutes":5}}`, false, 422, "invalid_sticky"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := stickyFixture(t)
			if tc.plain {
				f = newFixtureWith(t, memory.New(), bookModel(), nil)
			}
			conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
			pause := f.post(conv, "book VX1")["pause"].(map[string]any)["id"].(string)
			code, out := f.do("POST", decisionsPath(conv, pause), approverKey, tc.body)
			if code != tc.status || out["error"] != tc.code {
				t.Fatalf("got %d %v, want %d %s", code, out, tc.status, tc.code)
			}
			// Nothing ran, no grant was made, and the pause is still open.
			if _, b := f.runs(); b != 0 {
				t.Errorf("bookFlight ran %d times", b)
			}
			f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
			if out := f.post(conv, "book VX1"); out["status"] != "paused" {
				t.Errorf("the next call: %v, want paused (no grant)", out)
			}
		})
	}
}

func TestApprovalRuleConfig(t *testing.T) {
	client := toolgate.NewClient(flightdemo.Model(), nil, nil)
	for _, tc := range []struct {
		rule server.ApprovalRule
		want string
	}{
		{server.ApprovalRule{Approvers: 3}, "approvers 3"},
		{server.ApprovalRule{Approvers: -1}, "approvers -1"},
		{server.ApprovalRule{StickyMax: -time.Minute}, "sticky_max -1m0s is negative"},
		{server.ApprovalRule{Approvers: 2, StickyMax: time.Minute}, "sticky_max with approvers 2"},
	} {
		_, err := server.New(&server.Config{Agents: map[string]*server.Agent{"a": {Client: client, Approvals: []server.ApprovalRule{tc.rule}}}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %+v: %v, want an error containing %q", tc.rule, err, tc.want)
		}
	}
}

func TestListConversationsPages(t *testing.T) {
	f := newFixture(t, nil)
	var ids []string
	for range 5 {
		ids = append(ids, f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string))
	}
	f.must(201, "POST", "/v1/conversations", selfKey, `{"agent":"flights"}`)
	var got []string
	path := "/v1/conversations?limit=2"
	for range 5 {
		out := f.must(200, "GET", path, travellerKey, "")
		for _, c := range out["conversations"].([]any) {
			got = append(got, c.(map[string]any)["id"].(string))
		}
		next, _ := out["next"].(string)
		if next == "" {
			break
		}
		path = "/v1/conversations?limit=2&after=" + next
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("pages gave %v, want %v", got, ids)
	}
	if n := len(f.must(200, "GET", "/v1/conversations", adminKey, "")["conversations"].([]any)); n != 6 {
		t.Errorf("admin lists %d conversations, want 6", n)
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=1001", "limit=x", "after=conv_nothing"} {
		if code, out := f.do("GET", "/v1/conversations?"+q, travellerKey, ""); code != 400 || out["error"] != "invalid_request" {
			t.Errorf("?%s: %d %v, want 400 invalid_request", q, code, out)
		}
	}
}

// TestBuildKeepsRecords restarts a server built from a configuration
// file on the same SQLite file, as "toolgate serve --data DIR" does: the
// server's records are in the store's database.
func TestBuildKeepsRecords(t *testing.T) {
	path := writeConfig(t, strings.Replace(validConfig, "\t\t\t\troles: [approver]\n", "\t\t\t\troles: [approver]\n\t\t\t\tsticky_max: 30m\n", 1))
	start := func() (*fixture, func()) {
		fc, err := serve.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, closeStore, err := serve.Build(context.Background(), fc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Agents["flights"].Approvals[0].StickyMax; got != 30*time.Minute {
			t.Errorf("sticky_max %v, want 30m", got)
		}
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return &fixture{t: t, h: srv, srv: srv}, func() {
			srv.Close()
			if err := closeStore(); err != nil {
				t.Error(err)
			}
		}
	}
	f, stop := start()
	conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
	pause := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)["pause"].(map[string]any)["id"].(string)
	stop()

	f, stop = start()
	defer stop()
	inbox := f.must(200, "GET", "/v1/inbox", exampleApproverKey, "")["pauses"].([]any)
	if len(inbox) != 1 || inbox[0].(map[string]any)["pause_id"] != pause {
		t.Fatalf("inbox after a restart: %v, want the pause", inbox)
	}
	f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}],"sticky":{"minutes":5}}`)
	if out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`); out["status"] != "completed" {
		t.Errorf("a turn within the sticky grant: %v, want completed", out)
	}
}
