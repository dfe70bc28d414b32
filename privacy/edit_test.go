package privacy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/toolgatetest"
)

// TestGuardEditedArguments: an approver's edit is handled like the model's
// arguments. Tokens in it reach the tool as originals only of the granted
// types; an original typed into it reaches the granted tool, and the model
// reads the edit note with tokens, never the original.
func TestGuardEditedArguments(t *testing.T) {
	ctx := context.Background()
	const other = "grace.hopper@example.com"
	for _, tc := range []struct {
		name string
		edit func(emailTok, cardTok string) string
		want map[string]string // what the tool receives
	}{
		{
			name: "tokens",
			edit: func(e, c string) string { return `{"email":"` + e + `","card":"` + c + `","note":"seat 2A"}` },
			want: map[string]string{"email": email, "note": "seat 2A"}, // card stays a token
		},
		{
			name: "original typed in",
			edit: func(_, c string) string { return `{"email":"` + other + `","card":"` + c + `","note":"window seat"}` },
			want: map[string]string{"email": other, "note": "window seat"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			guard, err := privacy.NewGuard(&privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"bookFlight": privacy.Types(privacy.EmailAddress)}})
			if err != nil {
				t.Fatal(err)
			}
			book := rec.tool("bookFlight", `"booked"`).WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
			model := echoModel()
			client := toolgate.NewClient(model, []*toolgate.Tool{book}, &toolgate.ClientOptions{Protect: guard.Begin})
			resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "e", Input: "for " + email + " with " + card})
			if err != nil || !resp.Paused() {
				t.Fatalf("Call: %v, paused %v", err, resp != nil && resp.Paused())
			}
			var asked map[string]string
			if err := json.Unmarshal([]byte(resp.Message().ToolCalls[0].Arguments), &asked); err != nil {
				t.Fatal(err)
			}
			if len(tokens(asked["email"])) != 1 || len(tokens(asked["card"])) != 1 {
				t.Fatalf("the paused reply asks %v, want tokens for the e-mail and the card", asked)
			}
			edit := tc.edit(asked["email"], asked["card"])
			if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "e"), ConversationID: "e",
				Decisions: []toolgate.Decision{toolgate.AllowWithArguments("c1", json.RawMessage(edit))}}); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			runs := rec.got()
			if len(runs) != 1 {
				t.Fatalf("bookFlight ran %d times, want 1", len(runs))
			}
			var got map[string]string
			if err := json.Unmarshal([]byte(runs[0]), &got); err != nil {
				t.Fatal(err)
			}
			if _, _, ok := privacy.ParseToken(got["card"]); !ok {
				t.Errorf("the tool received card %q, want a token (cards are not granted)", got["card"])
			}
			delete(got, "card")
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("the tool received %s=%q, want %q", k, got[k], v)
				}
			}
			seen := seenByModel(t, model)
			for _, original := range []string{email, card, other} {
				if strings.Contains(seen, original) {
					t.Errorf("the model saw %q", original)
				}
			}
			if !strings.Contains(seen, toolgate.EditNote) {
				t.Errorf("the model never read the edit note")
			}
		})
	}
}
