package openai_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/provider/openai"
)

// reasoningAPI is a fake OpenAI-compatible Chat Completions server in
// thinking mode that answers with recorded replies, in order, and enforces
// the rule DeepSeek documents for thinking mode
// (https://api-docs.deepseek.com/guides/thinking_mode): "Between two user
// messages, if the model performed a tool call, the intermediate
// assistant's reasoning_content must participate in the context
// concatenation and must be passed back to the API in all subsequent
// requests"; without a tool call it "does not need to participate ... If
// passed to the API in subsequent turns, it will be ignored." The API
// answers 400 otherwise.
//
// The fake rejects a request when an assistant message with tool_calls has
// no reasoning_content, or (stricter, as toolgate replays reasoning byte
// for byte) one that differs from the reasoning_content it served with
// those calls.
//
// A replay through the client is a few lines: serve the recording's
// replies, give the model (see [reasoningAPI.model]) the recording's tools,
// run the turn and check f.Rejected().
type reasoningAPI struct {
	*fakeapi.Referee

	// guarded by the referee's lock (see [fakeapi.Rule])
	served map[string]string // first tool call id: the reasoning served with it
}

func newReasoningAPI(t *testing.T, replies ...recording.Exchange) *reasoningAPI {
	t.Helper()
	f := &reasoningAPI{served: map[string]string{}}
	refuse := func(reason string) fakeapi.Answer {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": reason, "type": "invalid_request_error", "param": nil, "code": "invalid_request_error"}})
		return fakeapi.Answer{Status: http.StatusBadRequest, Body: string(b)}
	}
	f.Referee = fakeapi.NewReferee(t, f, refuse, &fakeapi.Options{NoAnswer: noReplyLeft}, replies...)
	return f
}

// noReplyLeft is the answer of the rule-enforcing fakes to a request
// that finds no recorded reply left.
const noReplyLeft = `{"error":{"message":"no reply left in the test"}}`

