package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// thinkingAPI is a fake Messages API that answers with recorded replies, in
// order, and enforces the rule the API documents for extended thinking
// with tool use (Anthropic documentation, "Building with extended
// thinking", section "Preserving thinking blocks"): during tool use the
// thinking blocks of the assistant turn must be passed back, complete and
// unmodified. The API checks it: with thinking enabled, a final assistant
// message must start with a thinking or redacted_thinking block, and a
// block whose signature does not match its content is rejected. Both
// answers are 400 invalid_request_error.
//
// The fake learns the thinking blocks of every reply it serves (complete
// or streamed) and requires, for each later request:
//   - with thinking enabled, the last assistant message, when it holds
//     tool_use blocks, starts with a thinking or redacted_thinking block;
//   - every assistant message that answers with a tool_use block the fake
//     served after thinking carries exactly the thinking blocks served with
//     it, in order, before its first tool_use block;
//   - every thinking block sent back is one the fake served, byte for byte
//     (its signature is valid).
//
// A replay through the client is a few lines: serve the recording's
// replies, give the model (see [thinkingAPI.model]) the recording's tool,
// run the turn, and check f.Rejected().
type thinkingAPI struct {
	*fakeapi.Referee

	// guarded by the referee's lock (see [fakeapi.Rule])
	served map[string][]json.RawMessage // tool_use id: the thinking blocks before it
	known  map[string]bool              // canonical JSON of every thinking block served
}

func newThinkingAPI(t *testing.T, replies ...recording.Exchange) *thinkingAPI {
	t.Helper()
	f := &thinkingAPI{served: map[string][]json.RawMessage{}, known: map[string]bool{}}
	refuse := func(reason string) fakeapi.Answer {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": reason}})
		return fakeapi.Answer{Status: http.StatusBadRequest, Body: string(b)}
	}
	f.Referee = fakeapi.NewReferee(t, f, refuse,
		&fakeapi.Options{NoAnswer: `{"type":"error","error":{"type":"api_error","message":"no reply left in the test"}}`}, replies...)
	return f
}

