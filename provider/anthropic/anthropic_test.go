package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

func ptr[T any](v T) *T { return &v }

const simpleMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-1","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":1}}`

func TestNew(t *testing.T) {
	for _, opts := range []*Options{nil, {APIKey: "k"}} {
		if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "Options.Model") {
			t.Errorf("New(%+v): got %v, want an error naming Options.Model", opts, err)
		}
	}
	if _, err := New(&Options{Model: "m"}); err != nil {
		t.Errorf("New with a model: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := FromEnv("m"); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("FromEnv without a key: got %v, want an error naming ANTHROPIC_API_KEY", err)
	}
	f := newFakeAPI(t, jsonAnswer(simpleMessage))
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	t.Setenv("ANTHROPIC_BASE_URL", f.URL)
	m, err := FromEnv("claude-env")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got := f.Header(0).Get("Authorization"); got != "Bearer env-key" {
		t.Errorf("authorization: got %q, want %q", got, "Bearer env-key")
	}
	if got := f.JSON(0)["model"]; got != "claude-env" {
		t.Errorf("model: got %v, want claude-env", got)
	}
	if _, err := FromEnv(""); err == nil {
		t.Error("FromEnv(\"\"): got no error")
	}
}

// fullPrompt exercises every message kind and option.
func fullPrompt() *toolgate.Prompt {
	return &toolgate.Prompt{
		Messages: []toolgate.Message{
			&toolgate.SystemMessage{Text: "You are terse."},
			&toolgate.UserMessage{Text: "Weather in Oslo and Rome, then ship it."},
			&toolgate.AssistantMessage{Text: "Checking.", ToolCalls: []toolgate.ToolCall{
				{ID: "toolu_a", Name: "get_weather", Arguments: `{"city": "Oslo"}`},
				{ID: "toolu_b", Name: "get_weather", Arguments: `{"city":"Rome"`},
				{ID: "", Name: "ship", Arguments: ""},
			}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{
				{CallID: "toolu_a", Name: "get_weather", Content: `"sunny"`, Status: toolgate.ResultOK},
				{CallID: "toolu_b", Name: "get_weather", Content: "invalid arguments: not valid JSON", Status: toolgate.ResultError},
				{CallID: "", Name: "ship", Content: "Not now.", Status: toolgate.ResultDenied},
			}},
			&toolgate.SystemMessage{Text: "Answer in English."},
			&toolgate.UserMessage{Text: "Well?"},
		},
		Tools: []*toolgate.Tool{fakeapi.WeatherTool(), fakeapi.RawTool("ship", toolgate.ToolMetadata{RequiresConfirmation: true})},
		Options: &toolgate.ModelOptions{
			Model:             "claude-other",
			Temperature:       ptr(0.25),
			MaxOutputTokens:   300,
			ToolChoice:        "get_weather",
			ParallelToolCalls: ptr(false),
			Stop:              []string{"STOP"},
		},
	}
}