// model returns a Chat Completions model talking to the fake.
func (f *reasoningAPI) model(t *testing.T) *openai.Model {
	t.Helper()
	m, err := openai.New(&openai.Options{Model: "glm-4.7-flash", BaseURL: f.URL + "/v1", HTTPClient: f.Client(), MaxRetries: openai.NoRetries})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Learn records the reasoning served with tool calls.
func (f *reasoningAPI) Learn(e recording.Exchange) error {
	if e.Status != http.StatusOK {
		return nil
	}
	var reasoning strings.Builder
	firstCall := ""
	add := func(text string, calls []struct{ ID string }) {
		reasoning.WriteString(text)
		for _, c := range calls {
			if firstCall == "" && c.ID != "" {
				firstCall = c.ID
			}
		}
	}
	if !e.Stream {
		var cc struct {
			Choices []struct {
				Message struct {
					ReasoningContent string                `json:"reasoning_content"`
					ToolCalls        []struct{ ID string } `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal(e.Response, &cc); err != nil {
			return err
		}
		for _, c := range cc.Choices {
			add(c.Message.ReasoningContent, c.Message.ToolCalls)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(e.Response))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if data = strings.TrimSpace(data); !ok || data == "[DONE]" {
				continue
			}
			var ch struct {
				Choices []struct {
					Delta struct {
						ReasoningContent string                `json:"reasoning_content"`
						ToolCalls        []struct{ ID string } `json:"tool_calls"`
					}
				}
			}
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				return err
			}
			for _, c := range ch.Choices {
				add(c.Delta.ReasoningContent, c.Delta.ToolCalls)
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
	}
	if firstCall != "" {
		f.served[firstCall] = reasoning.String()
	}
	return nil
}

// Check applies the rule to a request body.
func (f *reasoningAPI) Check(body []byte) error {
	var req struct {
		Messages []struct {
			Role             string
			ReasoningContent *string               `json:"reasoning_content"`
			ToolCalls        []struct{ ID string } `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("the request body is not JSON: %v", err)
	}
	for i := range req.Messages {
		m := req.Messages[i]
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		if m.ReasoningContent == nil || *m.ReasoningContent == "" {
			return fmt.Errorf("Missing `reasoning_content` field in the assistant message at message index %d", i)
		}
		if want, ok := f.served[m.ToolCalls[0].ID]; ok && want != *m.ReasoningContent {
			return fmt.Errorf("messages[%d]: reasoning_content differs from the one served with these tool calls", i)
		}
	}
	return nil
}

// TestReasoningAPIEnforcesRule checks the fake itself: after serving a
// recorded reply with reasoning_content and two parallel calls, it accepts
// the recorded follow-up request (reasoning_content sent back), and
// rejects it with reasoning_content left out, empty or changed.
func TestReasoningAPIEnforcesRule(t *testing.T) {
	for _, name := range []string{"chat_reasoning_parallel", "chat_reasoning_parallel_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			for _, tt := range []struct {
				what   string
				mutate func(m map[string]any)
				want   int
			}{
				{"accepted unchanged", nil, http.StatusOK},
				{"left out", func(m map[string]any) { delete(m, "reasoning_content") }, http.StatusBadRequest},
				{"empty", func(m map[string]any) { m["reasoning_content"] = "" }, http.StatusBadRequest},
				{"changed", func(m map[string]any) { m["reasoning_content"] = "Something else." }, http.StatusBadRequest},
			} {
				t.Run(tt.what, func(t *testing.T) {
					f := newReasoningAPI(t, rec...)
					recording.Post(t, f.URL+"/v1/chat/completions", rec[0].Request, http.StatusOK)
					body := rec[1].Request
					if tt.mutate != nil {
						body = mutateAssistantMessage(t, body, tt.mutate)
					}
					recording.Post(t, f.URL+"/v1/chat/completions", body, tt.want)
				})
			}
		})
	}
}

// TestReasoningAPIPastTurns: the reasoning of a past user turn with tool
// calls must still come back.
func TestReasoningAPIPastTurns(t *testing.T) {
	rec := recording.Load(t, "chat_reasoning_parallel")
	for _, tt := range []struct {
		what   string
		mutate func(m map[string]any)
		want   int
	}{
		{"kept", nil, http.StatusOK},
		{"left out", func(m map[string]any) { delete(m, "reasoning_content") }, http.StatusBadRequest},
	} {
		t.Run(tt.what, func(t *testing.T) {
			f := newReasoningAPI(t, rec...)
			recording.Post(t, f.URL+"/v1/chat/completions", rec[0].Request, http.StatusOK)
			body := rec[1].Request
			if tt.mutate != nil {
				body = mutateAssistantMessage(t, body, tt.mutate)
			}
			var req map[string]any
			json.Unmarshal(body, &req)
			req["messages"] = append(req["messages"].([]any), map[string]any{"role": "user", "content": "Thanks."})
			body, _ = json.Marshal(req)
			recording.Post(t, f.URL+"/v1/chat/completions", body, tt.want)
		})
	}
}

func mutateAssistantMessage(t *testing.T, body []byte, mutate func(map[string]any)) []byte {
	t.Helper()
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req["messages"].([]any) {
		if m := m.(map[string]any); m["role"] == "assistant" {
			mutate(m)
			break
		}
	}
	out, _ := json.Marshal(req)
	return out
}

// TestRecordedReasoningReplies reads the recorded reasoning replies,
// complete and streamed: text, tool calls, the parts that keep the
// reasoning (see recordedParts), finish reason and usage with reasoning
// tokens.
func TestRecordedReasoningReplies(t *testing.T) {
	parallel := func(text, add, mul string) *toolgate.AssistantMessage {
		return &toolgate.AssistantMessage{Text: text, ToolCalls: []toolgate.ToolCall{
			{ID: add, Name: "add", Arguments: `{"a":2,"b":3}`},
			{ID: mul, Name: "multiply", Arguments: `{"a":2,"b":3}`},
		}}
	}
	weather := func(id string) *toolgate.AssistantMessage {
		return &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: id, Name: "weather", Arguments: `{"location":"Florence, Italy"}`}}}
	}
	for _, tt := range []struct {
		name  string
		api   openai.API
		want  *toolgate.AssistantMessage
		usage toolgate.Usage
	}{
		{"chat_reasoning_parallel", openai.ChatCompletions,
			parallel("I'll add and multiply 2 and 3 at the same time as requested.", "call_-7807255211226955507", "call_-7807255211226955506"),
			toolgate.Usage{InputTokens: 279, OutputTokens: 131, CachedInputTokens: 43, ReasoningTokens: 82}},
		{"chat_reasoning_parallel_stream", openai.ChatCompletions,
			parallel("I'll both add and multiply the numbers 2 and 3 for you.", "call_4f8cb52342424eb9bbc1b20e", "call_0d06add371834452b339ffdb"),
			toolgate.Usage{InputTokens: 275, OutputTokens: 112, CachedInputTokens: 43, ReasoningTokens: 64}},
		{"responses_reasoning_tool", openai.Responses, weather("call_4QfIn5gPKIOWzKqBb5D2uuh4"),
			toolgate.Usage{InputTokens: 63, OutputTokens: 212, ReasoningTokens: 128}},
		{"responses_reasoning_tool_stream", openai.Responses, weather("call_zgUaIBRPTwxxOusyyKw5NVMH"),
			toolgate.Usage{InputTokens: 63, OutputTokens: 121, ReasoningTokens: 64}},
		{"responses_reasoning_parallel", openai.Responses,
			parallel("", "call_R52CnFTPli0v0yaGZbZYrvYA", "call_J4euPJS0XQZ9P3dO4Y7sCUF7"),
			toolgate.Usage{InputTokens: 113, OutputTokens: 305, ReasoningTokens: 192}},
		{"responses_reasoning_parallel_stream", openai.Responses,
			parallel("", "call_inViAUr9eV0GDtyOywkCxp59", "call_Op66UUnzuOoKmgGeFJQJFTUY"),
			toolgate.Usage{InputTokens: 109, OutputTokens: 223, ReasoningTokens: 128}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.Load(t, tt.name)
			s := newServer(t, recordedReply(rec[0]))
			m := s.model(tt.api)
			got, err := fakeapi.Generate(t.Context(), m, hiPrompt, rec[0].Stream)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Parts = recordedParts(t, tt.api, rec[0])
			if diff := cmp.Diff(tt.want, got.Message()); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if got.FinishReason() != toolgate.FinishToolCalls || got.Usage != tt.usage {
				t.Errorf("got finish %s, usage %+v; want tool_calls, %+v", got.FinishReason(), got.Usage, tt.usage)
			}
		})
	}
}

