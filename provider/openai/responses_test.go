package openai_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/openai"
)

// Responses API stream events.
var (
	evCreated   = responsesEvent("response.created", `"sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-test-0001","output":[]}`)
	evCompleted = responsesEvent("response.completed", `"sequence_number":99,"response":`+mustJSON(responseObject("completed", []any{})))
)

func evCallAdded(output, item, callID, name string) string {
	id := ""
	if callID != "" {
		id = `"call_id":"` + callID + `",`
	}
	return responsesEvent("response.output_item.added", `"output_index":`+output+`,"item":{"type":"function_call","id":"`+item+`",`+id+`"name":"`+name+`","arguments":"","status":"in_progress"}`)
}

func evArgs(output, item, delta string) string {
	return responsesEvent("response.function_call_arguments.delta", `"output_index":`+output+`,"item_id":"`+item+`","delta":`+mustJSON(delta))
}

func evText(delta string) string {
	return responsesEvent("response.output_text.delta", `"output_index":0,"item_id":"msg_1","content_index":0,"delta":`+mustJSON(delta))
}

func TestResponsesRequest(t *testing.T) {
	checkRequests(t, openai.Responses, "/v1/responses",
		jsonReply(200, response("completed", "ok")), sseReply(endClean, evCreated, evText("ok"), evCompleted),
		[]requestCase{
			{"responses_request_full", "Responses API request for every message kind (messages, function_call and function_call_output items), a typed and a schemaless tool (strict false) and every option but stop.", fullPrompt(false), false},
			{"responses_request_stream", "Responses API streaming request: stream true.", fullPrompt(false), true},
			{"responses_request_ids", "Responses API request for calls with missing and duplicated ids: derived call ids call_<message>_<position>, used for the call and its output.", idsPrompt(), false},
			{"responses_request_minimal", "Responses API request with one user message, no tools and no options: store false, with the reasoning returned encrypted.", &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}}}, false},
		}, nil)
}

func TestResponsesRequestFields(t *testing.T) {
	s := newServer(t, jsonReply(200, response("completed", "ok")), jsonReply(200, response("completed", "ok")))
	m := s.model(openai.Responses)
	if _, err := m.Generate(t.Context(), fullPrompt(false)); err != nil {
		t.Fatal(err)
	}
	body := s.body(0)
	want := []any{
		map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": "Weather in Paris and Oslo?"},
		map[string]any{"role": "assistant", "content": "Checking both."},
		map[string]any{"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": `{"city":"Paris"}`},
		map[string]any{"type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": `{ "city" : "Oslo" }`},
		map[string]any{"type": "function_call_output", "call_id": "call_a", "output": `"sunny in Paris"`},
		map[string]any{"type": "function_call_output", "call_id": "call_b", "output": toolgate.DefaultDenyMessage},
		map[string]any{"role": "assistant", "content": "Paris is sunny."},
		map[string]any{"role": "user", "content": "What time is it?"},
	}
	if diff := cmp.Diff(want, body["input"]); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	tools := body["tools"].([]any)
	if got := tools[1]; !cmp.Equal(got, map[string]any{"type": "function", "name": "clock", "strict": false, "parameters": map[string]any{"type": "object"}}) {
		t.Errorf("schemaless tool: got %v", got)
	}
	for k, v := range map[string]any{
		"model": "gpt-other", "temperature": 0.25, "max_output_tokens": 256.0, "parallel_tool_calls": false,
		"tool_choice": map[string]any{"type": "function", "name": "get_weather"},
	} {
		if !cmp.Equal(body[k], v) {
			t.Errorf("%s: got %v, want %v", k, body[k], v)
		}
	}

	if _, err := m.Generate(t.Context(), idsPrompt()); err != nil {
		t.Fatal(err)
	}
	var callIDs, outputIDs []string
	for _, item := range s.body(1)["input"].([]any) {
		item := item.(map[string]any)
		switch item["type"] {
		case "function_call":
			callIDs = append(callIDs, item["call_id"].(string))
		case "function_call_output":
			outputIDs = append(outputIDs, item["call_id"].(string))
		}
	}
	wantIDs := []string{"call_1_0", "call_1_1", "call_1_2", "ok"}
	if !cmp.Equal(callIDs, wantIDs) || !cmp.Equal(outputIDs, wantIDs) {
		t.Errorf("got call ids %v and output ids %v, want %v for both", callIDs, outputIDs, wantIDs)
	}
}