func TestRequestGolden(t *testing.T) {
	tests := []struct {
		name, comment string
		prompt        *toolgate.Prompt
		stream        bool
	}{
		{"request_full", "Generate: system messages in the system field; a reply with text and three calls (valid, invalid and blank arguments, one without an id) as tool_use blocks; its results grouped in one user message in call order (ok, is_error, denied as text); typed and raw tools; every model option.", fullPrompt(), false},
		{"request_minimal", "Generate: one user message, no tools, no options: the default model and max_tokens 4096, no tool_choice.", &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hello"}}}, false},
		{"request_stream", "Stream: the same body as Generate plus \"stream\": true.", &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hello"}}, Tools: []*toolgate.Tool{fakeapi.WeatherTool()}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := jsonAnswer(simpleMessage)
			if tt.stream {
				a = sseAnswer(streamText...)
			}
			f := newFakeAPI(t, a)
			m := f.model(t)
			var err error
			_, err = fakeapi.Generate(t.Context(), m, tt.prompt, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Path(0); got != "/v1/messages" {
				t.Errorf("path: got %q, want /v1/messages", got)
			}
			checkGolden(t, tt.name, tt.comment, f.JSON(0))
		})
	}
}

func TestToolChoice(t *testing.T) {
	tests := []struct {
		choice   string
		parallel *bool
		want     any // the tool_choice field; nil: absent
	}{
		{"", nil, nil},
		{"auto", nil, map[string]any{"type": "auto"}},
		{"", ptr(false), map[string]any{"type": "auto", "disable_parallel_tool_use": true}},
		{"auto", ptr(true), map[string]any{"type": "auto", "disable_parallel_tool_use": false}},
		{"required", nil, map[string]any{"type": "any"}},
		{"required", ptr(false), map[string]any{"type": "any", "disable_parallel_tool_use": true}},
		{"none", ptr(false), map[string]any{"type": "none"}},
		{"get_weather", nil, map[string]any{"type": "tool", "name": "get_weather"}},
	}
	for _, tt := range tests {
		f := newFakeAPI(t, jsonAnswer(simpleMessage))
		p := &toolgate.Prompt{
			Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}},
			Tools:    []*toolgate.Tool{fakeapi.WeatherTool()},
			Options:  &toolgate.ModelOptions{ToolChoice: tt.choice, ParallelToolCalls: tt.parallel},
		}
		if _, err := f.model(t).Generate(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		got, ok := f.JSON(0)["tool_choice"]
		if tt.want == nil && ok {
			t.Errorf("choice %q parallel %v: got tool_choice %v, want none", tt.choice, tt.parallel, got)
		} else if diff := cmp.Diff(tt.want, got); tt.want != nil && diff != "" {
			t.Errorf("choice %q parallel %v: tool_choice (-want +got):\n%s", tt.choice, tt.parallel, diff)
		}
	}
	// Without tools no tool_choice is sent.
	f := newFakeAPI(t, jsonAnswer(simpleMessage))
	p := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}, Options: &toolgate.ModelOptions{ToolChoice: "required"}}
	if _, err := f.model(t).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if got, ok := f.JSON(0)["tool_choice"]; ok {
		t.Errorf("no tools: got tool_choice %v, want none", got)
	}
}

func TestMaxTokensDefault(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(simpleMessage), jsonAnswer(simpleMessage))
	m, err := New(&Options{BaseURL: f.URL, Model: "m", MaxOutputTokens: 1000, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}
	if _, err := m.Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	p.Options = &toolgate.ModelOptions{MaxOutputTokens: 20}
	if _, err := m.Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{1000, 20} {
		if got := f.JSON(i)["max_tokens"]; got != want {
			t.Errorf("request %d: max_tokens %v, want %v", i, got, want)
		}
	}
	if got := f.Header(0).Get("Authorization") + f.Header(0).Get("X-Api-Key"); got != "" {
		t.Errorf("no API key configured: got credentials %q", got)
	}
}

