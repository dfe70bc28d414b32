package openai_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/openai"
)

// chatChunk returns a chat.completion.chunk whose one choice has the delta
// (a JSON object) and the finish reason ("" for null).
func chatChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test-0001","choices":[{"index":0,"delta":` +
		delta + `,"logprobs":null,"finish_reason":` + f + `}],"usage":null}`
}

// chatUsageChunk is the last chunk of a stream with include_usage.
const chatUsageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test-0001","choices":[],` +
	`"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":4}}}`

func TestChatRequest(t *testing.T) {
	checkRequests(t, openai.ChatCompletions, "/v1/chat/completions",
		jsonReply(200, completion("ok", "stop")), sseReply(endDone, chatChunk(`{"role":"assistant","content":"ok"}`, "stop")),
		[]requestCase{
			{"chat_request_full", "Chat Completions request for every message kind, a typed and a schemaless tool and every model option.", fullPrompt(true), false},
			{"chat_request_stream", "Chat Completions streaming request: stream true and stream_options.include_usage.", fullPrompt(true), true},
			{"chat_request_ids", "Chat Completions request for calls with missing and duplicated ids: derived ids call_<message>_<position>, used for the call and its result.", idsPrompt(), false},
			{"chat_request_minimal", "Chat Completions request with one user message, no tools and no options: the default model, nothing else.", &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}}}, false},
		},
		func(t *testing.T, req request) {
			if got, want := req.Header.Get("Authorization"), "Bearer sk-test"; got != want {
				t.Errorf("got Authorization %q, want %q", got, want)
			}
		})
}

