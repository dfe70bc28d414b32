package authz_test

// The invariants of the gate that authorization takes part in
// (docs/design.md, "Invariants of the gate"), each asserting with run
// counters that the tool never ran.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// gatedTransfer is a client whose transfer tool needs a decision, guarded
// by roles (finance may transfer), over store.
func gatedTransfer(c *counter, store toolgate.ConversationStore) *toolgate.Client {
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{"amount":5}`}}},
		scripted.Reply{Text: "done"},
	)
	return toolgate.NewClient(model, []*toolgate.Tool{c.tool("transfer", toolgate.ToolMetadata{RequiresConfirmation: true})},
		&toolgate.ClientOptions{Store: store, Authorize: authz.NewGuard(roles, &authz.Options{Logger: quiet()}).Begin})
}

// TestGateRevokedRoleBeforeDecision: invariant 2. The turn paused for
// alice as finance; she loses the role before the pause is decided. The
// resumption runs for the principal as given now, so the allowed transfer
// is refused and never runs; with the role back, it runs.
func TestGateRevokedRoleBeforeDecision(t *testing.T) {
	ctx := context.Background()
	var c counter
	client := gatedTransfer(&c, memory.New())
	if resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "conv", Principal: alice, Input: "pay"}); err != nil || !resp.Paused() {
		t.Fatalf("Call: %v", err)
	}
	revoked := &toolgate.Principal{ID: "alice", Roles: []string{"support"}}
	_, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "conv"), ConversationID: "conv", Principal: revoked, Decisions: []toolgate.Decision{toolgate.Allow("t")}})
	if !errors.Is(err, authz.ErrDenied) {
		t.Fatalf("Resume with the role revoked: %v, want a denial", err)
	}
	if c.total() != 0 {
		t.Fatalf("transfer ran %d times after the role was revoked", c.total())
	}
	if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "conv"), ConversationID: "conv", Principal: alice, Decisions: []toolgate.Decision{toolgate.Allow("t")}}); err != nil {
		t.Fatal(err)
	}
	if c.count("transfer") != 1 {
		t.Errorf("transfer ran %d times with the role back, want 1", c.count("transfer"))
	}
}

// TestGateRevokedRoleBeforeRecovery: invariant 2 for a recovery. A
// resumption claimed the pause and died before the transfer started; the
// role is revoked before the recovery, which runs for the principal as
// given now: the transfer never runs, and the pause is resolved instead of
// failing again after every lease.
func TestGateRevokedRoleBeforeRecovery(t *testing.T) {
	ctx := context.Background()
	var c counter
	store := memory.New()
	client := gatedTransfer(&c, store)
	if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "conv", Principal: alice, Input: "pay"}); err != nil {
		t.Fatal(err)
	}
	conv, err := store.Load(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.ClaimPause(ctx, "conv", conv.Pause.ID, &toolgate.Claim{Token: "dead", At: time.Now().Add(-time.Hour), Decisions: []toolgate.Decision{toolgate.Allow("t")}}); err != nil {
		t.Fatal(err)
	}
	revoked := &toolgate.Principal{ID: "alice"}
	res, err := client.RecoverPause(ctx, &toolgate.RecoverParams{ConversationID: "conv", PauseID: conv.Pause.ID, Principal: revoked, Force: true})
	if err != nil {
		t.Fatalf("RecoverPause: %v", err)
	}
	if c.total() != 0 {
		t.Fatalf("transfer ran %d times after the role was revoked", c.total())
	}
	if len(res.Results) != 1 || res.Results[0].Status.Ran() {
		t.Errorf("results %+v, want the transfer answered without running", res.Results)
	}
	if conv, err := store.Load(ctx, "conv"); err != nil || conv.Pause != nil {
		t.Errorf("the pause is still open (%v)", err)
	}
}

// TestGateEmptyPrincipal: invariant 6. A principal with an empty id is no
// principal, whatever roles it claims: a request with tools is refused
// with AUTHENTICATION_REQUIRED, the role policy denies it, and a guarded
// tool run by a manager without a client refuses to run for it.
func TestGateEmptyPrincipal(t *testing.T) {
	ctx := context.Background()
	nobody := &toolgate.Principal{ID: "", Roles: []string{"finance"}}
	var c counter
	tools := []*toolgate.Tool{c.tool("transfer", toolgate.ToolMetadata{})}
	g := authz.NewGuard(authz.AllowAll(), nil)
	_, err := g.Begin(ctx, &toolgate.BeginParams{Principal: nobody, Tools: tools})
	denial(t, err, authz.CodeAuthenticationRequired)

	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{}`}}}, scripted.Reply{Text: "done"})
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Authorize: g.Begin})
	_, err = client.Call(ctx, &toolgate.CallParams{Principal: nobody, Input: "pay"})
	denial(t, err, authz.CodeAuthenticationRequired)

	d, err := roles.Authorize(ctx, &authz.Request{Principal: nobody, Tool: tools[0].Definition(), Phase: authz.PhaseDefinition})
	if err != nil || d.Allowed {
		t.Errorf("RoleTools for a principal without an id: %+v, %v; want a denial", d, err)
	}

	// The guard's tools, run by a client without the guard.
	rg, err := g.Begin(ctx, &toolgate.BeginParams{Principal: alice, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	offered, err := rg.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*toolgate.Principal{nil, nobody} {
		err = runWithoutGuard(ctx, offered, p, []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{}`}})
		denial(t, err, authz.CodeAuthenticationRequired)
	}
	if c.total() != 0 {
		t.Errorf("transfer ran %d times for nobody", c.total())
	}
}

// TestGatePanickingPolicy: invariant 5 for authorization. A policy that
// panics, when the reply is checked or right before a call runs, ends the
// turn with a *toolgate.PanicError and the tool never runs.
func TestGatePanickingPolicy(t *testing.T) {
	ctx := context.Background()
	boom := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		if r.Phase == authz.PhaseExecution {
			panic("policy bug")
		}
		return authz.Allow("shown"), nil
	})
	var c counter
	tools := []*toolgate.Tool{c.tool("transfer", toolgate.ToolMetadata{})}
	g := authz.NewGuard(boom, nil)
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{}`}}}, scripted.Reply{Text: "done"})
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Authorize: g.Begin, Logger: quiet()})
	_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "pay"})
	var pe *toolgate.PanicError
	if !errors.As(err, &pe) || pe.Seam != toolgate.SeamAuthorizer {
		t.Errorf("Call: got %v, want a *PanicError of the authorizer", err)
	}
	// Run by a client without the guard, the guard's own per-call check
	// panics inside the tool: the turn aborts.
	rg, err := g.Begin(ctx, &toolgate.BeginParams{Principal: alice, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	offered, err := rg.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = runWithoutGuard(ctx, offered, alice, []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{}`}})
	if !errors.As(err, &pe) || !errors.Is(err, toolgate.ErrAbortTurn) {
		t.Errorf("Call: got %v, want a *PanicError that aborts the turn", err)
	}
	if c.total() != 0 {
		t.Errorf("transfer ran %d times", c.total())
	}
}

// TestGateEditDeciderBeforeAuthorizer: invariant 1. An edit that the
// decider may not make is refused as a decision before the authorizer
// judges it, so even a neutral refusal does not consume the pause.
func TestGateEditDeciderBeforeAuthorizer(t *testing.T) {
	ctx := context.Background()
	var limit amountLimit
	var c counter
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "t", Name: "transfer", Arguments: `{"amount":500}`}}},
		scripted.Reply{Text: "done"},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{c.tool("transfer", toolgate.ToolMetadata{RequiresConfirmation: true})},
		&toolgate.ClientOptions{Authorize: authz.NewGuard(limit.policy(), &authz.Options{RefuseNeutrally: true}).Begin})
	if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "conv", Principal: alice, Input: "pay"}); err != nil {
		t.Fatal(err)
	}
	judged := len(limit.seen()) // the reply was judged before it paused
	smallOnly := func(call toolgate.ToolCall) bool { return !strings.Contains(call.Arguments, "5000") }
	_, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "conv"), ConversationID: "conv", Principal: alice, MayDecide: smallOnly,
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("t", json.RawMessage(`{"amount":5000}`))}})
	var de *toolgate.DecisionError
	if !errors.As(err, &de) || de.Problem != toolgate.ProblemNotDecider {
		t.Fatalf("got %v, want ProblemNotDecider", err)
	}
	if c.total() != 0 || len(limit.seen()) != judged {
		t.Errorf("transfer ran %d times; the authorizer judged %v", c.total(), limit.seen()[judged:])
	}
	if conv, err := client.Store().Load(ctx, "conv"); err != nil || conv.Pause == nil || conv.Pause.Claimed {
		t.Errorf("the pause was consumed (%v)", err)
	}
}