func TestToolInput(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"", `{}`},
		{" \n", `{}`},
		{`{"a":`, `{"_raw":"{\"a\":"}`},
		{`[1,2]`, `{"_raw":"[1,2]"}`},
		{`null`, `{"_raw":"null"}`},
		{`not json`, `{"_raw":"not json"}`},
	}
	for _, tt := range tests {
		got := toolInput(tt.args)
		if string(got) != tt.want {
			t.Errorf("toolInput(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestGenerateResponse(t *testing.T) {
	tests := []struct {
		name, body string
		want       *toolgate.Response
	}{
		{"text", simpleMessage, &toolgate.Response{
			ID: "msg_1", Model: "claude-test-1",
			Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Hi."}, FinishReason: toolgate.FinishStop}},
			Usage:       toolgate.Usage{InputTokens: 15, OutputTokens: 3, CachedInputTokens: 4},
		}},
		{"single call", `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[
			{"type":"thinking","thinking":"hmm","signature":"sig"},
			{"type":"text","text":"Let me check."},
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ "city" : "Oslo" }}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`,
			&toolgate.Response{ID: "msg_2", Model: "m", Generations: []toolgate.Generation{{
				Message: &toolgate.AssistantMessage{Text: "Let me check.", ToolCalls: []toolgate.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
					Parts: toolgate.Parts{
						toolgate.ReasoningPart{Text: "hmm", Signature: "sig", Provider: "anthropic"},
						toolgate.TextPart{Text: "Let me check."},
						toolgate.ToolCallPart{Index: 0},
					}},
				FinishReason: toolgate.FinishToolCalls}},
				Usage: toolgate.Usage{InputTokens: 5, OutputTokens: 7}}},
		{"parallel calls", `{"id":"msg_3","type":"message","role":"assistant","model":"m","content":[
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}},
			{"type":"text","text":"Two."}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`,
			&toolgate.Response{ID: "msg_3", Model: "m", Generations: []toolgate.Generation{{
				Message: &toolgate.AssistantMessage{Text: "Two.", ToolCalls: []toolgate.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
					{ID: "toolu_2", Name: "get_weather", Arguments: `{}`}}},
				FinishReason: toolgate.FinishToolCalls}},
				Usage: toolgate.Usage{InputTokens: 5, OutputTokens: 7}}},
		{"max tokens", `{"id":"m4","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Lo"}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":2}}`,
			&toolgate.Response{ID: "m4", Model: "m", Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Lo"}, FinishReason: toolgate.FinishLength}},
				Usage: toolgate.Usage{InputTokens: 1, OutputTokens: 2}}},
		{"refusal", `{"id":"m5","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`,
			&toolgate.Response{ID: "m5", Model: "m", Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{}, FinishReason: toolgate.FinishRefusal}},
				Usage: toolgate.Usage{InputTokens: 1}}},
		{"stop sequence", `{"id":"m6","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":"STOP","usage":{"input_tokens":1,"output_tokens":1}}`,
			&toolgate.Response{ID: "m6", Model: "m", Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "a"}, FinishReason: toolgate.FinishStop}},
				Usage: toolgate.Usage{InputTokens: 1, OutputTokens: 1}}},
		{"pause turn passes through", `{"id":"m7","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"pause_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
			&toolgate.Response{ID: "m7", Model: "m", Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{}, FinishReason: "pause_turn"}},
				Usage: toolgate.Usage{InputTokens: 1, OutputTokens: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, jsonAnswer(tt.body))
			got, err := f.model(t).Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// streamText is a streamed text reply with a ping and an unknown event.
var streamText = []string{
	"message_start", `{"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","model":"claude-test-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":2}}}`,
	"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	"ping", `{"type":"ping"}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
	"future_event", `{"type":"future_event","whatever":1}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo."}}`,
	"content_block_stop", `{"type":"content_block_stop","index":0}`,
	"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
	"message_stop", `{"type":"message_stop"}`,
}

