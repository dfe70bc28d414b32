package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/provider/openai"
)

// TestStreamedMatchesComplete: the streamed form of each recorded reply
// and a complete answer holding the same reply give identical messages.
// For the Responses API the complete answer is built from the stream's
// completed items (response.output_item.done); for Chat Completions from
// its deltas joined.
func TestStreamedMatchesComplete(t *testing.T) {
	for _, tt := range []struct {
		name string
		api  openai.API
	}{
		{"responses_reasoning_tool_stream", openai.Responses},
		{"responses_reasoning_parallel_stream", openai.Responses},
		{"chat_reasoning_parallel_stream", openai.ChatCompletions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.Load(t, tt.name)
			var complete string
			if tt.api == openai.Responses {
				var output []any
				for _, it := range recordedOutput(t, rec[0]) {
					output = append(output, it)
				}
				complete = mustJSON(map[string]any{"id": "resp_1", "status": "completed", "output": output})
			} else {
				complete = chatFromStream(t, rec[0])
			}
			s := newServer(t, recordedReply(rec[0]), jsonReply(200, complete))
			m := s.model(tt.api)
			streamed, err := toolgate.Collect(m.Stream(t.Context(), hiPrompt))
			if err != nil {
				t.Fatal(err)
			}
			whole, err := m.Generate(t.Context(), hiPrompt)
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.Message().Parts) == 0 {
				t.Fatal("the reply kept no parts")
			}
			if diff := cmp.Diff(whole.Message(), streamed.Message()); diff != "" {
				t.Errorf("streamed reply differs (-complete +streamed):\n%s", diff)
			}
		})
	}
}

// chatFromStream joins a recorded chat stream into a chat completion.
func chatFromStream(t *testing.T, e recording.Exchange) string {
	t.Helper()
	var content, reasoning strings.Builder
	type call struct {
		ID, Name string
		Args     strings.Builder
	}
	var calls []*call
	for _, data := range sseData(t, e.Response) {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			content.WriteString(c.Delta.Content)
			reasoning.WriteString(c.Delta.ReasoningContent)
			for _, tc := range c.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, &call{})
				}
				k := calls[tc.Index]
				if tc.ID != "" {
					k.ID = tc.ID
				}
				if tc.Function.Name != "" {
					k.Name = tc.Function.Name
				}
				k.Args.WriteString(tc.Function.Arguments)
			}
		}
	}
	var tcs []any
	for _, c := range calls {
		tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args.String()}})
	}
	return mustJSON(map[string]any{"id": "c", "choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
		"message": map[string]any{"role": "assistant", "content": content.String(), "reasoning_content": reasoning.String(), "tool_calls": tcs}}}})
}

// phasedReply is a Responses answer in the documented wire format (API
// reference, output message "phase": "Labels an assistant message as
// intermediate commentary (commentary) or the final answer
// (final_answer)"): a reasoning item, a commentary message and a call. No
// public recording holds a phase.
const phasedReply = `{"id":"resp_p","status":"completed","output":[` +
	`{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAAAenc","summary":[{"type":"summary_text","text":"Plan."}]},` +
	`{"id":"msg_1","type":"message","role":"assistant","status":"completed","phase":"commentary","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},` +
	`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}]}`

// TestResponsesPhaseKept: a phased message comes back with its phase, in
// place between its reasoning item and the call ("when sending follow-up
// requests, preserve and resend phase on all assistant messages", API
// reference, phase), and the fake rejects the request without it.
func TestResponsesPhaseKept(t *testing.T) {
	final := recording.Exchange{Status: 200, Response: []byte(response("completed", "Sunny."))}
	f := newResponsesAPI(t, recording.Exchange{Status: 200, Response: []byte(phasedReply)}, final, final)
	m := f.model(t)
	resp, err := m.Generate(t.Context(), hiPrompt)
	if err != nil {
		t.Fatal(err)
	}
	reply := resp.Message()
	if reply.Text != "Checking." || len(reply.Parts) != 3 {
		t.Fatalf("got %+v, want the text and three parts", reply)
	}
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Weather in Oslo?"},
		reply,
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "call_1", Name: "get_weather", Content: "sunny"}}},
	}}
	if _, err := m.Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f.CheckAccepted(t)
	want := []any{
		map[string]any{"role": "user", "content": "Weather in Oslo?"},
		map[string]any{"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAAAenc", "summary": []any{map[string]any{"type": "summary_text", "text": "Plan."}}},
		map[string]any{"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "phase": "commentary",
			"content": []any{map[string]any{"type": "output_text", "text": "Checking.", "annotations": []any{}}}},
		map[string]any{"type": "function_call", "id": "fc_1", "status": "completed", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Oslo"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
	}
	var body map[string]any
	json.Unmarshal(f.Body(1), &body)
	if diff := cmp.Diff(want, body["input"]); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}

	// The same request with the phase dropped is refused.
	input := body["input"].([]any)
	delete(input[2].(map[string]any), "phase")
	recording.Post(t, f.URL+"/v1/responses", compactJSON(t, body), http.StatusBadRequest)
}

