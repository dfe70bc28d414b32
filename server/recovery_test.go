package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

// abandon claims the open pause of conv as a resumption that allowed both
// calls would, records bookFlight as started, and stops there, as a
// resumption whose process died after starting the call would.
func abandon(t *testing.T, store toolgate.ConversationStore, conv, pause string) {
	t.Helper()
	ctx := context.Background()
	claim := &toolgate.Claim{Token: "dead", At: time.Now(), Decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")}}
	if err := store.ClaimPause(ctx, conv, pause, claim); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkStarted(ctx, conv, pause, "dead", []string{"call_book"}); err != nil {
		t.Fatal(err)
	}
}

// recoveryServer serves the flight agent on a memory store with the given
// claim lease and no pause expiry.
func recoveryServer(t *testing.T, lease time.Duration) (*fixture, *memory.Store) {
	t.Helper()
	f, store, _ := recoveryServerWith(t, lease, flightdemo.Model(), nil)
	return f, store
}

// recoveryServerWith is recoveryServer with another model and the records
// rs (nil: the server's own); it returns the agent's client too.
func recoveryServerWith(t *testing.T, lease time.Duration, model toolgate.Model, rs records.Store) (*fixture, *memory.Store, *toolgate.Client) {
	t.Helper()
	store := memory.New()
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(model, tools.Tools(), &toolgate.ClientOptions{Store: store, SystemPrompt: flightdemo.SystemPrompt})
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}},
			{SHA256: server.HashAPIKey(approverKey), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
		},
		ClaimLease: lease,
		Records:    rs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv, tools: tools}, store, client
}

func TestRecoverAbandonedClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, store := recoveryServer(t, 0)
		conv, pause := f.pause(travellerKey)
		abandon(t, store, conv, pause)

		time.Sleep(server.DefaultClaimLease - time.Nanosecond)
		synctest.Wait()
		if c, _ := store.Load(context.Background(), conv); c.Pause == nil || c.Pause.ClaimToken != "dead" {
			t.Fatalf("the claim was taken over before its lease ended: %+v", c.Pause)
		}

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		c, err := store.Load(context.Background(), conv)
		if err != nil {
			t.Fatal(err)
		}
		if c.Pause != nil {
			t.Fatalf("the claim was not recovered after its lease: %+v", c.Pause)
		}
		want := &toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "call_status", Name: "flightStatus", Content: `"Flight VX205 is on time"`, Status: toolgate.ResultOK},
			{CallID: "call_book", Name: "bookFlight", Content: toolgate.InterruptedMessage, Status: toolgate.ResultInterrupted},
		}}
		if diff := cmp.Diff(toolgate.Message(want), c.Messages[2]); diff != "" {
			t.Errorf("stored results (-want +got):\n%s", diff)
		}
		if s, b := f.runs(); s != 1 || b != 0 {
			t.Errorf("runs: status %d book %d; want status once, book never (it was started before)", s, b)
		}
		// The conversation takes new input again; a decision on the
		// recovered pause decides nothing.
		f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"thanks"}`)
		if s, b := f.runs(); b != 0 {
			t.Errorf("runs after new input: status %d book %d; want book never", s, b)
		}
	})
}

// A recovered turn that pauses again puts its new pause in the inbox, as
// a turn run by a request does.
func TestRecoveredTurnPausesAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The model books a second flight after the first two calls.
		model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
			tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage)
			switch {
			case !ok:
				return scripted.Reply{ToolCalls: []toolgate.ToolCall{
					{ID: "call_status", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
					{ID: "call_book", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
				}}, nil
			case tm.Results[0].CallID == "call_status":
				return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "call_book2", Name: "bookFlight", Arguments: `{"flight":"VX206"}`}}}, nil
			}
			return scripted.Reply{Text: "Both handled."}, nil
		})
		f, store, _ := recoveryServerWith(t, time.Minute, model, nil)
		conv, pause := f.pause(travellerKey)
		abandon(t, store, conv, pause)
		time.Sleep(time.Minute)
		synctest.Wait()

		got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
		p, _ := got["pause"].(map[string]any)
		if p == nil || p["id"] == pause || fmt.Sprint(p["awaiting"]) != "[call_book2]" {
			t.Fatalf("after the recovery: pause %v, want a new one awaiting call_book2", got["pause"])
		}
		items := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["pause_id"] != p["id"] {
			t.Fatalf("approver's inbox after the recovery: %v, want the new pause", items)
		}
		out := f.must(200, "POST", decisionsPath(conv, p["id"].(string)), approverKey, `{"decisions":[{"key":"call_book2","verdict":"allow"}]}`)
		if out["status"] != "completed" || out["text"] != "Both handled." {
			t.Errorf("decision on the new pause: %v", out)
		}
		if s, b := f.runs(); s != 1 || b != 1 {
			t.Errorf("runs: status %d book %d; want each once (the first booking was interrupted)", s, b)
		}
	})
}

// beginDecision records bob's decision allowing both calls of the pause,
// as a decider does before claiming the pause.
func beginDecision(t *testing.T, rs records.Store, conv, pause string) {
	t.Helper()
	old, err := rs.Begin(context.Background(), &records.Decision{ConversationID: conv, PauseID: pause, Source: records.SourcePerson, DecidedBy: "bob",
		DecidedAt: time.Now(), Decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")}, Outcome: records.OutcomeDeciding})
	if err != nil || old != nil {
		t.Fatalf("Begin: %v, %v", old, err)
	}
}

// decisionOutcomes returns the outcomes of the decision records of conv.
func decisionOutcomes(f *fixture, conv string) []string {
	var out []string
	for _, d := range f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["decisions"].([]any) {
		d := d.(map[string]any)
		out = append(out, fmt.Sprint(d["outcome"], " by ", d["decided_by"]))
	}
	return out
}

// A decider that stopped after recording its decision and before claiming
// the pause left a "deciding" record that refuses every later decision;
// once the record is older than the lease, the recovery carries the
// decision out.
func TestRecoverDecisionNeverClaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := records.NewMemory()
		f, store, _ := recoveryServerWith(t, time.Minute, flightdemo.Model(), rs)
		conv, pause := f.pause(travellerKey)
		beginDecision(t, rs, conv, pause)
		if code, out := f.do("POST", decisionsPath(conv, pause), approverKey, allowBookBody); code != 409 || out["error"] != "already_decided" {
			t.Fatalf("a decision while the record says deciding: %d %v, want 409 already_decided", code, out)
		}

		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if c, _ := store.Load(context.Background(), conv); c.Pause == nil || c.Pause.Claimed {
			t.Fatalf("the pause was taken before the lease ended: %+v", c.Pause)
		}
		if s, b := f.runs(); s != 0 || b != 0 {
			t.Fatalf("runs before the lease ended: status %d book %d", s, b)
		}

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
		if got["pause"] != nil || len(got["messages"].([]any)) != 4 {
			t.Fatalf("after the lease: %v, want the pause resumed and the turn completed", got)
		}
		if got := decisionOutcomes(f, conv); fmt.Sprint(got) != "[recovered by bob]" {
			t.Errorf("decision records: %v, want [recovered by bob]", got)
		}
		if s, b := f.runs(); s != 1 || b != 1 {
			t.Errorf("runs: status %d book %d, want each once", s, b)
		}
		f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"thanks"}`)
	})
}