// streamCalls is a streamed reply with a thinking block, text and two tool
// calls whose arguments arrive in fragments; the calls are content blocks 2
// and 3.
var streamCalls = []string{
	"message_start", `{"type":"message_start","message":{"id":"msg_c","type":"message","role":"assistant","model":"claude-test-1","content":[],"stop_reason":null,"usage":{"input_tokens":20,"output_tokens":1}}}`,
	"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"secret plan"}}`,
	"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`,
	"content_block_stop", `{"type":"content_block_stop","index":0}`,
	"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking both."}}`,
	"content_block_stop", `{"type":"content_block_stop","index":1}`,
	"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
	"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
	"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}`,
	"ping", `{"type":"ping"}`,
	"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ty\": \"Os"}}`,
	"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"lo\"}"}}`,
	"content_block_stop", `{"type":"content_block_stop","index":2}`,
	"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}}}`,
	"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
	"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"\"Rome\"}"}}`,
	"content_block_stop", `{"type":"content_block_stop","index":3}`,
	"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
	"message_stop", `{"type":"message_stop"}`,
}

// streamCallsParts are the parts of the reply of streamCalls, in block
// order.
var streamCallsParts = toolgate.Parts{
	toolgate.ReasoningPart{Text: "secret plan", Signature: "abc", Provider: "anthropic"},
	toolgate.TextPart{Text: "Checking both."},
	toolgate.ToolCallPart{Index: 0},
	toolgate.ToolCallPart{Index: 1},
}

var hi = &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}

func TestStreamChunks(t *testing.T) {
	f := newFakeAPI(t, sseAnswer(streamCalls...))
	chunks, err := fakeapi.Chunks(t.Context(), f.model(t), hi)
	if err != nil {
		t.Fatal(err)
	}
	u := toolgate.Usage{InputTokens: 20, OutputTokens: 40}
	want := []*toolgate.Chunk{
		{ID: "msg_c", Model: "claude-test-1", Reasoning: "secret plan"},
		{Text: "Checking both."},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "toolu_1", Name: "get_weather"}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `{"city":"Oslo"}`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, ID: "toolu_2", Name: "get_weather"}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, Arguments: `{"city":"Rome"}`}}},
		{FinishReason: toolgate.FinishToolCalls, Usage: &u, Parts: streamCallsParts},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestStreamCollect(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   *toolgate.Response
	}{
		{"text", streamText, &toolgate.Response{ID: "msg_s", Model: "claude-test-1",
			Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Hello."}, FinishReason: toolgate.FinishStop}},
			Usage:       toolgate.Usage{InputTokens: 14, OutputTokens: 5, CachedInputTokens: 2}}},
		{"parallel calls split arguments", streamCalls, &toolgate.Response{ID: "msg_c", Model: "claude-test-1",
			Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Checking both.", ToolCalls: []toolgate.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
				{ID: "toolu_2", Name: "get_weather", Arguments: `{"city":"Rome"}`},
			}, Parts: streamCallsParts}, FinishReason: toolgate.FinishToolCalls}},
			Usage: toolgate.Usage{InputTokens: 20, OutputTokens: 40}}},
		{"call without input", []string{
			"message_start", `{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"now","input":{}}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3,"input_tokens":2}}`,
			"message_stop", `{"type":"message_stop"}`,
		}, &toolgate.Response{ID: "m", Model: "x",
			Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "toolu_9", Name: "now", Arguments: "{}"}}}, FinishReason: toolgate.FinishToolCalls}},
			Usage:       toolgate.Usage{InputTokens: 2, OutputTokens: 3}}},
		{"malformed arguments kept verbatim", []string{
			"message_start", `{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"get_weather","input":{}}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": Oslo"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
			"message_stop", `{"type":"message_stop"}`,
		}, &toolgate.Response{ID: "m", Model: "x",
			Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "toolu_9", Name: "get_weather", Arguments: `{"city": Oslo`}}}, FinishReason: toolgate.FinishToolCalls}},
			Usage:       toolgate.Usage{InputTokens: 1, OutputTokens: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, sseAnswer(tt.events...))
			got, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamMalformed(t *testing.T) {
	start := []string{"message_start", `{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`}
	tests := []struct {
		name   string
		events []string
	}{
		{"no message_stop", streamText[:len(streamText)-2]},
		{"delta for an unknown block", append(start[:2:2], "content_block_delta", `{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{}"}}`, "message_stop", `{"type":"message_stop"}`)},
		{"tool_use without a name", append(start[:2:2], "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t"}}`)},
		{"event before message_start", []string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}},
		{"not JSON", append(start[:2:2], "content_block_delta", `{"type":`)},
		{"empty stream", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, sseAnswer(tt.events...))
			_, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
			var me *provider.Error
			if !errors.As(err, &me) || me.Kind != provider.KindOther || me.Provider != "anthropic" {
				t.Fatalf("got %v, want a provider.Error of kind other", err)
			}
			if strings.Contains(me.Error(), `{"`) {
				t.Errorf("the error quotes the response: %v", me)
			}
		})
	}
}

// TestStreamCut cuts the connection in the middle of a stream.
func TestStreamCut(t *testing.T) {
	fakeapi.CheckStreamCut(t, hi, sse(streamCalls[:14]...), func(a answer) toolgate.Model { return newFakeAPI(t, a).model(t) })
}

func TestStreamBreakClosesConnection(t *testing.T) {
	fakeapi.CheckStreamStop(t, hi, sse(streamText[:8]...), func(a answer) toolgate.Model {
		return newFakeAPI(t, a).model(t)
	})
}

func TestContextCanceled(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(simpleMessage), jsonAnswer(simpleMessage))
	fakeapi.CheckCanceled(t, f.model(t), hi)
}

