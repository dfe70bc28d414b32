package toolgatetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// partsReply is a reply of a reasoning model that holds more than text and
// calls: signed reasoning, redacted reasoning, a signed call and opaque
// provider fields, in the order the provider gave them.
func partsReply() *toolgate.AssistantMessage {
	return &toolgate.AssistantMessage{
		Text: "Booking VX205 for Ada Lovelace.",
		ToolCalls: []toolgate.ToolCall{
			{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
			{ID: "c2", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
		},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "The user wants VX205; TOK_PERSON_1 is ada@example.com.", Provider: "anthropic", Signature: "EqQBCkYIBxgCKkB+/sig=="},
			toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
			toolgate.TextPart{Text: "Booking VX205 ", Provider: "gemini", Signature: "c2lnLXRleHQ="},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "c2lnLWNhbGw=", Opaque: json.RawMessage(`{"phase":"commentary"}`)},
			toolgate.TextPart{Text: "for Ada Lovelace."},
			toolgate.ToolCallPart{Index: 1},
		},
	}
}

// testResumeParts pauses a turn whose reply holds parts, resumes it with a
// new client on the same store, and checks that the model's next request
// carries the reply exactly as the model gave it.
func testResumeParts(t *testing.T, s toolgate.ConversationStore) {
	ctx := context.Background()
	tools := []*toolgate.Tool{
		toolgate.NewTool(toolgate.ToolDefinition{Name: "bookFlight"}, toolgate.ToolMetadata{RequiresConfirmation: true},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return "booked", nil }),
		toolgate.NewTool(toolgate.ToolDefinition{Name: "flightStatus"}, toolgate.ToolMetadata{},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return "on time", nil }),
	}
	want := partsReply()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	first := scripted.New(scripted.Reply{Text: want.Text, ToolCalls: want.ToolCalls, Parts: want.Parts})
	a := toolgate.NewClient(first, tools, &toolgate.ClientOptions{Store: s})
	resp, err := a.Call(ctx, &toolgate.CallParams{ConversationID: "conv_parts", Input: "Book VX205"})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if !resp.Paused() {
		t.Fatalf("the turn did not pause: %s", resp.FinishReason())
	}
	conv := mustLoad(t, s, "conv_parts")
	if conv.Pause == nil {
		t.Fatal("no open pause stored")
	}
	stored, err := json.Marshal(conv.Messages[conv.Pause.Index])
	if err != nil {
		t.Fatal(err)
	}
	if string(stored) != string(wantJSON) {
		t.Fatalf("stored paused reply:\n got %s\nwant %s", stored, wantJSON)
	}

	// Another client, as another process would build it, resumes.
	second := scripted.New(scripted.Reply{Text: "Booked."})
	b := toolgate.NewClient(second, tools, &toolgate.ClientOptions{Store: s})
	keys := want.CallKeys()
	_, err = b.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "conv_parts", PauseID: conv.Pause.ID,
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments(keys[0], json.RawMessage(`{"flight":"VX206"}`)), toolgate.Allow(keys[1])}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	prompts := second.Prompts()
	if len(prompts) != 1 {
		t.Fatalf("the model was called %d times after the resumption, want 1", len(prompts))
	}
	var sent toolgate.Message
	for _, m := range prompts[0].Messages {
		if _, ok := m.(*toolgate.AssistantMessage); ok {
			sent = m
		}
	}
	if sent == nil {
		t.Fatal("the resumed request holds no reply")
	}
	got, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wantJSON) {
		t.Errorf("the resumed request's reply:\n got %s\nwant %s", got, wantJSON)
	}
}