// A decider that stopped after storing the results and before recording
// the outcome left a "deciding" record; once it is older than the lease
// the recovery records the outcome, even when an inbox read came first.
func TestRecoverDecisionNeverFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := records.NewMemory()
		f, _, client := recoveryServerWith(t, time.Minute, flightdemo.Model(), rs)
		conv, pause := f.pause(travellerKey)
		beginDecision(t, rs, conv, pause)
		_, err := client.Resume(context.Background(), &toolgate.ResumeTurnParams{ConversationID: conv, PauseID: pause,
			Principal: &toolgate.Principal{ID: "ada"}, Decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")}})
		if err != nil {
			t.Fatal(err)
		}
		if items := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(items) != 0 {
			t.Errorf("inbox: %v, want empty", items)
		}

		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if got := decisionOutcomes(f, conv); fmt.Sprint(got) != "[deciding by bob]" {
			t.Fatalf("decision records before the lease ended: %v", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := decisionOutcomes(f, conv); fmt.Sprint(got) != "[decided by bob]" {
			t.Errorf("decision records after the lease: %v, want [decided by bob]", got)
		}
		if page, err := rs.ListPending(context.Background(), nil); err != nil || len(page.Pending) != 0 {
			t.Errorf("index after the lease: %+v, %v; want empty", page, err)
		}
		if s, b := f.runs(); s != 1 || b != 1 {
			t.Errorf("runs: status %d book %d, want each once", s, b)
		}
	})
}

func TestRecoveryOff(t *testing.T) {
	// A negative lease turns recovery off: the claim stays.
	synctest.Test(t, func(t *testing.T) {
		f, store := recoveryServer(t, -1)
		conv, pause := f.pause(travellerKey)
		abandon(t, store, conv, pause)
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		if c, _ := store.Load(context.Background(), conv); c.Pause == nil || c.Pause.ClaimToken != "dead" {
			t.Errorf("the claim was recovered with recovery off: %+v", c.Pause)
		}
	})
}

func TestConfigClaimLease(t *testing.T) {
	fc, err := serve.LoadConfig(writeConfig(t, validConfig+"claim_lease: 90s\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeStore, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if cfg.ClaimLease != 90*time.Second {
		t.Errorf("ClaimLease = %v, want 90s", cfg.ClaimLease)
	}
	_, err = serve.LoadConfig(writeConfig(t, validConfig+"claim_lease: soon\n"))
	if err == nil || !strings.Contains(err.Error(), "claim_lease") {
		t.Errorf("claim_lease: soon: got error %v, want one naming claim_lease", err)
	}
}