func TestChatRequestFields(t *testing.T) {
	// The golden files pin whole bodies; these pin the fields that matter
	// most, so that a regenerated golden file cannot hide a regression.
	s := newServer(t, jsonReply(200, completion("ok", "stop")), jsonReply(200, completion("ok", "stop")))
	m := s.model(openai.ChatCompletions)
	if _, err := m.Generate(t.Context(), fullPrompt(true)); err != nil {
		t.Fatal(err)
	}
	body := s.body(0)
	msgs := body["messages"].([]any)
	want := []any{
		map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": "Weather in Paris and Oslo?"},
		map[string]any{"role": "assistant", "content": "Checking both.", "tool_calls": []any{
			map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
			map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{ "city" : "Oslo" }`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_a", "content": `"sunny in Paris"`},
		map[string]any{"role": "tool", "tool_call_id": "call_b", "content": toolgate.DefaultDenyMessage},
		map[string]any{"role": "assistant", "content": "Paris is sunny."},
		map[string]any{"role": "user", "content": "What time is it?"},
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	tools := body["tools"].([]any)
	if got := tools[1]; !cmp.Equal(got, map[string]any{"type": "function", "function": map[string]any{"name": "clock", "parameters": map[string]any{"type": "object"}}}) {
		t.Errorf("schemaless tool: got %v", got)
	}
	weather := tools[0].(map[string]any)["function"].(map[string]any)
	if weather["description"] != "Get the weather for a city" || weather["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("typed tool: got %v", weather)
	}
	for k, v := range map[string]any{
		"model": "gpt-other", "temperature": 0.25, "max_completion_tokens": 256.0, "parallel_tool_calls": false,
		"stop":        []any{"END", "STOP"},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}},
	} {
		if !cmp.Equal(body[k], v) {
			t.Errorf("%s: got %v, want %v", k, body[k], v)
		}
	}

	// The wire ids of calls without a usable id.
	if _, err := m.Generate(t.Context(), idsPrompt()); err != nil {
		t.Fatal(err)
	}
	var callIDs, resultIDs []string
	for _, msg := range s.body(1)["messages"].([]any) {
		msg := msg.(map[string]any)
		for _, tc := range asSlice(msg["tool_calls"]) {
			callIDs = append(callIDs, tc.(map[string]any)["id"].(string))
		}
		if id, ok := msg["tool_call_id"].(string); ok {
			resultIDs = append(resultIDs, id)
		}
	}
	wantIDs := []string{"call_1_0", "call_1_1", "call_1_2", "ok"}
	if !cmp.Equal(callIDs, wantIDs) || !cmp.Equal(resultIDs, wantIDs) {
		t.Errorf("got call ids %v and result ids %v, want %v for both", callIDs, resultIDs, wantIDs)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestChatToolChoice(t *testing.T) {
	tests := []struct {
		choice string
		tools  bool
		want   any // nil: absent
	}{
		{"", true, nil},
		{"auto", true, "auto"},
		{"none", true, "none"},
		{"required", true, "required"},
		{"clock", true, map[string]any{"type": "function", "function": map[string]any{"name": "clock"}}},
		{"required", false, nil}, // the API rejects tool_choice without tools
	}
	for _, tt := range tests {
		t.Run(tt.choice, func(t *testing.T) {
			for _, api := range []openai.API{openai.ChatCompletions, openai.Responses} {
				s := newServer(t, jsonReply(200, completion("ok", "stop")))
				if api == openai.Responses {
					s = newServer(t, jsonReply(200, response("completed", "ok")))
				}
				parallel := true
				p := &toolgate.Prompt{
					Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}},
					Options:  &toolgate.ModelOptions{ToolChoice: tt.choice, ParallelToolCalls: &parallel},
				}
				if tt.tools {
					p.Tools = []*toolgate.Tool{clockTool()}
				}
				if _, err := s.model(api).Generate(t.Context(), p); err != nil {
					t.Fatal(err)
				}
				body := s.body(0)
				want := tt.want
				if m, ok := want.(map[string]any); ok && api == openai.Responses {
					want = map[string]any{"type": "function", "name": m["function"].(map[string]any)["name"]}
				}
				if got, ok := body["tool_choice"]; !cmp.Equal(got, want) || ok != (want != nil) {
					t.Errorf("%v: got tool_choice %v, want %v", api, got, want)
				}
				if _, ok := body["parallel_tool_calls"]; ok != tt.tools {
					t.Errorf("%v: parallel_tool_calls present: %v, want %v", api, ok, tt.tools)
				}
			}
		})
	}
}

func TestChatGenerate(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   *toolgate.AssistantMessage
		finish toolgate.FinishReason
	}{
		{"text", completion("Hello.", "stop"), &toolgate.AssistantMessage{Text: "Hello."}, toolgate.FinishStop},
		{"single call", completion("", "tool_calls", call{"call_1", "get_weather", `{"city":"Paris"}`}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, toolgate.FinishToolCalls},
		{"parallel calls", completion("Let me check.", "tool_calls",
			call{"call_1", "get_weather", `{"city":"Paris"}`}, call{"call_2", "book_hotel", `{"city":"Oslo"}`}),
			&toolgate.AssistantMessage{Text: "Let me check.", ToolCalls: []toolgate.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "book_hotel", Arguments: `{"city":"Oslo"}`},
			}}, toolgate.FinishToolCalls},
		{"missing and duplicated ids", completion("", "tool_calls",
			call{"", "get_weather", `{"city":"Paris"}`}, call{"x", "get_weather", `{}`}, call{"x", "clock", ``}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
				{Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "x", Name: "get_weather", Arguments: `{}`},
				{ID: "x", Name: "clock"},
			}}, toolgate.FinishToolCalls},
		{"malformed arguments verbatim", completion("", "tool_calls", call{"call_1", "get_weather", `{"city": "Par`}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city": "Par`}}}, toolgate.FinishToolCalls},
		{"stop with calls", completion("", "stop", call{"c", "clock", `{}`}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c", Name: "clock", Arguments: `{}`}}}, toolgate.FinishToolCalls},
		{"length", completion("Once upon", "length"), &toolgate.AssistantMessage{Text: "Once upon"}, toolgate.FinishLength},
		{"content filter", completion("", "content_filter"), &toolgate.AssistantMessage{}, toolgate.FinishContentFilter},
		{"other reason", completion("x", "eos"), &toolgate.AssistantMessage{Text: "x"}, "eos"},
		{"refusal", `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`,
			&toolgate.AssistantMessage{Text: "I can't help with that."}, toolgate.FinishRefusal},
		{"arguments as an object", `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"clock","arguments":{"tz":"UTC"}}}]}}]}`,
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "a", Name: "clock", Arguments: `{"tz":"UTC"}`}}}, toolgate.FinishToolCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, tt.answer))
			resp, err := s.model(openai.ChatCompletions).Generate(t.Context(), fullPrompt(true))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Message()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if got := resp.FinishReason(); got != tt.finish {
				t.Errorf("got finish %q, want %q", got, tt.finish)
			}
		})
	}
}

