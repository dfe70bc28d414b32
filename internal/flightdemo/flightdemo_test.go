package flightdemo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
)

// TestAnswerFollowsEditedArguments: an approver who books another flight
// than the model asked for gets an answer about the flight booked.
func TestAnswerFollowsEditedArguments(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision toolgate.Decision
		want     string
	}{
		{"as asked", toolgate.Allow("call_book"), "VX205 is on time. Your seat on VX205 is booked."},
		{"edited", toolgate.AllowWithArguments("call_book", json.RawMessage(`{"flight":"VX206"}`)), "VX205 is on time. Your seat on VX206 is booked."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tools := &flightdemo.Tools{}
			client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), nil)
			resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: flightdemo.Input})
			if err != nil || !resp.Paused() {
				t.Fatalf("Call = %v, %v; want a pause", resp, err)
			}
			resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "c", PauseID: resp.PauseID, Decisions: []toolgate.Decision{toolgate.Allow("call_status"), tc.decision}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Text(); got != tc.want {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
		})
	}
}