func TestResponsesStopRejected(t *testing.T) {
	s := newServer(t)
	m := s.model(openai.Responses)
	if _, err := m.Generate(t.Context(), fullPrompt(true)); err == nil {
		t.Error("Generate: got no error for stop sequences")
	}
	if _, err := collect(m.Stream(t.Context(), fullPrompt(true))); err == nil {
		t.Error("Stream: got no error for stop sequences")
	}
	if n := len(s.received()); n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
}

func TestResponsesGenerate(t *testing.T) {
	incomplete := func(reason string) string {
		r := responseObject("incomplete", []any{map[string]any{"type": "message", "id": "m", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Once"}}}})
		r["incomplete_details"] = map[string]any{"reason": reason}
		return mustJSON(r)
	}
	tests := []struct {
		name   string
		answer string
		want   *toolgate.AssistantMessage
		finish toolgate.FinishReason
	}{
		{"text", response("completed", "Hello."), &toolgate.AssistantMessage{Text: "Hello."}, toolgate.FinishStop},
		{"single call", response("completed", "", call{"call_1", "get_weather", `{"city":"Paris"}`}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, toolgate.FinishToolCalls},
		{"parallel calls", response("completed", "Checking.", call{"call_1", "get_weather", `{"city":"Paris"}`}, call{"call_2", "clock", `{}`}),
			&toolgate.AssistantMessage{Text: "Checking.", ToolCalls: []toolgate.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "clock", Arguments: `{}`},
			}}, toolgate.FinishToolCalls},
		{"missing and duplicated ids", response("completed", "", call{"", "clock", `{}`}, call{"d", "clock", `{}`}, call{"d", "clock", `{}`}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{Name: "clock", Arguments: `{}`}, {ID: "d", Name: "clock", Arguments: `{}`}, {ID: "d", Name: "clock", Arguments: `{}`}}}, toolgate.FinishToolCalls},
		{"malformed arguments verbatim", response("completed", "", call{"call_1", "get_weather", `{"city":`}),
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":`}}}, toolgate.FinishToolCalls},
		{"max output tokens", incomplete("max_output_tokens"), &toolgate.AssistantMessage{Text: "Once"}, toolgate.FinishLength},
		{"content filter", incomplete("content_filter"), &toolgate.AssistantMessage{Text: "Once"}, toolgate.FinishContentFilter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, tt.answer))
			resp, err := s.model(openai.Responses).Generate(t.Context(), fullPrompt(false))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Message()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if got := resp.FinishReason(); got != tt.finish {
				t.Errorf("got finish %q, want %q", got, tt.finish)
			}
			if resp.ID != "resp_1" || resp.Model != "gpt-test-0001" || resp.Usage != wantUsage {
				t.Errorf("got id %q, model %q, usage %+v", resp.ID, resp.Model, resp.Usage)
			}
		})
	}
}

func TestResponsesFailed(t *testing.T) {
	r := responseObject("failed", []any{})
	r["error"] = map[string]any{"code": "server_error", "message": "Something went wrong."}
	s := newServer(t, jsonReply(200, mustJSON(r)),
		sseReply(endClean, evCreated, responsesEvent("response.failed", `"response":`+mustJSON(r))),
		sseReply(endClean, evCreated, responsesEvent("error", `"code":"rate_limit_exceeded","message":"Slow down.","param":null`)),
	)
	m := s.model(openai.Responses)
	_, err := m.Generate(t.Context(), fullPrompt(false))
	if me := new(provider.Error); !errors.As(err, &me) || me.Kind != provider.KindServer || me.Message != "Something went wrong." {
		t.Errorf("Generate: got %v, want a server provider.Error", err)
	}
	_, err = collect(m.Stream(t.Context(), fullPrompt(false)))
	if me := new(provider.Error); !errors.As(err, &me) || me.Kind != provider.KindServer || me.Message != "Something went wrong." {
		t.Errorf("Stream with response.failed: got %v, want a server provider.Error", err)
	}
	_, err = collect(m.Stream(t.Context(), fullPrompt(false)))
	if !errors.Is(err, provider.ErrRateLimited) {
		t.Errorf("Stream with an error event: got %v, want ErrRateLimited", err)
	}
}