func TestChatGenerateResponseFields(t *testing.T) {
	s := newServer(t, jsonReply(200, completion("Hi.", "stop")))
	resp, err := s.model(openai.ChatCompletions).Generate(t.Context(), fullPrompt(true))
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.Response{
		ID:          "chatcmpl-1",
		Model:       "gpt-test-0001",
		Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Hi."}, FinishReason: toolgate.FinishStop}},
		Usage:       wantUsage,
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestChatStream(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   []*toolgate.Chunk
	}{
		{"text", []string{
			chatChunk(`{"role":"assistant","content":""}`, ""),
			chatChunk(`{"content":"Hel"}`, ""),
			chatChunk(`{"content":"lo."}`, ""),
			chatChunk(`{}`, "stop"),
			chatUsageChunk,
		}, []*toolgate.Chunk{
			{Text: "Hel"}, {Text: "lo."},
			{FinishReason: toolgate.FinishStop, Usage: &wantUsage, ID: "chatcmpl-1", Model: "gpt-test-0001"},
		}},
		{"arguments split across chunks", []string{
			chatChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Pa"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ris\"}"}}]}`, ""),
			chatChunk(`{}`, "tool_calls"),
			chatUsageChunk,
		}, []*toolgate.Chunk{
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "call_1", Name: "get_weather"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `{"ci`}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `ty":"Pa`}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `ris"}`}}},
			{FinishReason: toolgate.FinishToolCalls, Usage: &wantUsage, ID: "chatcmpl-1", Model: "gpt-test-0001"},
		}},
		{"parallel calls, missing and duplicated ids", []string{
			chatChunk(`{"content":"On it. ","tool_calls":[{"index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":1,"id":"d","type":"function","function":{"name":"get_weather","arguments":"{}"}},{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":2,"id":"d","type":"function","function":{"name":"clock"}}]}`, ""),
			chatChunk(`{}`, "tool_calls"),
		}, []*toolgate.Chunk{
			{Text: "On it. ", ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Name: "get_weather", Arguments: `{"city":`}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, ID: "d", Name: "get_weather", Arguments: "{}"}, {Index: 0, Arguments: `"Oslo"}`}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 2, ID: "d", Name: "clock"}}},
			{FinishReason: toolgate.FinishToolCalls, ID: "chatcmpl-1", Model: "gpt-test-0001"},
		}},
		{"fragments without index", []string{
			chatChunk(`{"tool_calls":[{"id":"a","function":{"name":"clock","arguments":"{"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"function":{"arguments":"}"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"id":"b","function":{"name":"clock","arguments":"{}"}}]}`, ""),
			chatChunk(`{}`, "tool_calls"),
		}, []*toolgate.Chunk{
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "a", Name: "clock", Arguments: "{"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: "}"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, ID: "b", Name: "clock", Arguments: "{}"}}},
			{FinishReason: toolgate.FinishToolCalls, ID: "chatcmpl-1", Model: "gpt-test-0001"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, sseReply(endDone, tt.events...))
			got, err := collect(s.model(openai.ChatCompletions).Stream(t.Context(), fullPrompt(true)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatStreamCollect(t *testing.T) {
	s := newServer(t, sseReply(endDone,
		chatChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}]}`, ""),
		chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":":\"Paris\"}"}}]}`, ""),
		chatChunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"clock","arguments":""}}]}`, ""),
		chatChunk(`{}`, "tool_calls"),
		chatUsageChunk,
	))
	resp, err := toolgate.Collect(s.model(openai.ChatCompletions).Stream(t.Context(), fullPrompt(true)))
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.Response{
		ID: "chatcmpl-1", Model: "gpt-test-0001", Usage: wantUsage,
		Generations: []toolgate.Generation{{FinishReason: toolgate.FinishToolCalls, Message: &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_2", Name: "clock"},
		}}}},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestChatStreamCut(t *testing.T) {
	events := []string{
		chatChunk(`{"content":"The weather in"}`, ""),
		chatChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}`, ""),
	}
	for _, end := range []streamEnd{endClean, endAbort} {
		s := newServer(t, sseReply(end, events...))
		chunks, err := collect(s.model(openai.ChatCompletions).Stream(t.Context(), fullPrompt(true)))
		var me *provider.Error
		if !errors.As(err, &me) || me.Kind != provider.KindOther {
			t.Errorf("end %d: got error %v, want a provider.Error of kind other", end, err)
		}
		for _, c := range chunks {
			if c.FinishReason != "" {
				t.Errorf("end %d: a cut stream yielded a last chunk %+v", end, c)
			}
		}
	}
}

