package toolgate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// TestResumeJudgesOnce: a resumption checks its decisions once. Who may
// decide is asked once about each awaited call, and once more about an
// edited call (whose edit may need a decision of its own), however many
// layers the resumption passes (client, authorizer, manager).
func TestResumeJudgesOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		decisions []toolgate.Decision
		want      int
	}{
		{"plain allow", []toolgate.Decision{toolgate.Allow("s"), toolgate.Allow("b")}, 1},
		{"edited allow", []toolgate.Decision{toolgate.Allow("s"), toolgate.AllowWithArguments("b", json.RawMessage(`{"flight":"VX206"}`))}, 2},
		{"deny", []toolgate.Decision{toolgate.Allow("s"), toolgate.Deny("b", "")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var ft flightTools
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s", "flightStatus", vx), call("b", "bookFlight", vx)}},
				scripted.Reply{Text: "Done."},
			)
			c := toolgate.NewClient(model, ft.tools(), nil)
			resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "o", Input: "book"})
			if err != nil || !resp.Paused() {
				t.Fatalf("Call: %v", err)
			}
			asked := map[string]int{}
			_, err = c.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "o", PauseID: resp.PauseID, Decisions: tc.decisions,
				MayDecide: func(call toolgate.ToolCall) bool { asked[call.ID]++; return true }})
			if err != nil {
				t.Fatal(err)
			}
			if asked["b"] != tc.want || asked["s"] != 0 {
				t.Errorf("MayDecide asked %v, want b %d times and s never", asked, tc.want)
			}
		})
	}
}