// foreignReply is a reply read by another provider's adapter: signed
// reasoning, redacted reasoning, a text part with a signature and a call
// with one.
func foreignReply() *toolgate.AssistantMessage {
	return &toolgate.AssistantMessage{
		Text:      "Checking.",
		ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "Think.", Provider: "anthropic", Signature: "sig-a"},
			toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "redacted"},
			toolgate.ReasoningPart{Text: "Gemini thought.", Provider: "gemini", Signature: "sig-g"},
			toolgate.TextPart{Text: "Checking.", Provider: "gemini", Signature: "sig-t"},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "sig-c"},
			// a part of the other OpenAI API is foreign too
			toolgate.ReasoningPart{Text: "Chat reasoning.", Provider: openai.ProviderChat},
		},
	}
}

// TestForeignPartsDropped: parts of other providers never reach OpenAI:
// reasoning and redacted reasoning are left out, the text goes as plain
// text and the call as a plain call, on both APIs.
func TestForeignPartsDropped(t *testing.T) {
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Weather in Oslo?"},
		foreignReply(),
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "call_1", Name: "get_weather", Content: "sunny"}}},
	}}
	t.Run("responses", func(t *testing.T) {
		s := newServer(t, jsonReply(200, response("completed", "Sunny.")))
		if _, err := s.model(openai.Responses).Generate(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		want := []any{
			map[string]any{"role": "user", "content": "Weather in Oslo?"},
			map[string]any{"role": "assistant", "content": "Checking."},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Oslo"}`},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
		}
		if diff := cmp.Diff(want, s.body(0)["input"]); diff != "" {
			t.Errorf("input (-want +got):\n%s", diff)
		}
	})
	t.Run("chat", func(t *testing.T) {
		s := newServer(t, jsonReply(200, completion("Sunny.", "stop")))
		foreign := foreignReply()
		foreign.Parts[5] = toolgate.ReasoningPart{Text: "Responses reasoning.", Provider: openai.ProviderResponses, Signature: "gAAAA"}
		p := &toolgate.Prompt{Messages: []toolgate.Message{p.Messages[0], foreign, p.Messages[2]}}
		if _, err := s.model(openai.ChatCompletions).Generate(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		want := []any{
			map[string]any{"role": "user", "content": "Weather in Oslo?"},
			map[string]any{"role": "assistant", "content": "Checking.", "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Oslo"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
		}
		if diff := cmp.Diff(want, s.body(0)["messages"]); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
	})
}

// TestChatReasoningOfTurns: reasoning_content goes back on the replies of
// every user turn in which the model called tools, earlier ones included;
// the reasoning of a turn without tool calls is left out.
func TestChatReasoningOfTurns(t *testing.T) {
	reply := func(r string, calls ...toolgate.ToolCall) *toolgate.AssistantMessage {
		m := &toolgate.AssistantMessage{Text: "ok", ToolCalls: calls, Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: r, Provider: openai.ProviderChat}, toolgate.TextPart{Text: "ok"}}}
		for i := range calls {
			m.Parts = append(m.Parts, toolgate.ToolCallPart{Index: i})
		}
		return m
	}
	call := toolgate.ToolCall{ID: "c1", Name: "f", Arguments: "{}"}
	s := newServer(t, jsonReply(200, completion("Sunny.", "stop")))
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "a"}, reply("plain"),
		&toolgate.UserMessage{Text: "b"}, reply("calls", call),
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "f", Content: "done"}}},
		reply("after the calls"),
		&toolgate.UserMessage{Text: "c"}, reply("current"),
	}}
	if _, err := s.model(openai.ChatCompletions).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, m := range s.body(0)["messages"].([]any) {
		if m := m.(map[string]any); m["role"] == "assistant" {
			got = append(got, m["reasoning_content"])
		}
	}
	if want := []any{nil, "calls", "after the calls", nil}; !cmp.Equal(got, want) {
		t.Errorf("got reasoning_content %v on the replies, want %v", got, want)
	}
}

