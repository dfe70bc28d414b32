package privacy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/scripted"
)

// signedReasoning holds a token-looking string and personal data: the
// guard must send it back exactly as the provider wrote it.
var signedReasoning = toolgate.Parts{
	toolgate.ReasoningPart{Text: "[EMAIL_ADDRESS_1] is " + email + "; card " + card + ".", Provider: "anthropic", Signature: "EqQBCkYIBxgC" + email},
	toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "EmwKAhgBEgy3va3p" + card},
}

// partsReply is a paused reply with reasoning, text naming a value the
// model typed itself, and a signed call.
func partsReply() scripted.Reply {
	return scripted.Reply{
		Text:      "Booking for " + email + ".",
		ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}},
		Parts: append(append(toolgate.Parts(nil), signedReasoning...),
			toolgate.TextPart{Text: "Booking for "},
			toolgate.TextPart{Text: email + ".", Provider: "gemini", Signature: "text-sig", Opaque: json.RawMessage(`{"phase":"final_answer"}`)},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "call-sig", Opaque: json.RawMessage(`{"k":"` + card + `"}`)},
		),
	}
}

func gatedBook(rec *recorder) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: "bookFlight"}, toolgate.ToolMetadata{RequiresConfirmation: true},
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.args = append(rec.args, string(req.Arguments))
			return "booked for " + email, nil
		})
}

func TestGuardParts(t *testing.T) {
	ctx := context.Background()
	guard, err := privacy.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	model := scripted.New(partsReply(), scripted.Reply{Text: "Done."})
	client := toolgate.NewClient(model, []*toolgate.Tool{gatedBook(&rec)}, &toolgate.ClientOptions{Protect: guard.Begin})
	png := toolgate.FilePart{MediaType: "image/png", Data: []byte("\x89PNG " + email)}
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "Book VX205.",
		Parts: toolgate.Parts{toolgate.TextPart{Text: "I am " + email}, png}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "p", PauseID: resp.PauseID, Decisions: []toolgate.Decision{toolgate.Allow("c1")}})
	if err != nil {
		t.Fatal(err)
	}
	prompts := model.Prompts()
	if len(prompts) != 2 {
		t.Fatalf("%d model calls, want 2", len(prompts))
	}

	// The user's text parts are tokenized; the file goes as it is.
	user := prompts[0].Messages[0].(*toolgate.UserMessage)
	if len(user.Parts) != 2 {
		t.Fatalf("the model got user parts %v", user.Parts)
	}
	if tp := user.Parts[0].(toolgate.TextPart); strings.Contains(tp.Text, email) || len(tokens(tp.Text)) != 1 {
		t.Errorf("user text part sent as %q, want its e-mail tokenized", tp.Text)
	}
	if !cmp.Equal(user.Parts[1], toolgate.Part(png)) {
		t.Errorf("file part sent as %v, want it unchanged", user.Parts[1])
	}

	// The paused reply goes back with its reasoning, redacted reasoning,
	// signatures and opaque fields byte for byte; its text is tokenized
	// and still agrees with its text parts.
	var sent *toolgate.AssistantMessage
	for _, m := range prompts[1].Messages {
		if am, ok := m.(*toolgate.AssistantMessage); ok {
			sent = am
		}
	}
	if sent == nil {
		t.Fatal("the resumed request holds no reply")
	}
	want := partsReply().Parts
	for i := range want {
		if _, ok := want[i].(toolgate.TextPart); ok {
			continue
		}
		if diff := cmp.Diff(want[i], sent.Parts[i]); diff != "" {
			t.Errorf("part %d changed on its way to the model (-want +got):\n%s", i, diff)
		}
	}
	signed := sent.Parts[3].(toolgate.TextPart)
	if strings.Contains(signed.Text, email) || signed.Signature != "text-sig" || string(signed.Opaque) != `{"phase":"final_answer"}` {
		t.Errorf("signed text part sent as %+v, want its text tokenized and its provider fields kept", signed)
	}
	if strings.Contains(sent.Text, email) || sent.Text != sent.Parts[2].(toolgate.TextPart).Text+signed.Text {
		t.Errorf("reply text sent as %q, want the tokenized text parts joined", sent.Text)
	}
	if b, err := json.Marshal(sent); err != nil {
		t.Fatal(err)
	} else if _, err := toolgate.UnmarshalMessage(b); err != nil {
		t.Errorf("the reply sent to the model is not valid: %v", err)
	}
	// The tool result's text is tokenized as before.
	if strings.Contains(seenByModel(t, model), "booked for "+email) {
		t.Error("the tool result reached the model with the e-mail")
	}
}

