package anthropic

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
)

// replayCase is a recorded turn replayed through a client.
type replayCase struct {
	name     string // the recording
	thinking bool   // extended thinking on, as recorded
	tools    func() []*toolgate.Tool
	input    string
	options  *toolgate.ModelOptions
	parts    int // the parts the paused reply keeps (0: a plain reply)
}

var replayCases = []replayCase{
	{"thinking_tool", true, fakeapi.ConfirmedWeather, "What's the weather in Florence, Italy?",
		&toolgate.ModelOptions{ParallelToolCalls: ptr(true)}, 2},
	{"thinking_tool_stream", true, fakeapi.ConfirmedWeather, "What's the weather in Florence, Italy?",
		&toolgate.ModelOptions{ParallelToolCalls: ptr(true)}, 2},
	{"parallel_calls", false, fakeapi.Arithmetic, "Add and multiply the number 2 and 3",
		&toolgate.ModelOptions{ParallelToolCalls: ptr(true), MaxOutputTokens: 4000}, 0},
	{"parallel_calls_stream", false, fakeapi.Arithmetic, "Add and multiply the number 2 and 3",
		&toolgate.ModelOptions{ParallelToolCalls: ptr(true), MaxOutputTokens: 4000}, 0},
}

// openClient returns a client for the case on the SQLite database at path,
// with the system prompt of the recorded request req.
func (c *replayCase) openClient(t *testing.T, f *thinkingAPI, path string, req []byte) *toolgate.Client {
	t.Helper()
	var recorded struct{ System []struct{ Text string } }
	if err := json.Unmarshal(req, &recorded); err != nil || len(recorded.System) != 1 {
		t.Fatalf("recorded request: %v", err)
	}
	store, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m := f.model(t)
	if !c.thinking {
		if m, err = New(&Options{APIKey: "k", BaseURL: f.URL, Model: "claude-sonnet-4-20250514", MaxRetries: -1}); err != nil {
			t.Fatal(err)
		}
	}
	return toolgate.NewClient(m, c.tools(), &toolgate.ClientOptions{Store: store, SystemPrompt: recorded.System[0].Text, ModelOptions: c.options})
}

// TestThinkingPauseResume replays recorded turns, complete and streamed,
// through a client that pauses on a tool call that needs confirmation,
// keeps the conversation in SQLite, and resumes it from a new client on
// the reopened database: the extended-thinking turns with one call, and
// turns with two parallel calls (no public recording of a thinking reply
// with parallel calls was found; see testdata/recorded/SOURCES).
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
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) {
			rec := recording.Load(t, c.name)
			f := newThinkingAPI(t, rec...)
			path := filepath.Join(t.TempDir(), "toolgate.db")
			stream := rec[0].Stream

			first := c.openClient(t, f, path, rec[0].Request)
			resp, err := fakeapi.Call(t.Context(), first, &toolgate.CallParams{ConversationID: "trip", Input: c.input}, stream)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Paused() {
				t.Fatalf("the turn did not pause: %+v", resp)
			}

			second := c.openClient(t, f, path, rec[0].Request) // a new client on the reopened store
			conv, err := second.Store().Load(t.Context(), "trip")
			if err != nil {
				t.Fatal(err)
			}
			reply := conv.Messages[len(conv.Messages)-1].(*toolgate.AssistantMessage)
			if len(reply.Parts) != c.parts {
				t.Fatalf("stored reply parts %+v, want %d", reply.Parts, c.parts)
			}
			if c.parts > 0 {
				if r, ok := reply.Parts[0].(toolgate.ReasoningPart); !ok || r.Provider != "anthropic" || r.Signature == "" || r.Text == "" {
					t.Errorf("stored part 0 is %#v, want the signed thinking block", reply.Parts[0])
				}
			}
			var decisions []toolgate.Decision
			for _, call := range reply.ToolCalls {
				decisions = append(decisions, toolgate.Allow(call.ID))
			}
			params := &toolgate.ResumeTurnParams{ConversationID: "trip", PauseID: toolgatetest.OpenPauseID(t, second, "trip"), Decisions: decisions}
			resp, err = fakeapi.Resume(t.Context(), second, params, stream)
			if err != nil {
				t.Fatalf("resume: %v (rejected: %q)", err, f.Rejected())
			}
			f.CheckAccepted(t)
			if resp.Text() == "" {
				t.Errorf("resumed turn ended without the recorded answer: %+v", resp)
			}
			fakeapi.SameRequest(t, "resumed request", rec[1].Request, f.Body(1))
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
		t.Fatalf("%v (rejected: %q)", err, f.Rejected())
	}
}