var (
	png = toolgate.FilePart{MediaType: "image/png", Data: []byte("\x89PNG fake"), Name: "chart.png"}
	pdf = toolgate.FilePart{MediaType: "application/pdf", Data: []byte("%PDF-1.7 fake")}
)

const (
	pngURL = "data:image/png;base64,iVBORyBmYWtl"
	pdfURL = "data:application/pdf;base64,JVBERi0xLjcgZmFrZQ=="
)

// TestFiles: images and files in user messages and tool results, in the
// content forms each API documents.
func TestFiles(t *testing.T) {
	remote := toolgate.FilePart{MediaType: "image/jpeg", URL: "https://example.com/cat.jpg"}
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "What is in these?", Parts: toolgate.Parts{png, remote, pdf, toolgate.TextPart{Text: "Thanks."}}},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "plot", Arguments: `{}`}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "call_1", Name: "plot", Content: "Here is the plot.", Parts: toolgate.Parts{png}}}},
	}}
	t.Run("responses", func(t *testing.T) {
		s := newServer(t, jsonReply(200, response("completed", "A chart.")))
		if _, err := s.model(openai.Responses).Generate(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		want := []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "input_text", "text": "What is in these?"},
				map[string]any{"type": "input_image", "detail": "auto", "image_url": pngURL},
				map[string]any{"type": "input_image", "detail": "auto", "image_url": "https://example.com/cat.jpg"},
				map[string]any{"type": "input_file", "filename": "file", "file_data": pdfURL},
				map[string]any{"type": "input_text", "text": "Thanks."},
			}},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "plot", "arguments": "{}"},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": []any{
				map[string]any{"type": "input_text", "text": "Here is the plot."},
				map[string]any{"type": "input_image", "image_url": pngURL},
			}},
		}
		if diff := cmp.Diff(want, s.body(0)["input"]); diff != "" {
			t.Errorf("input (-want +got):\n%s", diff)
		}
	})
	t.Run("chat", func(t *testing.T) {
		s := newServer(t, jsonReply(200, completion("A chart.", "stop")))
		if _, err := s.model(openai.ChatCompletions).Generate(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		want := []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is in these?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURL}},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.jpg"}},
				map[string]any{"type": "file", "file": map[string]any{"filename": "file", "file_data": pdfURL}},
				map[string]any{"type": "text", "text": "Thanks."},
			}},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "plot", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "Here is the plot."},
			// tool messages hold only text: the files follow in a user message
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "Files returned by the tool call call_1 (plot):"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURL}},
			}},
		}
		if diff := cmp.Diff(want, s.body(0)["messages"]); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
	})
}