// model returns a model talking to the fake with thinking on and retries
// off.
func (f *thinkingAPI) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(&Options{APIKey: "k", BaseURL: f.URL, Model: "claude-sonnet-4-20250514", ThinkingBudget: 4000, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// block is a content block as the fake reads it.
type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      *string         `json:"data,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

func isThinking(t string) bool { return t == "thinking" || t == "redacted_thinking" }

// canonical returns the JSON of a thinking block's fields that must come
// back unchanged.
func canonical(b block) string {
	c, _ := json.Marshal(struct {
		Type      string  `json:"type"`
		Thinking  *string `json:"thinking,omitempty"`
		Signature *string `json:"signature,omitempty"`
		Data      *string `json:"data,omitempty"`
	}{b.Type, b.Thinking, b.Signature, b.Data})
	return string(c)
}

// Learn records the thinking blocks of a served reply.
func (f *thinkingAPI) Learn(e recording.Exchange) error {
	if e.Status != http.StatusOK {
		return nil
	}
	var content []block
	if e.Stream {
		var err error
		if content, err = streamedContent(e.Response); err != nil {
			return err
		}
	} else {
		var msg struct{ Content []block }
		if err := json.Unmarshal(e.Response, &msg); err != nil {
			return err
		}
		content = msg.Content
	}
	var thinking []json.RawMessage
	for _, b := range content {
		switch {
		case isThinking(b.Type):
			c := canonical(b)
			f.known[c] = true
			thinking = append(thinking, json.RawMessage(c))
		case b.Type == "tool_use" && len(thinking) > 0:
			f.served[b.ID] = thinking
		}
	}
	return nil
}

// streamedContent assembles the content blocks of a recorded stream.
func streamedContent(sse []byte) ([]block, error) {
	var blocks []block
	sc := bufio.NewScanner(bytes.NewReader(sse))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string
			Index        int
			ContentBlock block `json:"content_block"`
			Delta        struct {
				Type, Thinking, Signature string
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "content_block_start":
			for len(blocks) <= ev.Index {
				blocks = append(blocks, block{})
			}
			blocks[ev.Index] = ev.ContentBlock
		case "content_block_delta":
			if ev.Index >= len(blocks) {
				return nil, fmt.Errorf("delta for block %d before its start", ev.Index)
			}
			b := &blocks[ev.Index]
			switch ev.Delta.Type {
			case "thinking_delta":
				s := deref(b.Thinking) + ev.Delta.Thinking
				b.Thinking = &s
			case "signature_delta":
				s := deref(b.Signature) + ev.Delta.Signature
				b.Signature = &s
			}
		}
	}
	return blocks, sc.Err()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Check applies the rule to a request body.
func (f *thinkingAPI) Check(body []byte) error {
	var req struct {
		Thinking *struct{ Type string } `json:"thinking"`
		Messages []struct {
			Role    string
			Content []block
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("the request body is not JSON: %v", err)
	}
	enabled := req.Thinking != nil && req.Thinking.Type == "enabled"
	lastAssistant := -1
	for i, m := range req.Messages {
		if m.Role == "assistant" {
			lastAssistant = i
		}
	}
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		var sent []json.RawMessage // thinking blocks before the first tool_use
		firstCall := -1
		for j, b := range m.Content {
			if isThinking(b.Type) {
				c := canonical(b)
				if !f.known[c] {
					return fmt.Errorf("messages.%d.content.%d: Invalid `signature` in `%s` block", i, j, b.Type)
				}
				if firstCall < 0 {
					sent = append(sent, json.RawMessage(c))
				}
			}
			if b.Type == "tool_use" && firstCall < 0 {
				firstCall = j
			}
		}
		if firstCall < 0 {
			continue
		}
		if enabled && i == lastAssistant && !isThinking(m.Content[0].Type) {
			return fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block", i, m.Content[0].Type)
		}
		want, ok := f.served[m.Content[firstCall].ID]
		if !ok {
			continue
		}
		if !equalBlocks(want, sent) {
			return fmt.Errorf("messages.%d: the thinking blocks of this assistant turn were not passed back unchanged", i)
		}
	}
	return nil
}

func equalBlocks(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestThinkingAPIEnforcesRule checks the fake itself: after serving a
// recorded reply with a thinking block and a tool call, it accepts the
// recorded follow-up request (the thinking block sent back unchanged) and
// rejects the same request with the block left out, reordered after the
// call, or with its thinking or signature changed.
func TestThinkingAPIEnforcesRule(t *testing.T) {
	for _, name := range []string{"thinking_tool", "thinking_tool_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			good := rec[1].Request
			mutations := map[string]func(content []any) []any{
				"accepted unchanged": nil,
				"thinking left out":  func(c []any) []any { return c[1:] },
				"thinking after the call": func(c []any) []any {
					return []any{c[1], c[0]}
				},
				"signature changed": func(c []any) []any {
					b := c[0].(map[string]any)
					sig := []byte(b["signature"].(string))
					sig[len(sig)/2] ^= 1 // one bit of the middle character
					b["signature"] = string(sig)
					return c
				},
				"thinking text changed": func(c []any) []any {
					c[0].(map[string]any)["thinking"] = "Something else."
					return c
				},
			}
			for what, mutate := range mutations {
				t.Run(what, func(t *testing.T) {
					f := newThinkingAPI(t, rec...)
					recording.Post(t, f.URL+"/v1/messages", rec[0].Request, http.StatusOK)
					body := good
					if mutate != nil {
						body = mutateAssistant(t, good, mutate)
					}
					want := http.StatusOK
					if mutate != nil {
						want = http.StatusBadRequest
					}
					recording.Post(t, f.URL+"/v1/messages", body, want)
				})
			}
		})
	}
}

// TestThinkingAPIFinalTurnRule: with thinking enabled, a final assistant
// turn with a tool call that starts without a thinking block is rejected
// even when the fake did not serve it (a reply from another provider).
func TestThinkingAPIFinalTurnRule(t *testing.T) {
	body := `{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[
		{"role":"user","content":[{"type":"text","text":"hi"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_x","name":"weather","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"40 C"}]}]}`
	f := newThinkingAPI(t)
	recording.Post(t, f.URL+"/v1/messages", []byte(body), http.StatusBadRequest)
	if got := f.Rejected(); len(got) != 1 || !strings.Contains(got[0], "must start with a thinking block") {
		t.Errorf("rejected: %q", got)
	}
	off := strings.Replace(body, `"thinking":{"type":"enabled","budget_tokens":2000},`, "", 1)
	recording.Post(t, f.URL+"/v1/messages", []byte(off), http.StatusTeapot) // accepted; no reply scripted
}

// mutateAssistant applies mutate to the content of the first assistant
// message of a request body.
func mutateAssistant(t *testing.T, body []byte, mutate func([]any) []any) []byte {
	t.Helper()
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req["messages"].([]any) {
		m := m.(map[string]any)
		if m["role"] == "assistant" {
			m["content"] = mutate(m["content"].([]any))
			break
		}
	}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestThinkingAPIThroughAdapter runs the recorded first round through the
// adapter with thinking on: the request the adapter builds for the
// recorded prompt is the recorded request, field for field, and the fake
// serves it. (The second round needs the thinking blocks kept in the
// conversation; see thinkingAPI.)
func TestThinkingAPIThroughAdapter(t *testing.T) {
	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"properties":{"location":{"description":"the city","type":"string"}},"required":["location"],"type":"object"}`), &schema); err != nil {
		t.Fatal(err)
	}
	weather := toolgate.NewTool(toolgate.ToolDefinition{Name: "weather", Description: "Get weather information for a location", InputSchema: &schema},
		toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "40 C", nil })
	prompt := &toolgate.Prompt{
		Messages: []toolgate.Message{
			&toolgate.SystemMessage{Text: "You are a helpful assistant"},
			&toolgate.UserMessage{Text: "What's the weather in Florence, Italy?"},
		},
		Tools:   []*toolgate.Tool{weather},
		Options: &toolgate.ModelOptions{ParallelToolCalls: ptr(true)},
	}
	for _, name := range []string{"thinking_tool", "thinking_tool_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			f := newThinkingAPI(t, rec...)
			m := f.model(t)
			resp, err := fakeapi.Generate(t.Context(), m, prompt, rec[0].Stream)
			if err != nil {
				t.Fatal(err)
			}
			f.CheckAccepted(t)
			if calls := resp.Message().ToolCalls; len(calls) != 1 || calls[0].Name != "weather" {
				t.Errorf("got calls %+v, want the recorded weather call", calls)
			}
			fakeapi.SameRequest(t, "request", rec[0].Request, f.Body(0))
		})
	}
}

