package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/openai"
)

// pausedReply answers with three calls: an ungated one, a gated one, and a
// gated one without an id.
func pausedReply(api openai.API, stream bool) reply {
	switch {
	case api == openai.Responses && stream:
		return sseReply(endClean, evCreated,
			evCallAdded("0", "fc_0", "call_w", "get_weather"), evArgs("0", "fc_0", `{"city":"Oslo"}`),
			evCallAdded("1", "fc_1", "call_b", "book_hotel"), evArgs("1", "fc_1", `{"city":`), evArgs("1", "fc_1", `"Oslo"}`),
			evCallAdded("2", "fc_2", "", "book_hotel"), evArgs("2", "fc_2", `{"city":"Rome"}`),
			evCompleted)
	case api == openai.Responses:
		return jsonReply(200, response("completed", "",
			call{"call_w", "get_weather", `{"city":"Oslo"}`}, call{"call_b", "book_hotel", `{"city":"Oslo"}`}, call{"", "book_hotel", `{"city":"Rome"}`}))
	case stream:
		return sseReply(endDone,
			chatChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"book_hotel","arguments":"{\"city\":"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"Oslo\"}"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":2,"type":"function","function":{"name":"book_hotel","arguments":"{\"city\":\"Rome\"}"}}]}`, ""),
			chatChunk(`{}`, "tool_calls"), chatUsageChunk)
	}
	return jsonReply(200, completion("", "tool_calls",
		call{"call_w", "get_weather", `{"city":"Oslo"}`}, call{"call_b", "book_hotel", `{"city":"Oslo"}`}, call{"", "book_hotel", `{"city":"Rome"}`}))
}

// textReply answers with text.
func textReply(api openai.API, stream bool, text string) reply {
	switch {
	case api == openai.Responses && stream:
		return sseReply(endClean, evCreated, evText(text), evCompleted)
	case api == openai.Responses:
		return jsonReply(200, response("completed", text))
	case stream:
		return sseReply(endDone, chatChunk(`{"content":`+mustJSON(text)+`}`, "stop"), chatUsageChunk)
	}
	return jsonReply(200, completion(text, "stop"))
}

// TestClientPauseResume runs a turn through toolgate.Client: the reply's
// gated calls pause it, decisions resume it, and the request that follows
// answers every call, in order, the denied one with the denial's message.
func TestClientPauseResume(t *testing.T) {
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			name := api.String()
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				s := newServer(t, pausedReply(api, stream))
				client := toolgate.NewClient(s.model(api), []*toolgate.Tool{weatherTool(), bookTool()},
					&toolgate.ClientOptions{SystemPrompt: "Be brief."})

				turn := func(f func() (*toolgate.Response, error)) *toolgate.Response {
					t.Helper()
					resp, err := f()
					if err != nil {
						t.Fatal(err)
					}
					return resp
				}
				resp := turn(func() (*toolgate.Response, error) {
					p := &toolgate.CallParams{ConversationID: "c1", Input: "Weather in Oslo, then book Oslo and Rome"}
					if stream {
						return toolgate.Collect(client.Stream(ctx, p))
					}
					return client.Call(ctx, p)
				})
				if want := []string{"call_b", "#2"}; !cmp.Equal(resp.Awaiting, want) {
					t.Fatalf("got awaiting %v, want %v", resp.Awaiting, want)
				}
				wantCalls := []toolgate.ToolCall{
					{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
					{ID: "call_b", Name: "book_hotel", Arguments: `{"city":"Oslo"}`},
					{Name: "book_hotel", Arguments: `{"city":"Rome"}`},
				}
				if diff := cmp.Diff(wantCalls, resp.Message().ToolCalls); diff != "" {
					t.Errorf("paused calls (-want +got):\n%s", diff)
				}

				s.add(textReply(api, stream, "Booked Oslo only."))
				resp = turn(func() (*toolgate.Response, error) {
					p := &toolgate.ResumeTurnParams{ConversationID: "c1", PauseID: resp.PauseID, Decisions: []toolgate.Decision{
						toolgate.Allow("call_w"), toolgate.Allow("call_b"), toolgate.Deny("#2", "Not Rome."),
					}}
					if stream {
						return toolgate.Collect(client.ResumeStream(ctx, p))
					}
					return client.Resume(ctx, p)
				})
				if resp.Text() != "Booked Oslo only." || resp.Paused() {
					t.Errorf("got %q (paused %v), want the final answer", resp.Text(), resp.Paused())
				}

				// The request after the decisions. The call without an id
				// gets the id derived from its position (message 2: after
				// the system prompt and the user message), for the call
				// and its result alike.
				body := s.body(1)
				var want []any
				if api == openai.Responses {
					want = []any{
						map[string]any{"role": "system", "content": "Be brief."},
						map[string]any{"role": "user", "content": "Weather in Oslo, then book Oslo and Rome"},
						map[string]any{"type": "function_call", "call_id": "call_w", "name": "get_weather", "arguments": `{"city":"Oslo"}`},
						map[string]any{"type": "function_call", "call_id": "call_b", "name": "book_hotel", "arguments": `{"city":"Oslo"}`},
						map[string]any{"type": "function_call", "call_id": "call_2_2", "name": "book_hotel", "arguments": `{"city":"Rome"}`},
						map[string]any{"type": "function_call_output", "call_id": "call_w", "output": `"sunny in Oslo"`},
						map[string]any{"type": "function_call_output", "call_id": "call_b", "output": `"booked in Oslo"`},
						map[string]any{"type": "function_call_output", "call_id": "call_2_2", "output": "Not Rome."},
					}
					if diff := cmp.Diff(want, body["input"]); diff != "" {
						t.Errorf("second request's input (-want +got):\n%s", diff)
					}
					return
				}
				fn := func(id, name, args string) any {
					return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
				}
				want = []any{
					map[string]any{"role": "system", "content": "Be brief."},
					map[string]any{"role": "user", "content": "Weather in Oslo, then book Oslo and Rome"},
					map[string]any{"role": "assistant", "tool_calls": []any{
						fn("call_w", "get_weather", `{"city":"Oslo"}`),
						fn("call_b", "book_hotel", `{"city":"Oslo"}`),
						fn("call_2_2", "book_hotel", `{"city":"Rome"}`),
					}},
					map[string]any{"role": "tool", "tool_call_id": "call_w", "content": `"sunny in Oslo"`},
					map[string]any{"role": "tool", "tool_call_id": "call_b", "content": `"booked in Oslo"`},
					map[string]any{"role": "tool", "tool_call_id": "call_2_2", "content": "Not Rome."},
				}
				if diff := cmp.Diff(want, body["messages"]); diff != "" {
					t.Errorf("second request's messages (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestClientMalformedArguments: arguments that are not JSON reach toolgate
// verbatim, which answers the call with an error result; the next request
// carries the arguments unchanged and the error.
func TestClientMalformedArguments(t *testing.T) {
	const bad = `{"city": "Oslo"`
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			first := jsonReply(200, completion("", "tool_calls", call{"call_1", "get_weather", bad}))
			if api == openai.Responses {
				first = jsonReply(200, response("completed", "", call{"call_1", "get_weather", bad}))
			}
			s := newServer(t, first, textReply(api, false, "Sorry."))
			client := toolgate.NewClient(s.model(api), []*toolgate.Tool{weatherTool()}, nil)
			resp, err := client.Call(context.Background(), &toolgate.CallParams{Input: "Weather in Oslo?"})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "Sorry." {
				t.Errorf("got %q, want the second answer", resp.Text())
			}
			body := s.body(1)
			var args, result string
			if api == openai.Responses {
				items := body["input"].([]any)
				args = items[1].(map[string]any)["arguments"].(string)
				result = items[2].(map[string]any)["output"].(string)
			} else {
				msgs := body["messages"].([]any)
				args = msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"].(string)
				result = msgs[2].(map[string]any)["content"].(string)
			}
			if args != bad {
				t.Errorf("got arguments %q sent back, want them verbatim %q", args, bad)
			}
			if !strings.Contains(result, "invalid arguments") {
				t.Errorf("got result %q, want an invalid-arguments error", result)
			}
		})
	}
}