// TestGuardToolResultParts: text parts of tool results are tokenized like
// their content; files pass, or are refused with RefuseFiles.
func TestGuardToolResultParts(t *testing.T) {
	ctx := context.Background()
	msg := &toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "scan", Content: "ok",
		Parts: toolgate.Parts{toolgate.TextPart{Text: "owner " + email}, toolgate.FilePart{MediaType: "application/pdf", URL: "https://example.com/a.pdf"}}}}}
	guard, _ := privacy.NewGuard(nil)
	rp, err := guard.Begin(ctx, &toolgate.BeginParams{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := rp.Messages(ctx, []toolgate.Message{msg})
	if err != nil {
		t.Fatal(err)
	}
	got := out[0].(*toolgate.ToolMessage).Results[0].Parts
	if tp := got[0].(toolgate.TextPart); strings.Contains(tp.Text, email) {
		t.Errorf("tool result text part sent as %q", tp.Text)
	}
	if !cmp.Equal(got[1], msg.Results[0].Parts[1]) {
		t.Errorf("file part sent as %v", got[1])
	}
	if msg.Results[0].Parts[0].(toolgate.TextPart).Text != "owner "+email {
		t.Error("the guard changed the message it was given")
	}

	strict, _ := privacy.NewGuard(&privacy.GuardOptions{RefuseFiles: true})
	rp, _ = strict.Begin(ctx, &toolgate.BeginParams{})
	if _, err := rp.Messages(ctx, []toolgate.Message{msg}); !errors.Is(err, privacy.ErrUnscannedFile) {
		t.Errorf("RefuseFiles: got %v, want ErrUnscannedFile", err)
	}
	user := &toolgate.UserMessage{Text: "see", Parts: toolgate.Parts{toolgate.FilePart{MediaType: "image/png", Data: []byte("x")}}}
	if _, err := rp.Messages(ctx, []toolgate.Message{user}); !errors.Is(err, privacy.ErrUnscannedFile) {
		t.Errorf("RefuseFiles on a user file: got %v, want ErrUnscannedFile", err)
	}
	// The model's own files go back to it.
	reply := &toolgate.AssistantMessage{Parts: toolgate.Parts{toolgate.FilePart{MediaType: "image/png", Data: []byte("x")}}}
	if _, err := rp.Messages(ctx, []toolgate.Message{reply}); err != nil {
		t.Errorf("RefuseFiles on the model's own file: %v", err)
	}
}

// TestGuardReasoningNotShown: with a guard, the caller sees no reasoning
// (deltas, parts, signatures) unless the client shows it, and restored
// output never carries it.
func TestGuardReasoningNotShown(t *testing.T) {
	ctx := context.Background()
	for _, show := range []bool{false, true} {
		t.Run(map[bool]string{false: "hidden", true: "shown"}[show], func(t *testing.T) {
			guard, err := privacy.NewGuard(&privacy.GuardOptions{Output: privacy.ModeRestore,
				OutputGrant: func(*toolgate.Principal) privacy.Grant { return privacy.AllTypes() }})
			if err != nil {
				t.Fatal(err)
			}
			var rec recorder
			opts := &toolgate.ClientOptions{Protect: guard.Begin, ShowReasoning: show}
			var reasoning strings.Builder
			var last *toolgate.Chunk
			c := toolgate.NewClient(scripted.New(partsReply()), []*toolgate.Tool{gatedBook(&rec)}, opts)
			for ch, err := range c.Stream(ctx, &toolgate.CallParams{Input: "Book VX205"}) {
				if err != nil {
					t.Fatal(err)
				}
				reasoning.WriteString(ch.Reasoning)
				last = ch
			}
			called, err := toolgate.NewClient(scripted.New(partsReply()), []*toolgate.Tool{gatedBook(&rec)}, opts).
				Call(ctx, &toolgate.CallParams{Input: "Book VX205"})
			if err != nil {
				t.Fatal(err)
			}
			for what, parts := range map[string]toolgate.Parts{"last chunk": last.Parts, "response": called.Message().Parts} {
				b, _ := json.Marshal(parts)
				secrets := []string{"EqQBCkYIBxgC", "EmwKAhgBEgy3va3p", "text-sig", "call-sig", "final_answer"}
				if !show {
					secrets = append(secrets, card) // only the reasoning and the call's opaque field hold it
				}
				for _, secret := range secrets {
					if strings.Contains(string(b), secret) {
						t.Errorf("%s shows %q: %s", what, secret, b)
					}
				}
				var sawReasoning bool
				for _, p := range parts {
					if rp, ok := p.(toolgate.ReasoningPart); ok {
						sawReasoning = true
						if rp.Signature != "" || rp.Opaque != nil {
							t.Errorf("%s shows the reasoning's provider data", what)
						}
					}
				}
				if sawReasoning != show {
					t.Errorf("%s: reasoning shown %v, want %v (%s)", what, sawReasoning, show, b)
				}
			}
			if (reasoning.Len() > 0) != show {
				t.Errorf("reasoning deltas %q with ShowReasoning %v", reasoning.String(), show)
			}
			if got := called.Text(); got != "Booking for "+email+"." {
				t.Errorf("caller's text %q", got)
			}
			if got, err := toolgate.Collect(toolgate.NewClient(scripted.New(partsReply()), []*toolgate.Tool{gatedBook(&rec)}, opts).
				Stream(ctx, &toolgate.CallParams{Input: "Book VX205"})); err != nil {
				t.Errorf("Collect of the caller's stream: %v", err)
			} else if got.Text() != called.Text() {
				t.Errorf("collected text %q, want %q", got.Text(), called.Text())
			}
		})
	}
}