// TestReasoningAPIThroughAdapter runs the recorded first round through the
// adapter: the messages it sends for the recorded prompt are the recorded
// ones, and the fake serves them. (The second round, with the reasoning
// sent back, is in TestChatReasoningPauseResume.)
func TestReasoningAPIThroughAdapter(t *testing.T) {
	for _, name := range []string{"chat_reasoning_parallel", "chat_reasoning_parallel_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			var want map[string]any
			if err := json.Unmarshal(rec[0].Request, &want); err != nil {
				t.Fatal(err)
			}
			msgs := want["messages"].([]any)
			prompt := &toolgate.Prompt{
				Messages: []toolgate.Message{
					&toolgate.SystemMessage{Text: msgs[0].(map[string]any)["content"].(string)},
					&toolgate.UserMessage{Text: msgs[1].(map[string]any)["content"].(string)},
				},
				Tools:   []*toolgate.Tool{fakeapi.NumberTool("add", "Add two numbers", "5", false), fakeapi.NumberTool("multiply", "Multiply two numbers", "5", false)},
				Options: &toolgate.ModelOptions{ToolChoice: "auto"},
			}
			f := newReasoningAPI(t, rec...)
			m := f.model(t)
			resp, err := fakeapi.Generate(t.Context(), m, prompt, rec[0].Stream)
			if err != nil {
				t.Fatal(err)
			}
			f.CheckAccepted(t)
			if calls := resp.Message().ToolCalls; len(calls) != 2 {
				t.Errorf("got calls %+v, want the two recorded calls", calls)
			}
			fakeapi.SameRequest(t, "request", rec[0].Request, f.Body(0), "messages", "model", "tool_choice")
		})
	}
}