func TestResponsesStream(t *testing.T) {
	last := &toolgate.Chunk{FinishReason: toolgate.FinishToolCalls, Usage: &wantUsage, ID: "resp_1", Model: "gpt-test-0001"}
	tests := []struct {
		name   string
		events []string
		want   []*toolgate.Chunk
	}{
		{"text", []string{evCreated, evText("Hel"), evText("lo."), evCompleted}, []*toolgate.Chunk{
			{Text: "Hel"}, {Text: "lo."},
			{FinishReason: toolgate.FinishStop, Usage: &wantUsage, ID: "resp_1", Model: "gpt-test-0001"},
		}},
		{"arguments split across events", []string{
			evCreated,
			evCallAdded("0", "fc_1", "call_1", "get_weather"),
			evArgs("0", "fc_1", `{"ci`), evArgs("0", "fc_1", `ty":"Paris"}`),
			responsesEvent("response.function_call_arguments.done", `"output_index":0,"item_id":"fc_1","arguments":"{\"city\":\"Paris\"}"`),
			responsesEvent("response.output_item.done", `"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`),
			evCompleted,
		}, []*toolgate.Chunk{
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "call_1", Name: "get_weather"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `{"ci`}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `ty":"Paris"}`}}},
			last,
		}},
		{"text and parallel calls", []string{
			evCreated,
			evText("On it."),
			evCallAdded("1", "fc_1", "call_1", "get_weather"),
			evCallAdded("2", "fc_2", "call_2", "clock"),
			evArgs("2", "fc_2", `{}`),
			evArgs("1", "fc_1", `{"city":"Oslo"}`),
			evCompleted,
		}, []*toolgate.Chunk{
			{Text: "On it."},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "call_1", Name: "get_weather"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, ID: "call_2", Name: "clock"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, Arguments: `{}`}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `{"city":"Oslo"}`}}},
			last,
		}},
		{"call id and arguments only when done", []string{
			evCreated,
			evCallAdded("0", "fc_1", "", "clock"),
			responsesEvent("response.output_item.done", `"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"clock","arguments":"{\"tz\":\"UTC\"}"}`),
			evCompleted,
		}, []*toolgate.Chunk{
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Name: "clock"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "call_9", Arguments: `{"tz":"UTC"}`}}},
			last,
		}},
		{"missing call ids", []string{
			evCreated,
			evCallAdded("0", "fc_1", "", "clock"),
			evArgs("0", "fc_1", `{}`),
			evCompleted,
		}, []*toolgate.Chunk{
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Name: "clock"}}},
			{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `{}`}}},
			last,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, sseReply(endClean, tt.events...))
			got, err := collect(s.model(openai.Responses).Stream(t.Context(), fullPrompt(false)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesStreamBad(t *testing.T) {
	tests := []struct {
		name   string
		end    streamEnd
		events []string
	}{
		{"cut before completed", endClean, []string{evCreated, evText("The weather"), evCallAdded("1", "fc_1", "call_1", "clock")}},
		{"connection broken", endAbort, []string{evCreated, evText("The weather")}},
		{"arguments for an unknown item", endClean, []string{evCreated, evArgs("3", "fc_x", "{}"), evCompleted}},
		{"item added twice", endClean, []string{evCreated, evCallAdded("0", "fc_1", "a", "clock"), evCallAdded("0", "fc_1", "a", "clock"), evCompleted}},
		{"not JSON", endClean, []string{evCreated, "event: response.output_text.delta\ndata: {\"delta\": ", evCompleted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, sseReply(tt.end, tt.events...))
			chunks, err := collect(s.model(openai.Responses).Stream(t.Context(), fullPrompt(false)))
			if err == nil {
				t.Fatalf("got no error; chunks %v", chunks)
			}
			for _, c := range chunks {
				if c.FinishReason != "" {
					t.Errorf("a bad stream yielded a last chunk %+v", c)
				}
			}
		})
	}
}

func TestResponsesMalformed(t *testing.T) {
	for _, body := range []string{`{"id": "resp_1", "output": [`, `{"id":"resp_1","status":"completed"}`, `[]`} {
		s := newServer(t, jsonReply(200, body))
		resp, err := s.model(openai.Responses).Generate(t.Context(), fullPrompt(false))
		var me *provider.Error
		if !errors.As(err, &me) {
			t.Errorf("%s: got %v, %v; want a provider.Error", body, resp, err)
		}
	}
}
