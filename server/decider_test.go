package server_test

import (
	"errors"
	"testing"

	"github.com/toolgate/toolgate"
)

// The server hands the core its check of who may decide each call, so a
// decision that never passed the service's own check is refused by the
// core as well.
func TestCoreRefusesADeciderTheServiceWouldRefuse(t *testing.T) {
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
	ada := &toolgate.Principal{ID: "ada", Roles: []string{"requester"}}
	for _, p := range []*toolgate.Principal{
		{ID: "wes", Roles: []string{"wirer"}}, // decides wire, not pay
		ada,                                   // the requester, whom no rule lets decide
		{ID: "pat"},                           // pat without the payer role
	} {
		check, err := f.srv.DeciderFor(t.Context(), p, conv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.client.Resume(t.Context(), &toolgate.ResumeTurnParams{ConversationID: conv, PauseID: pause, Principal: ada,
			Decisions: []toolgate.Decision{toolgate.Allow("c1")}, MayDecide: check})
		var de *toolgate.DecisionError
		if !errors.As(err, &de) || de.Problem != toolgate.ProblemNotDecider || de.Key != "c1" {
			t.Fatalf("resume decided by %s: %v, want a not_decider DecisionError for c1", p.ID, err)
		}
		f.noneRan("pay")
	}
	check, err := f.srv.DeciderFor(t.Context(), &toolgate.Principal{ID: "pat", Roles: []string{"payer"}}, conv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Resume(t.Context(), &toolgate.ResumeTurnParams{ConversationID: conv, PauseID: pause, Principal: ada,
		Decisions: []toolgate.Decision{toolgate.Allow("c1")}, MayDecide: check}); err != nil {
		t.Fatalf("resume decided by pat: %v", err)
	}
	if got := f.ranWith("pay"); len(got) != 1 {
		t.Errorf("pay ran %d times, want once", len(got))
	}
}

// A decision the core refuses for who decided or what an edit needs is
// answered with the problem as the error code: 422 edit_needs_confirmation
// for an edit the confirmation policy gates itself.
func TestDecisionEditNeedingConfirmationIsAnswered422(t *testing.T) {
	f := newAtkFixture(t, atkOptions{})
	conv, pause := f.paused(call("c1", "pay", `{"amount":1}`))
	code, out := f.decide(atkPayer, conv, pause, `{"decisions":[{"key":"c1","verdict":"allow","arguments":{"gate":true}}]}`)
	if code != 422 || out["error"] != "edit_needs_confirmation" || out["problem"] != "edit_needs_confirmation" || out["key"] != "c1" {
		t.Fatalf("decision: %d %v, want 422 edit_needs_confirmation for c1", code, out)
	}
	f.noneRan("pay")
}