func TestChatStreamErrorEvent(t *testing.T) {
	s := newServer(t, sseReply(endDone,
		chatChunk(`{"content":"Hi"}`, ""),
		`{"error":{"message":"The server is overloaded.","type":"server_error","code":"server_error"}}`,
	))
	_, err := collect(s.model(openai.ChatCompletions).Stream(t.Context(), fullPrompt(true)))
	var me *provider.Error
	if !errors.As(err, &me) || me.Kind != provider.KindServer || me.Message != "The server is overloaded." {
		t.Errorf("got %v, want a server provider.Error with the provider's message", err)
	}
}

func TestChatMalformed(t *testing.T) {
	tests := []struct{ name, body string }{
		{"not JSON", `{"id": "x", "choices": [`},
		{"no choices", `{"id":"x","object":"chat.completion","choices":[]}`},
		{"choices of the wrong type", `{"id":"x","choices":"many"}`},
		{"null", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, tt.body))
			resp, err := s.model(openai.ChatCompletions).Generate(t.Context(), fullPrompt(true))
			var me *provider.Error
			if !errors.As(err, &me) || me.Kind != provider.KindOther {
				t.Errorf("got %v, %v; want a provider.Error of kind other", resp, err)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		s := newServer(t, sseReply(endDone, chatChunk(`{"content":"a"}`, ""), `{"choices": [{"delta": `))
		_, err := collect(s.model(openai.ChatCompletions).Stream(t.Context(), fullPrompt(true)))
		if err == nil {
			t.Error("got no error for a chunk that is not JSON")
		}
	})
	t.Run("index out of range", func(t *testing.T) {
		s := newServer(t, sseReply(endDone, chatChunk(`{"tool_calls":[{"index":-1,"id":"a","function":{"name":"clock"}}]}`, "")))
		_, err := collect(s.model(openai.ChatCompletions).Stream(t.Context(), fullPrompt(true)))
		if err == nil {
			t.Error("got no error for a negative tool call index")
		}
	})
}

func TestChatCanceled(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := s.model(openai.ChatCompletions)
	if _, err := m.Generate(ctx, fullPrompt(true)); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate: got %v, want context.Canceled", err)
	}
	if _, err := collect(m.Stream(ctx, fullPrompt(true))); !errors.Is(err, context.Canceled) {
		t.Errorf("Stream: got %v, want context.Canceled", err)
	}
}
