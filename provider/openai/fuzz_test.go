package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate"
)

// sseStream returns an SDK stream decoding body as server-sent events.
func sseStream[T any](body []byte) *ssestream.Stream[T] {
	res := &http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(body)),
	}
	return ssestream.NewStream[T](ssestream.NewDecoder(res), nil)
}

// checkYields returns a yield function that checks the stream contract:
// exactly one of chunk and error per step, nothing after an error or after
// the chunk with the finish reason, and a stream that ends with one of
// them.
func checkYields(t *testing.T) (yield func(*toolgate.Chunk, error) bool, done func()) {
	ended := false
	yield = func(c *toolgate.Chunk, err error) bool {
		if ended {
			t.Fatalf("yield after the end: %+v, %v", c, err)
		}
		if (c == nil) == (err == nil) {
			t.Fatalf("yield(%+v, %v): want exactly one of chunk and error", c, err)
		}
		if err != nil || c.FinishReason != "" {
			ended = true
		}
		return true
	}
	return yield, func() {
		if !ended {
			t.Fatal("the stream ended without a last chunk or an error")
		}
	}
}

var chatStreamSeeds = []string{
	"data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":9999999999,\"function\":{\"arguments\":{}}}]}}]}\n\n",
	"data: {\"error\":{\"message\":\"boom\",\"code\":\"server_error\"}}\n\n",
	"data: {\"choices\": [\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Think.\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":7,\"content\":\"ok\",\"tool_calls\":[{\"index\":3,\"id\":\"a\",\"function\":{\"name\":\"f\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	": comment\nevent: x\ndata: [DONE]\n\n",
	"",
}

func FuzzChatStream(f *testing.F) {
	for _, s := range chatStreamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		yield, done := checkYields(t)
		readChat(context.Background(), sseStream[sdk.ChatCompletionChunk](body), yield)
		done()
		checkCollected(t, func(yield func(*toolgate.Chunk, error) bool) {
			readChat(context.Background(), sseStream[sdk.ChatCompletionChunk](body), yield)
		})
	})
}

var responsesStreamSeeds = []string{
	"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"m\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1}}}\n\n",
	"data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"\"}}\n\n" +
		"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"item_id\":\"fc\",\"delta\":\"{}\"}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\"arguments\":\"{}\"}}\n\n" +
		"data: {\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n",
	"data: {\"type\":\"response.function_call_arguments.done\",\"output_index\":0,\"arguments\":\"{}\"}\n\n",
	"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}}\n\n",
	"data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow\"}\n\n",
	"data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\",\"arguments\":{\"a\":1}}}\n\n",
	"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs\",\"summary\":[]}}\n\n" +
		"data: {\"type\":\"response.reasoning_summary_part.added\",\"output_index\":0,\"summary_index\":1}\n\n" +
		"data: {\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"delta\":\"Plan.\"}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs\",\"encrypted_content\":\"gA\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Plan.\"}]}}\n\n" +
		"data: {\"type\":\"response.output_text.delta\",\"output_index\":1,\"delta\":\"Hi\"}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"message\",\"id\":\"m\",\"phase\":\"commentary\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n",
}

func FuzzResponsesStream(f *testing.F) {
	for _, s := range responsesStreamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		yield, done := checkYields(t)
		readResponses(context.Background(), sseStream[responses.ResponseStreamEventUnion](body), yield)
		done()
		checkCollected(t, func(yield func(*toolgate.Chunk, error) bool) {
			readResponses(context.Background(), sseStream[responses.ResponseStreamEventUnion](body), yield)
		})
	})
}

func FuzzChatResponse(f *testing.F) {
	f.Add([]byte(`{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":{"prompt_tokens":3}}`))
	f.Add([]byte(`{"choices":[{"index":1},{"index":0,"message":{"refusal":"no","tool_calls":[{"function":{"arguments":[1]}}]}}]}`))
	f.Add([]byte(`{"choices":"x"}`))
	f.Add([]byte(`{"choices":[{"index":0,"message":{"content":"x","reasoning_content":"Think.","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var cc sdk.ChatCompletion
		if json.Unmarshal(body, &cc) != nil {
			return
		}
		resp, err := chatResponse(&cc)
		if (resp == nil) == (err == nil) {
			t.Fatalf("got %v, %v: want exactly one of response and error", resp, err)
		}
		if resp != nil && (len(resp.Generations) == 0 || resp.Message() == nil) {
			t.Fatalf("response without a message: %+v", resp)
		}
		if resp != nil {
			for _, g := range resp.Generations {
				checkRoundTrip(t, g.Message)
			}
		}
	})
}

func FuzzResponsesResponse(f *testing.F) {
	f.Add([]byte(`{"id":"r","model":"m","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"},{"type":"refusal","refusal":"no"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"usage":{"input_tokens":1}}`))
	f.Add([]byte(`{"status":"failed","output":[],"error":{"code":"server_error","message":"x"}}`))
	f.Add([]byte(`{"status":"completed","output":[{"type":"reasoning","id":"rs","encrypted_content":"gA","summary":[{"type":"summary_text","text":"a"},{"type":"summary_text","text":"b"}],"content":null},{"type":"message","id":"m","phase":"final_answer","content":[{"type":"output_text","text":"hi"}]},{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{}"}]}`))
	f.Add([]byte(`{"status":"incomplete","output":[{"type":"function_call","arguments":{"a":1}}],"incomplete_details":{"reason":"other"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var r responses.Response
		if json.Unmarshal(body, &r) != nil {
			return
		}
		resp, err := responsesResponse(&r)
		if (resp == nil) == (err == nil) {
			t.Fatalf("got %v, %v: want exactly one of response and error", resp, err)
		}
		if resp != nil {
			checkRoundTrip(t, resp.Message())
		}
	})
}

// checkRoundTrip fails t unless a reply is a valid message: its parts
// agree with its text and calls, and its JSON form decodes to it.
func checkRoundTrip(t *testing.T, m *toolgate.AssistantMessage) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %+v: %v", m, err)
	}
	back, err := toolgate.UnmarshalMessage(b)
	if err != nil {
		t.Fatalf("the reply does not decode: %v\n%s", err, b)
	}
	b2, _ := json.Marshal(back)
	if !bytes.Equal(b, b2) {
		t.Fatalf("the reply changes through JSON:\n%s\n%s", b, b2)
	}
}

// checkCollected fails t when a stream that ends with its last chunk
// collects into a reply whose parts disagree with its text and calls.
func checkCollected(t *testing.T, stream func(yield func(*toolgate.Chunk, error) bool)) {
	t.Helper()
	resp, err := toolgate.Collect(stream)
	if err != nil {
		return
	}
	checkRoundTrip(t, resp.Message())
}
