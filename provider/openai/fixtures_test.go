package openai_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"the city name"`
}

func weatherTool() *toolgate.Tool {
	return toolgate.NewToolFor("get_weather", "Get the weather for a city",
		func(_ context.Context, _ *toolgate.ToolRequest, in cityArgs) (string, error) {
			return "sunny in " + in.City, nil
		}, nil)
}

// bookTool is gated: its calls need a person's decision.
func bookTool() *toolgate.Tool {
	return toolgate.NewToolFor("book_hotel", "Book a hotel in a city",
		func(_ context.Context, _ *toolgate.ToolRequest, in cityArgs) (string, error) {
			return "booked in " + in.City, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
}

// clockTool has no schema and no description.
func clockTool() *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: "clock"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return `"12:00"`, nil })
}

// fullPrompt exercises every message kind, both kinds of tool and every
// option.
func fullPrompt(stop bool) *toolgate.Prompt {
	temp, parallel := 0.25, false
	opts := &toolgate.ModelOptions{
		Model:             "gpt-other",
		Temperature:       &temp,
		MaxOutputTokens:   256,
		ToolChoice:        "get_weather",
		ParallelToolCalls: &parallel,
	}
	if stop {
		opts.Stop = []string{"END", "STOP"}
	}
	return &toolgate.Prompt{
		Messages: []toolgate.Message{
			&toolgate.SystemMessage{Text: "You are terse."},
			&toolgate.UserMessage{Text: "Weather in Paris and Oslo?"},
			&toolgate.AssistantMessage{Text: "Checking both.", ToolCalls: []toolgate.ToolCall{
				{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_b", Name: "get_weather", Arguments: `{ "city" : "Oslo" }`},
			}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{
				{CallID: "call_a", Name: "get_weather", Content: `"sunny in Paris"`},
				{CallID: "call_b", Name: "get_weather", Content: toolgate.DefaultDenyMessage, Status: toolgate.ResultDenied},
			}},
			&toolgate.AssistantMessage{Text: "Paris is sunny."},
			&toolgate.UserMessage{Text: "What time is it?"},
		},
		Tools:   []*toolgate.Tool{weatherTool(), clockTool()},
		Options: opts,
	}
}

// idsPrompt holds a reply whose calls have a missing id, a duplicated id
// and a good id, and the results answering them.
func idsPrompt() *toolgate.Prompt {
	return &toolgate.Prompt{
		Messages: []toolgate.Message{
			&toolgate.UserMessage{Text: "Weather in four cities?"},
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
				{Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "dup", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
				{ID: "dup", Name: "get_weather", Arguments: `{"city":"Rome"}`},
				{ID: "ok", Name: "get_weather", Arguments: `{"city":"Lima"}`},
			}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{
				{Name: "get_weather", Content: "r0"},
				{CallID: "dup", Name: "get_weather", Content: "r1"},
				{CallID: "dup", Name: "get_weather", Content: "r2"},
				{CallID: "ok", Name: "get_weather", Content: "r3"},
			}},
		},
		Tools: []*toolgate.Tool{weatherTool()},
	}
}

// call is a tool call of a scripted completion: id, name, arguments.
type call [3]string

// completion returns a Chat Completions response body.
func completion(text, finish string, calls ...call) string {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if text != "" {
		msg["content"] = text
	}
	if len(calls) > 0 {
		var tcs []any
		for _, c := range calls {
			tc := map[string]any{"type": "function", "function": map[string]any{"name": c[1], "arguments": c[2]}}
			if c[0] != "" {
				tc["id"] = c[0]
			}
			tcs = append(tcs, tc)
		}
		msg["tool_calls"] = tcs
	}
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-test-0001",
		"system_fingerprint": "fp_test",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage": map[string]any{
			"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60,
			"prompt_tokens_details":     map[string]any{"cached_tokens": 32},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 4},
		},
	})
}

// response returns a Responses API response body: text (when not empty)
// then function calls.
func response(status, text string, calls ...call) string {
	var output []any
	if text != "" {
		output = append(output, map[string]any{
			"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
		})
	}
	for i, c := range calls {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "name": c[1], "arguments": c[2], "status": "completed"}
		if c[0] != "" {
			item["call_id"] = c[0]
		}
		output = append(output, item)
	}
	if output == nil {
		output = []any{}
	}
	return mustJSON(responseObject(status, output))
}

func responseObject(status string, output []any) map[string]any {
	return map[string]any{
		"id": "resp_1", "object": "response", "created_at": 1700000000, "model": "gpt-test-0001",
		"status": status, "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{
			"input_tokens": 50, "output_tokens": 10, "total_tokens": 60,
			"input_tokens_details":  map[string]any{"cached_tokens": 32},
			"output_tokens_details": map[string]any{"reasoning_tokens": 4},
		},
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wantUsage is the usage every scripted answer reports.
var wantUsage = toolgate.Usage{InputTokens: 50, OutputTokens: 10, CachedInputTokens: 32, ReasoningTokens: 4}
