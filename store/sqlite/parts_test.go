package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
)

// TestReopenResumesParts: a reply with parts paused in one process is
// resumed by another that opens the file again, and the model is sent the
// reply byte for byte.
func TestReopenResumesParts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	book := toolgate.NewTool(toolgate.ToolDefinition{Name: "bookFlight"}, toolgate.ToolMetadata{RequiresConfirmation: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "booked", nil })
	reply := &toolgate.AssistantMessage{
		Text:      "Booking.",
		ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "VX205 it is.", Provider: "openai.responses", Opaque: json.RawMessage(`{"id":"rs_1","encrypted_content":"gAAAAB","summary":[]}`)},
			toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "EmwKAhgB"},
			toolgate.TextPart{Text: "Booking."},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "CiQB"},
		},
	}
	want, _ := json.Marshal(reply)

	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := toolgate.NewClient(scripted.New(scripted.Reply{Text: reply.Text, ToolCalls: reply.ToolCalls, Parts: reply.Parts}), []*toolgate.Tool{book}, &toolgate.ClientOptions{Store: s})
	resp, err := a.Call(ctx, &toolgate.CallParams{ConversationID: "conv", Input: "Book VX205"})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v %+v", err, resp)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	model := scripted.New(scripted.Reply{Text: "Booked."})
	b := toolgate.NewClient(model, []*toolgate.Tool{book}, &toolgate.ClientOptions{Store: s})
	if _, err := b.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: resp.PauseID, Decisions: []toolgate.Decision{toolgate.Allow("c1")}}); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(model.Prompts()[0].Messages[1])
	if string(got) != string(want) {
		t.Errorf("the resumed request's reply\n got %s\nwant %s", got, want)
	}
}
