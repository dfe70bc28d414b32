package server_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

const ttl = 15 * time.Minute

// expiryFixture is a fixture whose pauses expire.
type expiryFixture struct {
	*fixture
	model  *scripted.Model
	client *toolgate.Client
	store  *memory.Store
}

// newExpiryFixture returns the flight agent on a memory store, served with
// the test principals and the given time-to-live settings. mw, if not
// nil, wraps the model.
func newExpiryFixture(t *testing.T, globalTTL, agentTTL time.Duration, mw func(toolgate.ModelFunc) toolgate.ModelFunc) *expiryFixture {
	t.Helper()
	store := memory.New()
	model := flightdemo.Model()
	tools := &flightdemo.Tools{}
	opts := &toolgate.ClientOptions{Store: store, SystemPrompt: flightdemo.SystemPrompt}
	if mw != nil {
		opts.ModelMiddleware = []func(toolgate.ModelFunc) toolgate.ModelFunc{mw}
	}
	client := toolgate.NewClient(model, tools.Tools(), opts)
	srv := newServer(t, client, globalTTL, agentTTL, nil)
	return &expiryFixture{fixture: &fixture{t: t, h: srv, srv: srv, tools: tools}, model: model, client: client, store: store}
}

// newServer returns a server of the flight agent on client with the given
// time-to-live settings and records (nil: its own, in memory).
func newServer(t *testing.T, client *toolgate.Client, globalTTL, agentTTL time.Duration, rs records.Store) *server.Server {
	t.Helper()
	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
			PauseTTL:       agentTTL,
		}},
		APIKeys:  []server.APIKey{key(travellerKey, "ada", "traveller"), key(approverKey, "bob", "approver")},
		PauseTTL: globalTTL,
		Records:  rs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

const allowBook = `{"decisions":[{"key":"call_book","verdict":"allow"}]}`

// expiredResults are the results of the paused reply's calls once expired.
var expiredResults = &toolgate.ToolMessage{Results: []toolgate.ToolResult{
	{CallID: "call_status", Name: "flightStatus", Content: toolgate.ExpiredMessage, Status: toolgate.ResultExpired},
	{CallID: "call_book", Name: "bookFlight", Content: toolgate.ExpiredMessage, Status: toolgate.ResultExpired},
}}

// stored returns the conversation as the store holds it, without going
// through the server (which would expire a due pause itself).
func (f *expiryFixture) stored(conv string) *toolgate.Conversation {
	f.t.Helper()
	c, err := f.store.Load(context.Background(), conv)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// checkExpired checks that the pause of conv was expired once and that no
// tool ran.
func (f *expiryFixture) checkExpired(conv string) {
	f.t.Helper()
	c := f.stored(conv)
	if c.Pause != nil {
		f.t.Fatalf("pause %+v, want expired", c.Pause)
	}
	if got := len(c.Messages); got != 3 {
		f.t.Fatalf("%d messages stored, want user, reply, results", got)
	}
	if diff := cmp.Diff(toolgate.Message(expiredResults), c.Messages[2]); diff != "" {
		f.t.Errorf("stored results (-want +got):\n%s", diff)
	}
	if s, b := f.runs(); s != 0 || b != 0 {
		f.t.Errorf("tools ran: status %d book %d, want none", s, b)
	}
}

// records returns the decision records of conv, as the API shows them.
func (f *expiryFixture) records(conv string) []any {
	f.t.Helper()
	return f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["decisions"].([]any)
}

func TestPauseExpiresAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newExpiryFixture(t, ttl, 0, nil)
		conv, pause := f.pause(travellerKey)
		created := time.Now()

		time.Sleep(ttl - time.Nanosecond)
		synctest.Wait()
		if f.stored(conv).Pause == nil {
			t.Fatal("the pause expired before its time-to-live")
		}
		items := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any)
		if len(items) != 1 {
			t.Fatalf("inbox %v, want the pause", items)
		}
		if got, want := items[0].(map[string]any)["expires_at"], created.Add(ttl).UTC().Format(time.RFC3339Nano); got != want {
			t.Errorf("expires_at %v, want %v", got, want)
		}

		// The sweeper expires the pause at its deadline, with no request.
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		f.checkExpired(conv)

		// A late decision decides nothing.
		code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBook)
		if code != 409 || out["error"] != "expired" {
			t.Fatalf("late decision: %d %v, want 409 expired", code, out)
		}
		if rec := out["decision"].(map[string]any); rec["outcome"] != "expired" || rec["source"] != "expiry" || rec["decided_by"] != "" || rec["pause_id"] != pause {
			t.Errorf("record %v, want the expiry's", rec)
		}
		f.checkExpired(conv)
		if inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(inbox) != 0 {
			t.Errorf("inbox %v, want empty", inbox)
		}
		recs := f.records(conv)
		if len(recs) != 1 || recs[0].(map[string]any)["outcome"] != "expired" {
			t.Errorf("records %v, want one expired", recs)
		}

		// The conversation goes on; the model reads the expired results.
		out = f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
		if out["status"] != "paused" {
			t.Fatalf("next turn %v, want paused again", out)
		}
		prompts := f.model.Prompts()
		last := prompts[len(prompts)-1].Messages
		if diff := cmp.Diff(toolgate.Message(expiredResults), last[len(last)-2]); diff != "" {
			t.Errorf("results in the model's next request (-want +got):\n%s", diff)
		}
	})
}

func TestDecisionBeforeTTLWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newExpiryFixture(t, ttl, 0, nil)
		conv, pause := f.pause(travellerKey)
		time.Sleep(ttl - time.Nanosecond)
		out := f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
		if out["status"] != "completed" {
			t.Fatalf("decision just before the deadline: %v, want completed", out)
		}
		time.Sleep(ttl)
		synctest.Wait()
		if s, b := f.runs(); s != 1 || b != 1 {
			t.Errorf("runs: status %d book %d, want 1 1", s, b)
		}
		c := f.stored(conv)
		if c.Pause != nil || len(c.Messages) != 4 {
			t.Fatalf("stored: pause %+v, %d messages; want none, 4", c.Pause, len(c.Messages))
		}
		if st := c.Messages[2].(*toolgate.ToolMessage).Results[1].Status; st != toolgate.ResultOK {
			t.Errorf("bookFlight result %v, want ok", st)
		}
		recs := f.records(conv)
		if len(recs) != 1 || recs[0].(map[string]any)["outcome"] != "decided" {
			t.Errorf("records %v, want one decided", recs)
		}
	})
}

// A decision taken before the deadline wins even when its turn is still
// running at the deadline: neither the sweeper nor a late decision nor the
// inbox expires it.
func TestDecisionRunningAtTTLWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		mw := func(next toolgate.ModelFunc) toolgate.ModelFunc {
			return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
				if slow.Load() {
					time.Sleep(time.Minute)
				}
				return next(ctx, p)
			}
		}
		f := newExpiryFixture(t, ttl, 0, mw)
		conv, pause := f.pause(travellerKey)
		time.Sleep(ttl - time.Nanosecond)
		slow.Store(true)
		type result struct {
			code int
			out  map[string]any
		}
		done := make(chan result)
		go func() {
			code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBook)
			done <- result{code, out}
		}()
		synctest.Wait() // the decision has run the tools and waits for the model

		time.Sleep(time.Nanosecond)
		synctest.Wait() // the sweeper has looked at the pause
		code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBook)
		if code != 409 || out["error"] != "already_decided" {
			t.Errorf("late decision: %d %v, want 409 already_decided", code, out)
		}
		if inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(inbox) != 0 {
			t.Errorf("inbox %v, want empty", inbox)
		}
		if got := <-done; got.code != 200 || got.out["status"] != "completed" {
			t.Errorf("the decision's turn: %d %v, want 200 completed", got.code, got.out)
		}
		if s, b := f.runs(); s != 1 || b != 1 {
			t.Errorf("runs: status %d book %d, want 1 1", s, b)
		}
		recs := f.records(conv)
		if len(recs) != 1 || recs[0].(map[string]any)["outcome"] != "decided" {
			t.Errorf("records %v, want one decided", recs)
		}
	})
}

// At the deadline, decisions, inbox listings and the sweeper race to
// expire the pause: it is expired exactly once and nothing runs.
func TestConcurrentDecideAndExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newExpiryFixture(t, ttl, 0, nil)
		for round := range 20 {
			conv, pause := f.pause(travellerKey)
			time.Sleep(ttl)
			var wg sync.WaitGroup
			var expired, other atomic.Int32
			for i := range 16 {
				wg.Go(func() {
					if i%4 == 3 {
						if code, out := f.do("GET", "/v1/inbox", approverKey, ""); code != 200 {
							t.Errorf("inbox: %d %v", code, out)
						}
						return
					}
					code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBook)
					if code == 409 && out["error"] == "expired" {
						expired.Add(1)
					} else {
						other.Add(1)
					}
				})
			}
			wg.Wait()
			synctest.Wait()
			if expired.Load() != 12 || other.Load() != 0 {
				t.Fatalf("round %d: %d decisions answered expired, %d otherwise; want 12, 0", round, expired.Load(), other.Load())
			}
			f.checkExpired(conv)
		}
	})
}

