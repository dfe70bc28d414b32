package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// Benchmarks of one round against a local server: the adapter (request
// building, the SDK, response mapping) next to the SDK alone with the same
// request prebuilt, so that the difference is what the adapter adds.

type benchCity struct {
	City string `json:"city" jsonschema:"the city"`
}

func benchPrompt() *toolgate.Prompt {
	weather := toolgate.NewToolFor("get_weather", "Get the weather for a city",
		func(context.Context, *toolgate.ToolRequest, benchCity) (string, error) { return "sunny", nil }, nil)
	book := toolgate.NewToolFor("book_hotel", "Book a hotel",
		func(context.Context, *toolgate.ToolRequest, benchCity) (string, error) { return "booked", nil }, nil)
	return &toolgate.Prompt{
		Messages: []toolgate.Message{
			&toolgate.SystemMessage{Text: "You are a travel assistant. Be brief."},
			&toolgate.UserMessage{Text: "How is the weather in Paris and Oslo? Book a hotel in the sunnier one."},
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
			}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{
				{CallID: "call_1", Name: "get_weather", Content: `"sunny, 24°C"`},
				{CallID: "call_2", Name: "get_weather", Content: `"rain, 12°C"`},
			}},
		},
		Tools: []*toolgate.Tool{weather, book},
	}
}

const (
	benchChatBody = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-test","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Paris is sunnier; booking there.","tool_calls":[{"id":"call_3","type":"function","function":{"name":"book_hotel","arguments":"{\"city\":\"Paris\"}"}}]}}],"usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":0}}}`
	benchRespBody = `{"id":"resp_1","object":"response","created_at":1700000000,"model":"gpt-test","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Paris is sunnier; booking there.","annotations":[]}]},{"type":"function_call","id":"fc_1","call_id":"call_3","name":"book_hotel","arguments":"{\"city\":\"Paris\"}","status":"completed"}],"usage":{"input_tokens":120,"output_tokens":20,"total_tokens":140,"input_tokens_details":{"cached_tokens":64},"output_tokens_details":{"reasoning_tokens":0}}}`
)

func benchChatStream() string {
	var b strings.Builder
	chunk := func(delta, finish string) {
		b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n")
	}
	chunk(`{"role":"assistant","content":""}`, "null")
	for _, w := range []string{"Paris ", "is ", "sunnier; ", "booking ", "there."} {
		chunk(`{"content":"`+w+`"}`, "null")
	}
	chunk(`{"tool_calls":[{"index":0,"id":"call_3","type":"function","function":{"name":"book_hotel","arguments":""}}]}`, "null")
	for _, a := range []string{`{\"ci`, `ty\":`, `\"Paris\"}`} {
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+a+`"}}]}`, "null")
	}
	chunk(`{}`, `"tool_calls"`)
	b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140}}` + "\n\ndata: [DONE]\n\n")
	return b.String()
}

func benchRespStream() string {
	var b strings.Builder
	ev := func(typ, fields string) {
		b.WriteString("event: " + typ + "\ndata: {\"type\":\"" + typ + "\"," + fields + "}\n\n")
	}
	ev("response.created", `"response":{"id":"resp_1","model":"gpt-test","status":"in_progress","output":[]}`)
	for _, w := range []string{"Paris ", "is ", "sunnier; ", "booking ", "there."} {
		ev("response.output_text.delta", `"output_index":0,"item_id":"msg_1","content_index":0,"delta":"`+w+`"`)
	}
	ev("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_3","name":"book_hotel","arguments":""}`)
	for _, a := range []string{`{\"ci`, `ty\":`, `\"Paris\"}`} {
		ev("response.function_call_arguments.delta", `"output_index":1,"item_id":"fc_1","delta":"`+a+`"`)
	}
	ev("response.completed", `"response":{"id":"resp_1","model":"gpt-test","status":"completed","output":[],"usage":{"input_tokens":120,"output_tokens":20,"total_tokens":140}}`)
	return b.String()
}

