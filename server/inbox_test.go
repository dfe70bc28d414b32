package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
)

const seniorKey = "key-senior" // an approver who is also "senior"

// inboxItem returns the caller's one inbox item, failing the test unless
// there is exactly one.
func (f *fixture) inboxItem(key string) map[string]any {
	f.t.Helper()
	items := f.must(200, "GET", "/v1/inbox", key, "")["pauses"].([]any)
	if len(items) != 1 {
		f.t.Fatalf("inbox of %s: %d items, want 1", key, len(items))
	}
	return items[0].(map[string]any)
}

// paused starts a conversation of the traveller that pauses, and returns
// its id and the pause's.
func (f *fixture) paused() (conv, pause string) {
	f.t.Helper()
	conv = f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	out := f.post(conv, flightdemo.Input)
	p, ok := out["pause"].(map[string]any)
	if out["status"] != "paused" || !ok {
		f.t.Fatalf("turn: %v, want paused", out)
	}
	return conv, p["id"].(string)
}

// TestInboxStickyMax: an inbox item's sticky_max_minutes is the most
// minutes its caller may make sticky allowing every awaiting call, and the
// server takes exactly that many: one more is refused.
func TestInboxStickyMax(t *testing.T) {
	rule := func(tool string, sticky time.Duration, roles ...string) server.ApprovalRule {
		return server.ApprovalRule{Tools: []string{tool}, Roles: roles, StickyMax: sticky}
	}
	for _, tc := range []struct {
		name       string
		rules      []server.ApprovalRule
		bothGated  bool  // flightStatus awaits a decision too
		approver   int64 // the item's sticky_max_minutes for bob (approver)
		senior     int64 // … and for sen (approver, senior)
		statusOnly bool  // a rule covers only flightStatus
	}{
		{name: "no sticky rule", rules: []server.ApprovalRule{rule("bookFlight", 0, "approver")}},
		{name: "one rule", rules: []server.ApprovalRule{rule("bookFlight", 30*time.Minute, "approver")}, approver: 30, senior: 30},
		{name: "the largest rule of the caller", rules: []server.ApprovalRule{
			rule("bookFlight", 30*time.Minute, "approver"), rule("bookFlight", 90*time.Minute, "senior")}, approver: 30, senior: 90},
		{name: "whole minutes", rules: []server.ApprovalRule{
			rule("bookFlight", 150*time.Second, "approver"), rule("bookFlight", 30*time.Second, "senior")}, approver: 2, senior: 2},
		{name: "less than a minute", rules: []server.ApprovalRule{rule("bookFlight", 59*time.Second, "approver")}},
		{name: "the smallest over the calls", bothGated: true, rules: []server.ApprovalRule{
			rule("bookFlight", 30*time.Minute, "approver"), rule("flightStatus", 10*time.Minute, "approver")}, approver: 10, senior: 10},
		{name: "a call without sticky", bothGated: true, rules: []server.ApprovalRule{
			rule("bookFlight", 30*time.Minute, "approver"), rule("flightStatus", 0, "approver")}},
		{name: "a tool under a two-person rule", rules: []server.ApprovalRule{
			{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, Approvers: 2}, rule("bookFlight", 30*time.Minute, "senior")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newF := func() *fixture {
				return newFixtureWith(t, memory.New(), flightdemo.Model(), func(cfg *server.Config) {
					a := cfg.Agents["flights"]
					a.Approvals = tc.rules
					if tc.bothGated {
						tools := &flightdemo.Tools{}
						a.Client = toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{Store: a.Client.Store(),
							ConfirmTools: []string{"flightStatus"}})
					}
					cfg.APIKeys = append(cfg.APIKeys, server.APIKey{SHA256: server.HashAPIKey(seniorKey),
						Principal: toolgate.Principal{ID: "sen", Roles: []string{"approver", "senior"}}})
				})
			}
			f := newF()
			f.paused()
			for _, who := range []struct {
				key  string
				want int64
			}{{approverKey, tc.approver}, {seniorKey, tc.senior}} {
				item := f.inboxItem(who.key)
				got, present := item["sticky_max_minutes"]
				if who.want == 0 {
					if present {
						t.Errorf("%s: sticky_max_minutes %v, want it omitted", who.key, got)
					}
					continue
				}
				if got != float64(who.want) {
					t.Errorf("%s: sticky_max_minutes %v, want %d", who.key, got, who.want)
				}
				if item["may_reveal"] != nil {
					t.Errorf("%s: may_reveal %v on an agent without privacy", who.key, item["may_reveal"])
				}
			}
			// The server takes what the item says, and not a minute more.
			for _, who := range []struct {
				key  string
				want int64
			}{{approverKey, tc.approver}, {seniorKey, tc.senior}} {
				if who.want == 0 {
					continue
				}
				g := newF()
				gc, gp := g.paused()
				var body string
				allowAll := func(minutes int64) string {
					decisions := `{"key":"call_book","verdict":"allow"}`
					if tc.bothGated {
						decisions += `,{"key":"call_status","verdict":"allow"}`
					}
					return fmt.Sprintf(`{"decisions":[%s],"sticky":{"minutes":%d}}`, decisions, minutes)
				}
				body = allowAll(who.want + 1)
				if out := g.must(422, "POST", decisionsPath(gc, gp), who.key, body); out["error"] != "sticky_not_allowed" {
					t.Errorf("%s: %d minutes: %v, want sticky_not_allowed", who.key, who.want+1, out)
				}
				body = allowAll(who.want)
				if out := g.must(200, "POST", decisionsPath(gc, gp), who.key, body); len(out["grants"].([]any)) == 0 {
					t.Errorf("%s: %d minutes: no grants in %v", who.key, who.want, out)
				}
			}
		})
	}
}

