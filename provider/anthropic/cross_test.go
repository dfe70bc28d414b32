package anthropic

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// geminiReply returns the recorded Gemini reply with two parallel calls,
// the first signed, as the Gemini adapter reads it.
func geminiReply(t *testing.T) *toolgate.AssistantMessage {
	t.Helper()
	reply := fakeapi.RecordedReply(t, filepath.Join("..", "gemini", "testdata", "recorded", "parallel_calls.txtar"), func(url string) (toolgate.Model, error) {
		return gemini.New(&gemini.Options{APIKey: "k", BaseURL: url, Model: "gemini-3-pro-preview"})
	})
	if p, ok := reply.Parts[0].(toolgate.ToolCallPart); !ok || p.Provider != "gemini" || p.Signature == "" {
		t.Fatalf("the Gemini reply has no signed call: %+v", reply.Parts)
	}
	return reply
}

// TestReplyFromGemini: a Gemini reply with its thought signature, sent on
// to Claude with extended thinking on, goes as plain tool_use blocks (the
// Gemini signature is dropped, no thinking block is made up), and, since a
// tool use turn that began without thinking cannot continue with it (the
// API answers 400 otherwise), that request goes with thinking off. The
// fake API enforces that rule.
func TestReplyFromGemini(t *testing.T) {
	reply := geminiReply(t)
	rec := recording.Load(t, "thinking_tool")
	f := newThinkingAPI(t, rec[1]) // the recorded final answer
	prompt := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Add and multiply the number 2 and 3"},
		reply,
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: reply.ToolCalls[0].ID, Name: "add", Content: "5"},
			{CallID: reply.ToolCalls[1].ID, Name: "multiply", Content: "6"},
		}},
	}}
	resp, err := f.model(t).Generate(t.Context(), prompt)
	if err != nil {
		t.Fatalf("%v (rejected: %q)", err, f.Rejected())
	}
	if resp.Text() == "" {
		t.Error("no answer")
	}
	var req map[string]any
	err = json.Unmarshal(f.Body(0), &req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := req["thinking"]; ok {
		t.Errorf("thinking sent for a tool turn that began without it: %v", req["thinking"])
	}
	want := []any{
		map[string]any{"type": "tool_use", "id": "wxvlv0tv", "name": "add", "input": map[string]any{"a": 2.0, "b": 3.0}},
		map[string]any{"type": "tool_use", "id": "75p2opbh", "name": "multiply", "input": map[string]any{"a": 2.0, "b": 3.0}},
	}
	got := req["messages"].([]any)[1].(map[string]any)["content"]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assistant content (-want +got):\n%s", diff)
	}
}

// TestForeignPartsDropped: reasoning of another provider is left out,
// its text goes as plain text and its calls as plain calls; this adapter's
// own parts go back in their order.
func TestForeignPartsDropped(t *testing.T) {
	reply := &toolgate.AssistantMessage{
		Text:      "Checking.",
		ToolCalls: []toolgate.ToolCall{{ID: "toolu_1", Name: "weather", Arguments: `{"location":"Oslo"}`}},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "theirs", Provider: "openai.responses", Signature: "enc", Opaque: json.RawMessage(`{"id":"rs_1"}`)},
			toolgate.RedactedReasoningPart{Provider: "other", Data: "xyz"},
			toolgate.ReasoningPart{Text: "mine", Provider: "anthropic", Signature: "sig"},
			toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "RXF3"},
			toolgate.TextPart{Text: "Checking.", Provider: "gemini", Signature: "Zm9v"},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "YmFy"},
		},
	}
	f := newFakeAPI(t, jsonAnswer(`{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	_, err := f.model(t).Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Weather in Oslo?"}, reply,
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "toolu_1", Name: "weather", Content: "4 C"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"type": "thinking", "thinking": "mine", "signature": "sig"},
		map[string]any{"type": "redacted_thinking", "data": "RXF3"},
		map[string]any{"type": "text", "text": "Checking."},
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": map[string]any{"location": "Oslo"}},
	}
	got := f.JSON(0)["messages"].([]any)[1].(map[string]any)["content"]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assistant content (-want +got):\n%s", diff)
	}
}

// TestBadParts: a hand-built reply whose parts name a call it does not
// have is an error wrapping [toolgate.ErrInvalidMessage], before any
// request is made.
func TestBadParts(t *testing.T) {
	f := newFakeAPI(t)
	reply := &toolgate.AssistantMessage{Parts: toolgate.Parts{toolgate.ToolCallPart{Index: 1}}}
	_, err := f.model(t).Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}, reply}})
	if !errors.Is(err, toolgate.ErrInvalidMessage) || f.Count() != 0 {
		t.Errorf("got %v after %d requests, want ErrInvalidMessage before any", err, f.Count())
	}
}