func benchServer(b *testing.B, contentType, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchModel(b *testing.B, srv *httptest.Server, api API) *Model {
	m, err := New(&Options{Model: "gpt-test", APIKey: "sk-test", BaseURL: srv.URL, HTTPClient: srv.Client(), MaxRetries: NoRetries, API: api})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkGenerate(b *testing.B) {
	for _, tc := range []struct {
		name string
		api  API
		body string
	}{{"chat", ChatCompletions, benchChatBody}, {"responses", Responses, benchRespBody}} {
		b.Run(tc.name, func(b *testing.B) {
			m := benchModel(b, benchServer(b, "application/json", tc.body), tc.api)
			p, ctx := benchPrompt(), b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Generate(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/sdk-only", func(b *testing.B) {
			m := benchModel(b, benchServer(b, "application/json", tc.body), tc.api)
			ctx := b.Context()
			b.ReportAllocs()
			if tc.api == Responses {
				params, err := m.responsesParams(benchPrompt())
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := m.resp.New(ctx, params); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			params, err := m.chatParams(benchPrompt())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := m.chat.New(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStream(b *testing.B) {
	for _, tc := range []struct {
		name string
		api  API
		body string
	}{{"chat", ChatCompletions, benchChatStream()}, {"responses", Responses, benchRespStream()}} {
		b.Run(tc.name, func(b *testing.B) {
			m := benchModel(b, benchServer(b, "text/event-stream", tc.body), tc.api)
			p, ctx := benchPrompt(), b.Context()
			b.ReportAllocs()
			for b.Loop() {
				for _, err := range m.Stream(ctx, p) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(tc.name+"/sdk-only", func(b *testing.B) {
			m := benchModel(b, benchServer(b, "text/event-stream", tc.body), tc.api)
			ctx := b.Context()
			b.ReportAllocs()
			if tc.api == Responses {
				params, err := m.responsesParams(benchPrompt())
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					s := m.resp.NewStreaming(ctx, params)
					for s.Next() {
					}
					if err := s.Err(); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			params, err := m.chatParams(benchPrompt())
			if err != nil {
				b.Fatal(err)
			}
			params.StreamOptions.IncludeUsage = sdk.Bool(true)
			for b.Loop() {
				s := m.chat.NewStreaming(ctx, params)
				for s.Next() {
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildRequest measures request building alone, without I/O.
func BenchmarkBuildRequest(b *testing.B) {
	m := &Model{model: "gpt-test"}
	p := benchPrompt()
	b.Run("chat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.chatParams(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("responses", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.responsesParams(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReasoning measures a recorded reasoning reply (gpt-5 on the
// Responses API: a reasoning item with encrypted content and a call; GLM on
// Chat Completions: reasoning_content and two calls) read into parts,
// complete and streamed, and the follow-up request built with the reply
// replayed.
func BenchmarkReasoning(b *testing.B) {
	for _, tc := range []struct {
		name, file string
		api        API
	}{
		{"responses", "responses_reasoning_tool", Responses},
		{"chat", "chat_reasoning_parallel", ChatCompletions},
	} {
		for _, stream := range []bool{false, true} {
			name, file := tc.name+"/read", tc.file
			if stream {
				name, file = tc.name+"/stream", tc.file+"_stream"
			}
			rec := recording.Load(b, file)
			ctype := "application/json"
			if stream {
				ctype = "text/event-stream"
			}
			m := benchModel(b, benchServer(b, ctype, string(rec[0].Response)), tc.api)
			p, ctx := benchPrompt(), b.Context()
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var err error
					_, err = fakeapi.Generate(ctx, m, p, stream)
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			if stream {
				b.Run(name+"/sdk-only", func(b *testing.B) {
					b.ReportAllocs()
					if tc.api == Responses {
						params, _ := m.responsesParams(p)
						for b.Loop() {
							s := m.resp.NewStreaming(ctx, params)
							for s.Next() {
							}
							if err := s.Err(); err != nil {
								b.Fatal(err)
							}
						}
						return
					}
					params, _ := m.chatParams(p)
					for b.Loop() {
						s := m.chat.NewStreaming(ctx, params)
						for s.Next() {
						}
						if err := s.Err(); err != nil {
							b.Fatal(err)
						}
					}
				})
				continue
			}
			resp, err := m.Generate(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			reply := resp.Message()
			results := make([]toolgate.ToolResult, len(reply.ToolCalls))
			for i, c := range reply.ToolCalls {
				results[i] = toolgate.ToolResult{CallID: c.ID, Name: c.Name, Content: "5"}
			}
			next := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Go."}, reply, &toolgate.ToolMessage{Results: results}}}
			b.Run(tc.name+"/replay", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if tc.api == Responses {
						_, err = m.responsesParams(next)
					} else {
						_, err = m.chatParams(next)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
