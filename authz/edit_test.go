package authz_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/toolgatetest"
)

// amountLimit allows transfers of at most 1000 and records every call it
// judged in the execution phase.
type amountLimit struct {
	mu     sync.Mutex
	judged []string // the arguments of each execution-phase decision
}

func (a *amountLimit) policy() authz.Policy {
	return authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		if r.Phase != authz.PhaseExecution {
			return authz.Allow("shown"), nil
		}
		a.mu.Lock()
		a.judged = append(a.judged, r.Call.Arguments)
		a.mu.Unlock()
		var args struct{ Amount int }
		if err := json.Unmarshal([]byte(r.Call.Arguments), &args); err != nil || args.Amount > 1000 {
			return authz.Deny("over the limit"), nil
		}
		return authz.Allow("within the limit"), nil
	})
}

func (a *amountLimit) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.judged...)
}

// TestEditedArgumentsAuthorized: the guard judges an edited call by its
// edited arguments, both when the resumption re-checks the reply and right
// before the call runs. An edit to a forbidden amount is refused and
// nothing runs; an edit within the limit runs.
func TestEditedArgumentsAuthorized(t *testing.T) {
	ctx := context.Background()
	gated := toolgate.ToolMetadata{RequiresConfirmation: true}
	for _, neutral := range []bool{false, true} {
		t.Run(map[bool]string{false: "denial error", true: "neutral refusal"}[neutral], func(t *testing.T) {
			var limit amountLimit
			var c counter
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{"amount":500}`}}},
				scripted.Reply{Text: "done"},
			)
			client := toolgate.NewClient(model, []*toolgate.Tool{c.tool("transfer", gated)},
				&toolgate.ClientOptions{Authorize: authz.NewGuard(limit.policy(), &authz.Options{RefuseNeutrally: neutral}).Begin})
			resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "x", Principal: alice, Input: "send 500"})
			if err != nil || !resp.Paused() {
				t.Fatalf("Call: %v, paused %v", err, resp != nil && resp.Paused())
			}
			over := []toolgate.Decision{toolgate.AllowWithArguments("t", json.RawMessage(`{"amount":5000}`))}
			resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "x", Principal: alice, Decisions: over})
			if neutral {
				if err != nil || resp == nil || resp.Paused() {
					t.Fatalf("Resume: %v, paused %v; want the turn to go on", err, resp != nil && resp.Paused())
				}
				conv, err := client.Store().Load(ctx, "x")
				if err != nil {
					t.Fatal(err)
				}
				r := conv.Messages[2].(*toolgate.ToolMessage).Results[0]
				if r.Status != toolgate.ResultRefused || r.EditedArguments != `{"amount":5000}` || !strings.HasPrefix(r.Content, toolgate.EditNote) {
					t.Errorf("the refused edit's result is %+v, want refused and recording the edit", r)
				}
			} else {
				denial(t, err, authz.CodeExecutionDenied)
			}
			if c.total() != 0 {
				t.Fatalf("an edit over the limit ran: %v", c.runs)
			}
			if got := limit.seen(); len(got) == 0 || got[len(got)-1] != `{"amount":5000}` {
				t.Errorf("the policy judged %q, want the edited arguments last", got)
			}
			if neutral {
				return
			}
			// The pause is still open: an edit within the limit runs, and is
			// judged again right before it runs.
			before := len(limit.seen())
			within := []toolgate.Decision{toolgate.AllowWithArguments("t", json.RawMessage(`{"amount":900}`))}
			if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "x"), ConversationID: "x", Principal: alice, Decisions: within}); err != nil {
				t.Fatalf("Resume within the limit: %v", err)
			}
			if c.count("transfer") != 1 {
				t.Errorf("transfer ran %d times, want 1", c.count("transfer"))
			}
			if got := limit.seen()[before:]; len(got) != 2 || got[0] != `{"amount":900}` || got[1] != `{"amount":900}` {
				t.Errorf("the policy judged %q, want the edit twice (reply check, then right before the run)", got)
			}
		})
	}
}

// TestEditedArgumentsRecheckedBeforeRunning: a client without the guard,
// resuming with the guard's tools, still has the edit judged right before
// the call runs, since the tool itself rechecks what it is called with.
func TestEditedArgumentsRecheckedBeforeRunning(t *testing.T) {
	ctx := context.Background()
	var limit amountLimit
	var c counter
	g := authz.NewGuard(limit.policy(), nil)
	rg, err := g.Begin(ctx, &toolgate.BeginParams{Principal: alice, Tools: []*toolgate.Tool{c.tool("transfer", toolgate.ToolMetadata{RequiresConfirmation: true})}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := rg.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{"amount":500}`}}}, scripted.Reply{Text: "done"})
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Logger: quiet()})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Principal: alice, Input: "pay"})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v, paused %v; want a pause", err, resp.Paused())
	}
	_, err = client.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "c", PauseID: resp.PauseID, Principal: alice,
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("t", json.RawMessage(`{"amount":5000}`))}})
	denial(t, err, authz.CodeExecutionDenied)
	if c.total() != 0 {
		t.Fatalf("an edit over the limit ran: %v", c.runs)
	}
	if got := limit.seen(); len(got) != 1 || got[0] != `{"amount":5000}` {
		t.Errorf("the policy judged %q, want the edit", got)
	}
}
