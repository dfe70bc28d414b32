package gemini

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// claudeReply returns the recorded Claude reply with a signed thinking
// block and a tool call, as the Anthropic adapter reads it.
func claudeReply(t *testing.T) *toolgate.AssistantMessage {
	t.Helper()
	reply := fakeapi.RecordedReply(t, filepath.Join("..", "anthropic", "testdata", "recorded", "thinking_tool.txtar"), func(url string) (toolgate.Model, error) {
		return anthropic.New(&anthropic.Options{APIKey: "k", BaseURL: url, Model: "claude-sonnet-4-20250514", MaxRetries: -1})
	})
	if p, ok := reply.Parts[0].(toolgate.ReasoningPart); !ok || p.Provider != "anthropic" || p.Signature == "" {
		t.Fatalf("the Claude reply has no signed thinking: %+v", reply.Parts)
	}
	return reply
}

// TestReplyFromClaude: a Claude reply with its signed thinking, sent on to
// Gemini, goes without the thinking (another provider's reasoning is
// dropped) and with its call carrying the bypass value, the one the
// Gemini documentation gives for calls whose signature is not known
// ("Thought signatures": "skip_thought_signature_validator"); the fake API
// rejects the call without any signature, and accepts the bypass value as
// the API does.
func TestReplyFromClaude(t *testing.T) {
	reply := claudeReply(t)
	rec := recording.Load(t, "parallel_calls")
	f := newSignatureAPI(t, rec[1]) // the recorded final answer
	f.bypass = true
	prompt := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "What's the weather in Florence, Italy?"},
		reply,
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: reply.ToolCalls[0].ID, Name: "weather", Content: "40 C"}}},
	}}
	if _, err := f.model(t).Generate(t.Context(), prompt); err != nil {
		t.Fatalf("%v (rejected: %q)", err, f.Rejected())
	}
	var req struct{ Contents []any }
	err := json.Unmarshal(f.Body(0), &req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"role": "model", "parts": []any{map[string]any{
		"functionCall":     map[string]any{"id": "toolu_014azqsWLU8Djh6RhmBGRC2u", "name": "weather", "args": map[string]any{"location": "Florence, Italy"}},
		"thoughtSignature": base64.StdEncoding.EncodeToString(skipSignature),
	}}}
	if diff := cmp.Diff(want, req.Contents[1]); diff != "" {
		t.Errorf("model content (-want +got):\n%s", diff)
	}
}

// TestForeignPartsDropped: reasoning of another provider is left out,
// its text goes as plain text and its calls as plain calls; this adapter's
// own parts go back in their order with their signatures, and a reply
// with a signature of its own gets no bypass value.
func TestForeignPartsDropped(t *testing.T) {
	reply := &toolgate.AssistantMessage{
		Text: "Checking.",
		ToolCalls: []toolgate.ToolCall{
			{ID: "a", Name: "add", Arguments: `{"a":1}`},
			{ID: "b", Name: "add", Arguments: `{"a":2}`},
		},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "theirs", Provider: "anthropic", Signature: "sig"},
			toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "xyz"},
			toolgate.ReasoningPart{Text: "mine", Provider: "gemini", Signature: "bWluZQ=="},
			toolgate.TextPart{Text: "Checking.", Provider: "gemini", Signature: "dGV4dA=="},
			toolgate.ToolCallPart{Index: 0, Provider: "openai.responses", Opaque: json.RawMessage(`{"status":"completed"}`)},
			toolgate.ToolCallPart{Index: 1},
		},
	}
	f := newFakeAPI(t, jsonAnswer(simpleResponse))
	_, err := f.model(t).Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Add."}, reply,
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "a", Name: "add", Content: "1"}, {CallID: "b", Name: "add", Content: "2"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"role": "model", "parts": []any{
		map[string]any{"text": "mine", "thought": true, "thoughtSignature": "bWluZQ=="},
		map[string]any{"text": "Checking.", "thoughtSignature": "dGV4dA=="},
		map[string]any{"functionCall": map[string]any{"id": "a", "name": "add", "args": map[string]any{"a": 1.0}}},
		map[string]any{"functionCall": map[string]any{"id": "b", "name": "add", "args": map[string]any{"a": 2.0}}},
	}}
	if diff := cmp.Diff(want, f.JSON(0)["contents"].([]any)[1]); diff != "" {
		t.Errorf("model content (-want +got):\n%s", diff)
	}
}

// TestBadParts: a hand-built reply whose parts name a call it does not
// have, or whose signature is not base64, is an error wrapping
// [toolgate.ErrInvalidMessage], before any request is made.
func TestBadParts(t *testing.T) {
	call := []toolgate.ToolCall{{Name: "add", Arguments: "{}"}}
	for name, reply := range map[string]*toolgate.AssistantMessage{
		"call out of range": {Parts: toolgate.Parts{toolgate.ToolCallPart{Index: 1}}},
		"call signature":    {ToolCalls: call, Parts: toolgate.Parts{toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "not base64!"}}},
		"text signature":    {Text: "x", Parts: toolgate.Parts{toolgate.TextPart{Text: "x", Provider: "gemini", Signature: "%%"}}},
		"thought signature": {Parts: toolgate.Parts{toolgate.ReasoningPart{Text: "t", Provider: "gemini", Signature: "%%"}}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			_, err := f.model(t).Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}, reply}})
			if !errors.Is(err, toolgate.ErrInvalidMessage) || f.Count() != 0 {
				t.Errorf("got %v after %d requests, want ErrInvalidMessage before any", err, f.Count())
			}
		})
	}
}
