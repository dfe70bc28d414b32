package openai_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/provider/openai"
	"github.com/toolgate/toolgate/store/sqlite"
)

// recordedTools returns the tools of a recorded request, each needing a
// person's confirmation and answering with the recorded results.
func recordedTools(t *testing.T, req []byte, results map[string]string) []*toolgate.Tool {
	t.Helper()
	var body struct {
		Tools []struct {
			Name        string             `json:"name"`
			Description string             `json:"description"`
			Parameters  *jsonschema.Schema `json:"parameters"`
			Function    *struct {
				Name        string             `json:"name"`
				Description string             `json:"description"`
				Parameters  *jsonschema.Schema `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(req, &body); err != nil {
		t.Fatal(err)
	}
	var tools []*toolgate.Tool
	for _, tl := range body.Tools {
		name, desc, schema := tl.Name, tl.Description, tl.Parameters
		if tl.Function != nil {
			name, desc, schema = tl.Function.Name, tl.Function.Description, tl.Function.Parameters
		}
		result := results[name]
		tools = append(tools, toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: desc, InputSchema: schema},
			toolgate.ToolMetadata{RequiresConfirmation: true},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return result, nil }))
	}
	return tools
}

// recordedPrompt returns the system and user texts of a recorded first
// request.
func recordedPrompt(t *testing.T, req []byte) (system, user string) {
	t.Helper()
	var body struct {
		Messages []map[string]json.RawMessage `json:"messages"`
		Input    []map[string]json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(req, &body); err != nil {
		t.Fatal(err)
	}
	msgs := body.Messages
	if msgs == nil {
		msgs = body.Input
	}
	return messageText(msgs[0]), messageText(msgs[1])
}

// pauseStoreResume runs the recorded first round through a client on a
// SQLite store: the gated calls pause the turn; the store is closed and
// opened again by a new client on a new model, which resumes the turn with
// every call allowed. It returns the reply that paused, as stored.
func pauseStoreResume(t *testing.T, model func() *openai.Model, rec []recording.Exchange, results map[string]string, after func(*toolgate.Client)) *toolgate.AssistantMessage {
	t.Helper()
	ctx := t.Context()
	system, user := recordedPrompt(t, rec[0].Request)
	tools := recordedTools(t, rec[0].Request, results)
	path := filepath.Join(t.TempDir(), "conversations.db")
	open := func() (*toolgate.Client, *sqlite.Store) {
		store, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return toolgate.NewClient(model(), tools, &toolgate.ClientOptions{Store: store, SystemPrompt: system}), store
	}

	client, store := open()
	p := &toolgate.CallParams{ConversationID: "conv", Input: user}
	resp, err := fakeapi.Call(ctx, client, p, rec[0].Stream)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Paused() {
		t.Fatalf("got %+v, want a paused turn", resp)
	}
	paused := resp.Message()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	client, store = open()
	defer store.Close()
	conv, err := store.Load(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	stored, ok := conv.Messages[len(conv.Messages)-1].(*toolgate.AssistantMessage)
	if !ok {
		t.Fatalf("the stored conversation ends with %T, want the paused reply", conv.Messages[len(conv.Messages)-1])
	}
	// A client stream's last chunk does not repeat the reply's parts; the
	// stored reply has them.
	want := paused
	if rec[0].Stream {
		want = &toolgate.AssistantMessage{Text: paused.Text, ToolCalls: paused.ToolCalls, Parts: stored.Parts}
	}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("stored reply differs from the paused one (-paused +stored):\n%s", diff)
	}
	var decisions []toolgate.Decision
	for _, k := range resp.Awaiting {
		decisions = append(decisions, toolgate.Allow(k))
	}
	rp := &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: conv.Pause.ID, Decisions: decisions}
	resp, err = fakeapi.Resume(ctx, client, rp, rec[1].Stream)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Paused() || resp.Text() == "" {
		t.Errorf("got %+v, want the final answer", resp)
	}
	if after != nil {
		after(client)
	}
	return stored
}

// afterUser returns the input items (or messages) of a request after its
// user message: what the client adds to the recorded prompt.
func afterUser(t *testing.T, req []byte, key string) any {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(req, &body); err != nil {
		t.Fatal(err)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(body[key], &items); err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if str(it["role"]) == "user" {
			return generic(items[i+1:])
		}
	}
	t.Fatal("no user message")
	return nil
}

// TestResponsesReasoningPauseResume pauses recorded gpt-5 replies with
// reasoning (one call with encrypted reasoning; two parallel calls with
// reasoning that has no encrypted content), stores the conversation in
// SQLite, resumes it with a new client, and checks the request that
// follows against the documented rule (see [responsesAPI]): "If the model
// calls multiple functions consecutively, you should pass back all
// reasoning items, function call items, and function call output items,
// since the last user message." (OpenAI reasoning guide, "Keeping
// reasoning items in context").
//
// With encrypted reasoning, the next input is the reply's output items as
// served, in order (the reasoning item with its id, summary and
// encrypted_content, then the function_call item with its id), then the
// outputs. Without encrypted content and with store false the reasoning
// item cannot be sent back (the API answers 400: "Items are not persisted
// when `store` is set to false"), and the calls go without their item ids
// (the API answers 400 to a call item whose reasoning item is missing):
// that request is the recorded follow-up, which the API accepted.
func TestResponsesReasoningPauseResume(t *testing.T) {
	for _, tt := range []struct {
		name     string
		results  map[string]string
		recorded bool // the recorded follow-up is the documented one
	}{
		{"responses_reasoning_tool", map[string]string{"weather": "40 C"}, false},
		{"responses_reasoning_tool_stream", map[string]string{"weather": "40 C"}, false},
		{"responses_reasoning_parallel", map[string]string{"add": "5", "multiply": "6"}, true},
		{"responses_reasoning_parallel_stream", map[string]string{"add": "5", "multiply": "6"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.Load(t, tt.name)
			f := newResponsesAPI(t, rec...)
			// A third round, after the recorded ones: the user thanks the
			// model, and the answer with its reasoning goes back too,
			// each reasoning item followed by the item it preceded.
			f.AddReplies(recording.Exchange{Status: 200, Response: []byte(response("completed", "You are welcome."))})
			thanks := func(c *toolgate.Client) {
				if _, err := c.Call(t.Context(), &toolgate.CallParams{ConversationID: "conv", Input: "Thanks."}); err != nil {
					t.Fatal(err)
				}
			}
			paused := pauseStoreResume(t, func() *openai.Model { return f.model(t) }, rec, tt.results, thanks)
			f.CheckAccepted(t)
			if len(paused.Parts) == 0 {
				t.Fatal("the paused reply kept no parts")
			}
			got := afterUser(t, f.Body(1), "input")
			var want any
			if tt.recorded {
				want = afterUser(t, rec[1].Request, "input")
			} else {
				var items []any
				for _, it := range recordedOutput(t, rec[0]) {
					items = append(items, it)
				}
				for _, it := range recordedOutput(t, rec[0]) {
					if str(it["type"]) == "function_call" {
						items = append(items, map[string]any{"type": "function_call_output", "call_id": str(it["call_id"]), "output": tt.results[str(it["name"])]})
					}
				}
				want = generic(items)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("next request's items after the user message (-documented +sent):\n%s", diff)
			}
			// The third request holds the second answer's output items as
			// served (for the recordings with encrypted reasoning).
			if !tt.recorded {
				var served []any
				for _, it := range recordedOutput(t, rec[1]) {
					if str(it["type"]) == "message" {
						it = normalize(it)
					}
					served = append(served, it)
				}
				var body struct {
					Input []map[string]json.RawMessage `json:"input"`
				}
				json.Unmarshal(f.Body(2), &body)
				var sent []any
				for _, it := range body.Input {
					switch str(it["type"]) {
					case "reasoning":
						if str(it["id"]) == str(recordedOutput(t, rec[1])[0]["id"]) {
							sent = append(sent, it)
						}
					case "message":
						if len(sent) > 0 {
							sent = append(sent, normalize(it))
						}
					}
				}
				if diff := cmp.Diff(generic(served), generic(sent)); diff != "" {
					t.Errorf("third request: the second answer's items (-served +sent):\n%s", diff)
				}
			}
		})
	}
}

// TestChatReasoningPauseResume pauses recorded replies of a Chat
// Completions server in thinking mode with reasoning_content and two
// parallel calls, streamed and not, stores the conversation in SQLite,
// resumes it with a new client, and checks the request that follows
// against the rule the server enforces (see [reasoningAPI]): "Between two
// user messages, if the model performed a tool call, the intermediate
// assistant's reasoning_content must participate in the context
// concatenation and must be passed back to the API in all subsequent
// requests" (DeepSeek API documentation, Thinking Mode,
// https://api-docs.deepseek.com/guides/thinking_mode). The request is the
// recorded follow-up, which the server accepted.
func TestChatReasoningPauseResume(t *testing.T) {
	for _, name := range []string{"chat_reasoning_parallel", "chat_reasoning_parallel_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			f := newReasoningAPI(t, rec...)
			paused := pauseStoreResume(t, func() *openai.Model { return f.model(t) }, rec, map[string]string{"add": "5", "multiply": "6"}, nil)
			f.CheckAccepted(t)
			if len(paused.Parts) == 0 {
				t.Fatal("the paused reply kept no parts")
			}
			sent := f.Body(1)
			if diff := cmp.Diff(afterUser(t, rec[1].Request, "messages"), afterUser(t, sent, "messages")); diff != "" {
				t.Errorf("next request's messages after the user message (-recorded +sent):\n%s", diff)
			}
		})
	}
}
