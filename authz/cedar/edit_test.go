package cedar_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/toolgatetest"
)

// TestEditedSeatsForbidden: under examples/flights.cedar ("at-most-nine-
// seats"), an approver who edits a booking to ten seats is refused and
// nothing runs; the pause stays open, and an edit to two seats runs.
func TestEditedSeatsForbidden(t *testing.T) {
	ctx := context.Background()
	policy, err := cedar.Load(filepath.Join("..", "..", "examples", "flights.cedar"))
	if err != nil {
		t.Fatal(err)
	}
	var f flights
	tools := f.tools()
	tools[1] = tools[1].WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205","seats":4}`}}},
		scripted.Reply{Text: "Booked."},
	)
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Authorize: authz.NewGuard(policy, nil).Begin})
	alice := &toolgate.Principal{ID: "alice", Roles: []string{"traveller"}}
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "s", Principal: alice, Input: "Book VX205 for four"})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v, paused %v", err, resp != nil && resp.Paused())
	}
	resume := func(args string) error {
		_, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "s"), ConversationID: "s", Principal: alice,
			Decisions: []toolgate.Decision{toolgate.AllowWithArguments("c1", json.RawMessage(args))}})
		return err
	}
	err = resume(`{"flight":"VX205","seats":10}`)
	var de *authz.DenialError
	if !errors.As(err, &de) || de.Code != authz.CodeExecutionDenied {
		t.Fatalf("an edit to ten seats: got %v, want an execution denial", err)
	}
	if want := `forbidden by policy "at-most-nine-seats"`; !strings.HasPrefix(de.Reason, want) {
		t.Errorf("reason %q, want it to start with %q", de.Reason, want)
	}
	if diff := cmp.Diff(map[string]int{}, f.ran()); diff != "" {
		t.Fatalf("runs after a forbidden edit (-want +got):\n%s", diff)
	}
	// Repeated names are refused before the policy could read either one.
	var dErr *toolgate.DecisionError
	if err := resume(`{"flight":"VX205","seats":2,"seats":10}`); !errors.As(err, &dErr) || dErr.Problem != toolgate.ProblemInvalidArguments {
		t.Fatalf("an edit with a repeated name: got %v, want invalid_arguments", err)
	}
	if err := resume(`{"flight":"VX205","seats":2}`); err != nil {
		t.Fatalf("Resume with two seats: %v", err)
	}
	if diff := cmp.Diff(map[string]int{"bookFlight": 1}, f.ran()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}