// TestThinkingAPIRedacted: a redacted_thinking block (built from the
// documented wire format; no recording was found) must come back with its
// data unchanged, like a thinking block.
func TestThinkingAPIRedacted(t *testing.T) {
	reply := recording.Exchange{Status: http.StatusOK, Response: []byte(`{"id":"msg_r","type":"message","role":"assistant","model":"m","content":[
		{"type":"redacted_thinking","data":"RXF3Ymxv"},
		{"type":"tool_use","id":"toolu_r","name":"weather","input":{"location":"Oslo"}}],
		"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":9}}`)}
	first := []byte(`{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Oslo?"}]}]}`)
	second := func(assistant string) []byte {
		return []byte(`{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[
			{"role":"user","content":[{"type":"text","text":"Weather in Oslo?"}]},
			{"role":"assistant","content":[` + assistant + `]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_r","content":"4 C"}]}]}`)
	}
	call := `{"type":"tool_use","id":"toolu_r","name":"weather","input":{"location":"Oslo"}}`
	for _, tt := range []struct {
		what, assistant string
		want            int
	}{
		{"unchanged", `{"type":"redacted_thinking","data":"RXF3Ymxv"},` + call, http.StatusTeapot}, // accepted; no reply scripted
		{"left out", call, http.StatusBadRequest},
		{"data changed", `{"type":"redacted_thinking","data":"RXF3YmxX"},` + call, http.StatusBadRequest},
	} {
		t.Run(tt.what, func(t *testing.T) {
			f := newThinkingAPI(t, reply)
			recording.Post(t, f.URL+"/v1/messages", first, http.StatusOK)
			recording.Post(t, f.URL+"/v1/messages", second(tt.assistant), tt.want)
		})
	}
}