// inboxRecords are the record stores the inbox's cost is measured on.
var inboxRecords = []struct {
	name string
	open func(t testing.TB) records.Store
	// pauses is how many open pauses of pay the test makes: fewer on
	// SQLite, whose every pause is a few durable writes.
	pauses int
}{
	{"memory", func(testing.TB) records.Store { return records.NewMemory() }, 10_000},
	{"sqlite", func(t testing.TB) records.Store {
		s, err := sqlite.Open(context.Background(), t.TempDir()+"/records.db", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return mustRecords(t, s)
	}, 2_000},
}

// otherToolFixture returns the attack fixture with its store counting
// loads and its records in rs, holding n open pauses of pay and 3 of
// wire.
func otherToolFixture(t testing.TB, rs records.Store, n int) (*atkFixture, *countingStore) {
	t.Helper()
	store := &countingStore{Store: memory.New()}
	// The background recovery of claims, which reads every open pause's
	// conversation, is off: the loads counted are the inbox's.
	f := newAtkFixture(t, atkOptions{store: store, configure: func(cfg *server.Config) { cfg.Records = rs; cfg.ClaimLease = -1 }})
	// The pauses of pay are made by 16 clients at once, so that a SQL
	// store's commits are shared.
	f.setReply(call("c1", "pay", `{"gate":1}`))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		errs = make(chan error, 16)
	)
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := pauseOnce(f.h); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for range 3 {
		f.paused(call("c1", "wire", `{"gate":1}`))
	}
	store.loads.Store(0)
	return f, store
}

// pauseOnce starts a conversation of the attack fixture's requester
// whose turn pauses.
func pauseOnce(h http.Handler) error {
	do := func(path, body string) (map[string]any, error) {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+atkRequester)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code/100 != 2 {
			return nil, fmt.Errorf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
		return out, nil
	}
	conv, err := do("/v1/conversations", `{"agent":"ops"}`)
	if err != nil {
		return err
	}
	out, err := do("/v1/conversations/"+conv["id"].(string)+"/messages", `{"input":"go"}`)
	if err == nil && out["status"] != "paused" {
		err = fmt.Errorf("turn: %v, want paused", out)
	}
	return err
}

// TestInboxLoadsOnlyDecidableTools: an approver of one tool of an agent
// does not pay for the open pauses of the agent's other tools. wes may
// decide wire; with 10,000 open pauses of pay (2,000 on SQLite), wes's
// inbox loads only the 3 of wire, and pat's still has all of pay.
func TestInboxLoadsOnlyDecidableTools(t *testing.T) {
	for _, rc := range inboxRecords {
		t.Run(rc.name, func(t *testing.T) {
			n := rc.pauses
			if testing.Short() || raceDetector {
				n /= 20
			}
			f, store := otherToolFixture(t, rc.open(t), n)
			if got := f.must(200, "GET", "/v1/inbox", atkWirer, "")["pauses"].([]any); len(got) != 3 {
				t.Errorf("the wirer's inbox: %d pauses, want 3", len(got))
			}
			if got := store.loads.Load(); got != 3 {
				t.Errorf("the wirer's inbox loaded %d conversations, want 3 (none of the %d pauses of pay)", got, n)
			}
			store.loads.Store(0)
			if got := f.must(200, "GET", "/v1/inbox", atkPayer, "")["pauses"].([]any); len(got) != n {
				t.Errorf("the payer's inbox: %d pauses, want %d", len(got), n)
			}
			if got := store.loads.Load(); got != int64(n) {
				t.Errorf("the payer's inbox loaded %d conversations, want %d", got, n)
			}
		})
	}
}

// BenchmarkInboxOtherTools measures the inbox of an approver of wire (3
// open pauses) beside 10,000 open pauses of pay (2,000 on SQLite), which
// it must not read.
func BenchmarkInboxOtherTools(b *testing.B) {
	for _, rc := range inboxRecords {
		b.Run(rc.name, func(b *testing.B) {
			f, store := otherToolFixture(b, rc.open(b), rc.pauses)
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/v1/inbox", nil)
				req.Header.Set("Authorization", "Bearer "+atkWirer)
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("inbox: %d %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(store.loads.Load())/float64(b.N), "loads/op")
		})
	}
}
