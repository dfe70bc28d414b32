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
