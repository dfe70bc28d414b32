package anthropic

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
)

// confirmedWeather is the recordings' weather tool; it needs a person's
// confirmation, so that a turn that calls it pauses.
func confirmedWeather(t *testing.T) *toolgate.Tool {
	t.Helper()
	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"properties":{"location":{"description":"the city","type":"string"}},"required":["location"],"type":"object"}`), &schema); err != nil {
		t.Fatal(err)
	}
	return toolgate.NewTool(toolgate.ToolDefinition{Name: "weather", Description: "Get weather information for a location", InputSchema: &schema},
		toolgate.ToolMetadata{RequiresConfirmation: true}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "40 C", nil })
}

// openClient returns a client of model on the SQLite database at path, set
// up as the recordings were made (system prompt, parallel tool use on).
func openClient(t *testing.T, m toolgate.Model, path string) *toolgate.Client {
	t.Helper()
	store, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return toolgate.NewClient(m, []*toolgate.Tool{confirmedWeather(t)}, &toolgate.ClientOptions{
		Store:        store,
		SystemPrompt: "You are a helpful assistant",
		ModelOptions: &toolgate.ModelOptions{ParallelToolCalls: ptr(true)},
	})
}

// TestThinkingPauseResume replays the recorded extended-thinking turns,
// complete and streamed, through a client that pauses on the tool call,
// keeps the conversation in SQLite, and resumes it from a new client on
// the reopened database.
//
// The rule the resumed request must follow (Anthropic documentation,
// "Building with extended thinking", section "Preserving thinking blocks",
// https://docs.claude.com/en/docs/build-with-claude/extended-thinking):
// "During tool use, you must pass thinking blocks back to the API, and you
// must include the complete unmodified block back to the API." The fake
// API answers 400 when the thinking block is missing, moved after the
// tool_use block or changed, and the request the adapter sends on resume
// must be the request recorded against the real API, field for field.
func TestThinkingPauseResume(t *testing.T) {
	for _, name := range []string{"thinking_tool", "thinking_tool_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			f := newThinkingAPI(t, rec...)
			path := filepath.Join(t.TempDir(), "toolgate.db")
			stream := rec[0].Stream
			input := "What's the weather in Florence, Italy?"

			first := openClient(t, f.model(t), path)
			var resp *toolgate.Response
			var err error
			if stream {
				resp, err = toolgate.Collect(first.Stream(t.Context(), &toolgate.CallParams{ConversationID: "trip", Input: input}))
			} else {
				resp, err = first.Call(t.Context(), &toolgate.CallParams{ConversationID: "trip", Input: input})
			}
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Paused() {
				t.Fatalf("the turn did not pause: %+v", resp)
			}

			second := openClient(t, f.model(t), path) // a new client on the reopened store
			conv, err := second.Store().Load(t.Context(), "trip")
			if err != nil {
				t.Fatal(err)
			}
			reply := conv.Messages[len(conv.Messages)-1].(*toolgate.AssistantMessage)
			if len(reply.Parts) != 2 {
				t.Fatalf("stored reply parts %+v, want the thinking block and the call", reply.Parts)
			}
			if r, ok := reply.Parts[0].(toolgate.ReasoningPart); !ok || r.Provider != "anthropic" || r.Signature == "" || r.Text == "" {
				t.Errorf("stored part 0 is %#v, want the signed thinking block", reply.Parts[0])
			}
			params := &toolgate.ResumeTurnParams{
				ConversationID: "trip",
				PauseID:        toolgatetest.OpenPauseID(t, second, "trip"),
				Decisions:      []toolgate.Decision{toolgate.Allow(reply.ToolCalls[0].ID)},
			}
			if stream {
				resp, err = toolgate.Collect(second.ResumeStream(t.Context(), params))
			} else {
				resp, err = second.Resume(t.Context(), params)
			}
			if err != nil {
				t.Fatalf("resume: %v (rejected: %q)", err, f.rejected())
			}
			if got := f.rejected(); len(got) != 0 {
				t.Fatalf("rejected: %q", got)
			}
			if resp.Text() == "" {
				t.Errorf("resumed turn ended without the recorded answer: %+v", resp)
			}
			f.mu.Lock()
			sent := f.requests[1]
			f.mu.Unlock()
			var got, want any
			if err := json.Unmarshal(sent, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rec[1].Request, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("resumed request differs from the recorded one (-recorded +adapter):\n%s", diff)
			}
		})
	}
}

// TestRedactedThinkingThroughAdapter: a redacted_thinking block (built
// from the documented wire format; no recording of one was found) is read
// into a redacted reasoning part and sent back with its data unchanged,
// before the tool_use block, which the fake API checks.
func TestRedactedThinkingThroughAdapter(t *testing.T) {
	reply := recording.Exchange{Status: 200, Response: []byte(`{"id":"msg_r","type":"message","role":"assistant","model":"m","content":[
		{"type":"redacted_thinking","data":"RXF3Ymxv"},
		{"type":"tool_use","id":"toolu_r","name":"weather","input":{"location":"Oslo"}}],
		"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}`)}
	final := recording.Exchange{Status: 200, Response: []byte(`{"id":"msg_s","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"4 C in Oslo."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":5}}`)}
	f := newThinkingAPI(t, reply, final)
	m := f.model(t)
	prompt := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Weather in Oslo?"}}}
	resp, err := m.Generate(t.Context(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	want := toolgate.Parts{toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "RXF3Ymxv"}, toolgate.ToolCallPart{Index: 0}}
	if diff := cmp.Diff(want, resp.Message().Parts); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if resp.Usage.ReasoningTokens != 4 {
		t.Errorf("got %d reasoning tokens, want 4", resp.Usage.ReasoningTokens)
	}
	prompt.Messages = append(prompt.Messages, resp.Message(), &toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "toolu_r", Name: "weather", Content: "4 C"}}})
	if _, err := m.Generate(t.Context(), prompt); err != nil {
		t.Fatalf("%v (rejected: %q)", err, f.rejected())
	}
}