func TestErrors(t *testing.T) {
	fakeapi.CheckErrors(t, hi, "anthropic", []fakeapi.ErrorCase{
		{Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your rate limit.", Kind: provider.KindRateLimit, Sentinel: provider.ErrRateLimited},
		{Status: 500, Type: "api_error", Message: "Internal server error", Kind: provider.KindServer, Sentinel: provider.ErrServer},
		{Status: 529, Type: "overloaded_error", Message: "Overloaded", Kind: provider.KindServer, Sentinel: provider.ErrServer},
		{Status: 401, Type: "authentication_error", Message: "invalid x-api-key", Kind: provider.KindAuth, Sentinel: provider.ErrAuth},
		{Status: 400, Type: "invalid_request_error", Message: "messages: at least one message is required", Kind: provider.KindBadRequest, Sentinel: provider.ErrBadRequest},
	}, func(c fakeapi.ErrorCase) (toolgate.Model, *fakeapi.Server) {
		f := newFakeAPI(t, errorAnswer(c.Status, c.Type, c.Message))
		return f.model(t), f.Server
	})
}

func TestStreamErrorEvent(t *testing.T) {
	events := append(streamText[:6:6], "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	f := newFakeAPI(t, sseAnswer(events...))
	_, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
	var me *provider.Error
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a provider.Error", err)
	}
	if me.Kind != provider.KindServer || me.StatusCode != 0 || me.Message != "Overloaded" {
		t.Errorf("got %+v, want kind server, status 0, message Overloaded", me)
	}
}

func TestMalformedBody(t *testing.T) {
	for _, body := range []string{`not json`, `{"content":[{"type":"tool_use","id":"t","input":{}}]}`, `{"content":[{"type":"tool_use","name":"x","input":[1,}]}`} {
		f := newFakeAPI(t, jsonAnswer(body))
		_, err := f.model(t).Generate(t.Context(), hi)
		if err == nil {
			t.Errorf("body %s: got no error", body)
		}
	}
}

func TestRetry(t *testing.T) {
	retryNow := map[string]string{"retry-after-ms": "0"}
	f := newFakeAPI(t,
		answer{Status: 500, Header: retryNow, Body: `{"type":"error","error":{"type":"api_error","message":"boom"}}`},
		answer{Status: 429, Header: retryNow, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`},
		jsonAnswer(simpleMessage))
	m, err := New(&Options{BaseURL: f.URL, Model: "m"}) // default retries
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(t.Context(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Hi." || f.Count() != 3 {
		t.Errorf("got %q after %d requests, want Hi. after 3", resp.Text(), f.Count())
	}
}

// TestResume pauses a turn on two gated calls with the same id, resumes it
// allowing one and denying the other, and checks the request that follows.
func TestResume(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "call", true: "stream"}[stream], func(t *testing.T) {
			pausedReply := `{"id":"msg_p","type":"message","role":"assistant","model":"m","content":[
				{"type":"text","text":"I will ship both."},
				{"type":"tool_use","id":"toolu_dup","name":"ship","input":{"box":1}},
				{"type":"tool_use","id":"toolu_dup","name":"ship","input":{"box":2}},
				{"type":"tool_use","id":"toolu_w","name":"get_weather","input":{"city":"Oslo"}}],
				"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":10}}`
			final := `{"id":"msg_f","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Shipped box 1."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":4}}`
			answers := []answer{jsonAnswer(pausedReply), jsonAnswer(final)}
			if stream {
				answers = []answer{sseAnswer(messageAsEvents(pausedReply)...), sseAnswer(messageAsEvents(final)...)}
			}
			f := newFakeAPI(t, answers...)
			fakeapi.PauseAndResume(t, f.model(t), stream, "toolu_w")
			req := f.JSON(1)
			msgs := req["messages"].([]any)
			if len(msgs) != 3 {
				t.Fatalf("second request has %d messages, want 3 (user, reply, results):\n%v", len(msgs), msgs)
			}
			wantReply := map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "I will ship both."},
				map[string]any{"type": "tool_use", "id": "toolu_tg_2_0", "name": "ship", "input": map[string]any{"box": 1.0}},
				map[string]any{"type": "tool_use", "id": "toolu_tg_2_1", "name": "ship", "input": map[string]any{"box": 2.0}},
				map[string]any{"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": map[string]any{"city": "Oslo"}},
			}}
			if diff := cmp.Diff(wantReply, msgs[1]); diff != "" {
				t.Errorf("replayed reply (-want +got):\n%s", diff)
			}
			text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
			wantResults := map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_tg_2_0", "content": text(`{"done":{"box":1}}`)},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_tg_2_1", "content": text("Box 2 stays.")},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_w", "content": text(`"sunny in Oslo"`)},
			}}
			if diff := cmp.Diff(wantResults, msgs[2]); diff != "" {
				t.Errorf("results message (-want +got):\n%s", diff)
			}
			if got := req["system"]; !cmp.Equal(got, text("Be careful.")) {
				t.Errorf("system: got %v", got)
			}
		})
	}
}