// TestFileErrors: files over the limit, and files an API cannot take, fail
// with typed errors before anything is sent.
func TestFileErrors(t *testing.T) {
	big := toolgate.FilePart{MediaType: "image/png", Data: make([]byte, 600)}
	for _, tt := range []struct {
		name  string
		api   openai.API
		limit int64
		msgs  []toolgate.Message
		want  error
	}{
		{"responses user over limit", openai.Responses, 1000, []toolgate.Message{
			&toolgate.UserMessage{Parts: toolgate.Parts{big, big}}}, openai.ErrFileTooLarge},
		{"chat tool result over limit", openai.ChatCompletions, 1000, []toolgate.Message{
			&toolgate.UserMessage{Parts: toolgate.Parts{big}},
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c", Name: "f", Parts: toolgate.Parts{big}}}}}, openai.ErrFileTooLarge},
		{"responses tool result over limit", openai.Responses, 1000, []toolgate.Message{
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c", Name: "f", Parts: toolgate.Parts{big, big}}}}}, openai.ErrFileTooLarge},
		{"chat file by URL", openai.ChatCompletions, 0, []toolgate.Message{
			&toolgate.UserMessage{Parts: toolgate.Parts{toolgate.FilePart{MediaType: "application/pdf", URL: "https://example.com/a.pdf"}}}}, openai.ErrUnsupportedFile},
		{"file without data", openai.Responses, 0, []toolgate.Message{
			&toolgate.UserMessage{Parts: toolgate.Parts{toolgate.FilePart{MediaType: "image/png"}}}}, openai.ErrUnsupportedFile},
		{"reasoning in a user message", openai.Responses, 0, []toolgate.Message{
			&toolgate.UserMessage{Parts: toolgate.Parts{toolgate.ReasoningPart{Text: "x", Provider: openai.ProviderResponses}}}}, toolgate.ErrInvalidMessage},
		{"reasoning in a tool result", openai.ChatCompletions, 0, []toolgate.Message{
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c", Name: "f", Parts: toolgate.Parts{toolgate.ReasoningPart{Text: "x", Provider: openai.ProviderChat}}}}}}, toolgate.ErrInvalidMessage},
		{"file with both data and URL", openai.ChatCompletions, 0, []toolgate.Message{
			&toolgate.UserMessage{Parts: toolgate.Parts{toolgate.FilePart{MediaType: "image/png", Data: []byte("x"), URL: "https://example.com/a.png"}}}}, openai.ErrUnsupportedFile},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			m, err := openai.New(&openai.Options{Model: "m", API: tt.api, BaseURL: s.URL, MaxFileBytes: tt.limit, MaxRetries: openai.NoRetries})
			if err != nil {
				t.Fatal(err)
			}
			for _, stream := range []bool{false, true} {
				p := &toolgate.Prompt{Messages: tt.msgs}
				var err error
				_, err = fakeapi.Generate(t.Context(), m, p, stream)
				if !errors.Is(err, tt.want) {
					t.Errorf("stream %v: got %v, want %v", stream, err, tt.want)
				}
			}
			if n := len(s.received()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// TestStreamedReasoningDeltas: a stream yields the reasoning as it comes
// (Chunk.Reasoning), and the deltas add up to the reply's reasoning text.
func TestStreamedReasoningDeltas(t *testing.T) {
	for _, tt := range []struct {
		name string
		api  openai.API
	}{
		{"responses_reasoning_tool_stream", openai.Responses},
		{"chat_reasoning_parallel_stream", openai.ChatCompletions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.Load(t, tt.name)
			s := newServer(t, recordedReply(rec[0]))
			var deltas strings.Builder
			n := 0
			var parts toolgate.Parts
			for c, err := range s.model(tt.api).Stream(t.Context(), hiPrompt) {
				if err != nil {
					t.Fatal(err)
				}
				if c.Reasoning != "" {
					deltas.WriteString(c.Reasoning)
					n++
				}
				parts = append(parts, c.Parts...)
			}
			if len(parts) == 0 {
				t.Fatal("no parts in the stream")
			}
			r, ok := parts[0].(toolgate.ReasoningPart)
			if !ok || n < 2 || deltas.String() != r.Text {
				t.Errorf("got %d reasoning deltas adding up to %q, want several adding up to the reasoning part %+v", n, deltas.String(), parts[0])
			}
		})
	}
}

// TestCallsWithoutPartsStillSent: a reply built in code whose parts leave a
// call out still sends the call.
func TestCallsWithoutPartsStillSent(t *testing.T) {
	s := newServer(t, jsonReply(200, response("completed", "ok")))
	reply := &toolgate.AssistantMessage{
		ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}},
		Parts:     toolgate.Parts{toolgate.ReasoningPart{Provider: openai.ProviderResponses, Signature: "gA", Opaque: json.RawMessage(`{"id":"rs_1","summary":[]}`)}},
	}
	p := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "go"}, reply,
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "call_1", Name: "f", Content: "done"}}}}}
	if _, err := s.model(openai.Responses).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	input := s.body(0)["input"].([]any)
	if len(input) != 4 || input[2].(map[string]any)["type"] != "function_call" {
		t.Errorf("got input %v, want the user message, the reasoning, the call and its output", input)
	}
}