// unindexed returns records that know conversation conv of ada but not
// its open pause, as when a process died between storing a pause and
// indexing it.
func unindexed(t *testing.T, conv string) records.Store {
	t.Helper()
	rs := records.NewMemory()
	err := rs.CreateConversation(t.Context(), &records.Conversation{ID: conv, Agent: "flights", Owner: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// A pause the sweeper does not know of (here, one the index missed) is
// expired by the first request that touches it.
func TestLazyExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newExpiryFixture(t, ttl, 0, nil)
		conv, pause := f.pause(travellerKey)
		other := newServer(t, f.client, ttl, 0, unindexed(t, conv))
		synctest.Wait() // its sweeper has looked and knows of no pause
		f.srv.Close()   // the first server's sweeper is gone
		f.h = other

		time.Sleep(ttl)
		synctest.Wait()
		if f.stored(conv).Pause == nil {
			t.Fatal("expired before a request touched it")
		}
		if inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(inbox) != 0 {
			t.Errorf("inbox %v, want the expired pause hidden", inbox)
		}
		got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
		if got["pause"] != nil {
			t.Errorf("conversation %v, want its pause expired", got)
		}
		f.checkExpired(conv)
		code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBook)
		if code != 409 || out["error"] != "expired" {
			t.Errorf("late decision: %d %v, want 409 expired", code, out)
		}
		f.checkExpired(conv)
	})
}

// A decision on a due pause expires it itself, and new input on a
// conversation whose pause is due is accepted.
func TestLazyExpiryOnDecisionAndInput(t *testing.T) {
	for _, first := range []string{"decision", "input"} {
		t.Run(first, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newExpiryFixture(t, ttl, 0, nil)
				conv, pause := f.pause(travellerKey)
				other := newServer(t, f.client, ttl, 0, unindexed(t, conv))
				synctest.Wait()
				f.srv.Close()
				f.h = other
				time.Sleep(ttl)
				synctest.Wait()
				switch first {
				case "decision":
					code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBook)
					if code != 409 || out["error"] != "expired" {
						t.Fatalf("late decision: %d %v, want 409 expired", code, out)
					}
					f.checkExpired(conv)
				case "input":
					out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
					if out["status"] != "paused" || out["pause"].(map[string]any)["id"] == pause {
						t.Fatalf("new input: %v, want a new pause", out)
					}
					c := f.stored(conv)
					if diff := cmp.Diff(toolgate.Message(expiredResults), c.Messages[2]); diff != "" {
						t.Errorf("stored results (-want +got):\n%s", diff)
					}
				}
			})
		})
	}
}

func TestPauseTTLSettings(t *testing.T) {
	tests := []struct {
		name              string
		global, agent     time.Duration
		expiresAfter      time.Duration // 0: never
		wantExpiresAtJSON bool
	}{
		{"global", ttl, 0, ttl, true},
		{"agent overrides", time.Hour, ttl, ttl, true},
		{"agent only", 0, ttl, ttl, true},
		{"agent never", time.Minute, -1, 0, false},
		{"none", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newExpiryFixture(t, tt.global, tt.agent, nil)
				conv, _ := f.pause(travellerKey)
				p := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["pause"].(map[string]any)
				if _, ok := p["expires_at"]; ok != tt.wantExpiresAtJSON {
					t.Errorf("pause %v: expires_at present %v, want %v", p, ok, tt.wantExpiresAtJSON)
				}
				if tt.expiresAfter > 0 {
					time.Sleep(tt.expiresAfter - time.Nanosecond)
					synctest.Wait()
					if f.stored(conv).Pause == nil {
						t.Fatal("expired early")
					}
					time.Sleep(time.Nanosecond)
					synctest.Wait()
					f.checkExpired(conv)
					return
				}
				time.Sleep(1000 * time.Hour)
				synctest.Wait()
				if f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["pause"] == nil || f.stored(conv).Pause == nil {
					t.Error("a pause expired although it never should")
				}
			})
		})
	}
}

func TestNegativePauseTTL(t *testing.T) {
	client := toolgate.NewClient(flightdemo.Model(), nil, nil)
	_, err := server.New(&server.Config{Agents: map[string]*server.Agent{"a": {Client: client}}, PauseTTL: -time.Second})
	if err == nil {
		t.Fatal("New accepted a negative pause_ttl")
	}
}