// messageAsEvents turns a complete message JSON into the events that
// stream it, splitting each tool input in two fragments.
func messageAsEvents(body string) []string {
	var msg struct {
		ID, Model  string
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text, ID, Name      string
			Thinking, Signature, Data string
			Input                     json.RawMessage
		}
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		panic(err)
	}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	ev := []string{"message_start", js(map[string]any{"type": "message_start", "message": map[string]any{
		"id": msg.ID, "model": msg.Model, "usage": map[string]any{"input_tokens": msg.Usage.InputTokens, "output_tokens": 1}}})}
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			ev = append(ev, "content_block_start", js(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}}),
				"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}}))
		case "thinking":
			// The thinking in two deltas, then the signature, as the API
			// streams them.
			half := len(b.Thinking) / 2
			ev = append(ev, "content_block_start", js(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}),
				"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": b.Thinking[:half]}}),
				"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": b.Thinking[half:]}}),
				"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "signature_delta", "signature": b.Signature}}))
		case "redacted_thinking":
			ev = append(ev, "content_block_start", js(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "redacted_thinking", "data": b.Data}}))
		case "tool_use":
			in := string(b.Input)
			ev = append(ev, "content_block_start", js(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}}),
				"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": in[:len(in)/2]}}),
				"content_block_delta", js(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": in[len(in)/2:]}}))
		}
		ev = append(ev, "content_block_stop", js(map[string]any{"type": "content_block_stop", "index": i}))
	}
	ev = append(ev, "message_delta", js(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg.StopReason}, "usage": map[string]any{"output_tokens": msg.Usage.OutputTokens}}),
		"message_stop", `{"type":"message_stop"}`)
	return ev
}

// TestMalformedArgumentsThroughClient: a streamed call with arguments that
// are not JSON gets an error result, and the next request still is valid.
func TestMalformedArgumentsThroughClient(t *testing.T) {
	bad := []string{
		"message_start", `{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": Oslo"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
		"message_stop", `{"type":"message_stop"}`,
	}
	f := newFakeAPI(t, sseAnswer(bad...), sseAnswer(streamText...))
	client := toolgate.NewClient(f.model(t), []*toolgate.Tool{fakeapi.WeatherTool()}, nil)
	resp, err := toolgate.Collect(client.Stream(t.Context(), &toolgate.CallParams{Input: "weather?"}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Hello." {
		t.Errorf("text %q", resp.Text())
	}
	msgs := f.JSON(1)["messages"].([]any)
	call := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if diff := cmp.Diff(map[string]any{"_raw": `{"city": Oslo`}, call["input"]); diff != "" {
		t.Errorf("replayed input (-want +got):\n%s", diff)
	}
	result := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if result["is_error"] != true {
		t.Errorf("result of a call with invalid arguments: %v, want is_error", result)
	}
}

func TestSchemaWithoutType(t *testing.T) {
	tool := toolgate.NewTool(toolgate.ToolDefinition{Name: "t", InputSchema: &jsonschema.Schema{
		Properties: map[string]*jsonschema.Schema{"a": {Type: "string"}}}}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	f := newFakeAPI(t, jsonAnswer(simpleMessage))
	p := &toolgate.Prompt{Messages: hi.Messages, Tools: []*toolgate.Tool{tool}}
	if _, err := f.model(t).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	got := f.JSON(0)["tools"].([]any)[0].(map[string]any)["input_schema"]
	want := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input_schema (-want +got):\n%s", diff)
	}
}

func TestNilPrompt(t *testing.T) {
	m, _ := New(&Options{Model: "m"})
	if _, err := m.Generate(t.Context(), nil); err == nil {
		t.Error("Generate(nil): no error")
	}
	if _, err := toolgate.Collect(m.Stream(t.Context(), nil)); err == nil {
		t.Error("Stream(nil): no error")
	}
	bad := &toolgate.Prompt{Messages: []toolgate.Message{(*toolgate.UserMessage)(nil)}}
	if _, err := m.Generate(t.Context(), bad); err == nil {
		t.Error("Generate with a nil message: no error")
	}
}
