package gemini

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/toolgatetest"
)

func ptr[T any](v T) *T { return &v }

const simpleResponse = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi."}]},"finishReason":"STOP","index":0}],
	"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"cachedContentTokenCount":4,"thoughtsTokenCount":2,"totalTokenCount":15},
	"modelVersion":"gemini-test-001","responseId":"resp_1"}`

var hi = &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}

func TestNew(t *testing.T) {
	for _, opts := range []*Options{nil, {APIKey: "k"}} {
		if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "Options.Model") {
			t.Errorf("New(%+v): got %v, want an error naming Options.Model", opts, err)
		}
	}
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := New(&Options{Model: "m"}); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Errorf("New without a key: got %v, want an error about the API key", err)
	}
	if _, err := New(&Options{Model: "m", APIKey: "k"}); err != nil {
		t.Errorf("New: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := FromEnv("m"); err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY") {
		t.Errorf("FromEnv without a key: got %v, want an error naming GEMINI_API_KEY", err)
	}
	for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Run(v, func(t *testing.T) {
			f := newFakeAPI(t, jsonAnswer(simpleResponse))
			t.Setenv(v, "env-key")
			t.Setenv("GEMINI_BASE_URL", f.URL)
			m, err := FromEnv("gemini-env")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(t.Context(), hi); err != nil {
				t.Fatal(err)
			}
			if got := f.Header(0).Get("X-Goog-Api-Key"); got != "env-key" {
				t.Errorf("x-goog-api-key: got %q, want env-key", got)
			}
			if got, want := f.URI(0), "/v1beta/models/gemini-env:generateContent"; got != want {
				t.Errorf("path: got %q, want %q", got, want)
			}
		})
	}
}

func fullPrompt() *toolgate.Prompt {
	return &toolgate.Prompt{
		Messages: []toolgate.Message{
			&toolgate.SystemMessage{Text: "You are terse."},
			&toolgate.UserMessage{Text: "Weather in Oslo and Rome, then ship it."},
			&toolgate.AssistantMessage{Text: "Checking.", ToolCalls: []toolgate.ToolCall{
				{Name: "get_weather", Arguments: `{"city": "Oslo", "days": 12345678901234567}`},
				{Name: "get_weather", Arguments: `{"city":"Rome"`},
				{ID: "call_7", Name: "ship", Arguments: ""},
			}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{
				{Name: "get_weather", Content: `"sunny"`, Status: toolgate.ResultOK},
				{Name: "get_weather", Content: "invalid arguments: not valid JSON", Status: toolgate.ResultError},
				{CallID: "call_7", Name: "ship", Content: "Not now.", Status: toolgate.ResultDenied},
			}},
			&toolgate.SystemMessage{Text: "Answer in English."},
			&toolgate.UserMessage{Text: "Well?"},
		},
		Tools: []*toolgate.Tool{fakeapi.WeatherTool(), fakeapi.RawTool("ship", toolgate.ToolMetadata{RequiresConfirmation: true})},
		Options: &toolgate.ModelOptions{
			Model:             "gemini-other",
			Temperature:       ptr(0.25),
			MaxOutputTokens:   300,
			ToolChoice:        "get_weather",
			ParallelToolCalls: ptr(false),
			Stop:              []string{"STOP"},
		},
	}
}

var signature = base64.StdEncoding.EncodeToString([]byte("skip_thought_signature_validator"))

func TestRequestGolden(t *testing.T) {
	tests := []struct {
		name, comment string
		prompt        *toolgate.Prompt
		stream        bool
		path          string
	}{
		{"request_full", "Generate: system messages as the system instruction; a reply with text and three calls (two without ids; valid, invalid and blank arguments) as functionCall parts, the first with the placeholder thought signature; its results as functionResponse parts of one user content in call order (output, error, denied as output), merged with the next user message; typed and raw tools as parametersJsonSchema; every model option. The SDK sends numbers through float64, so the integer 12345678901234567 of the arguments arrives rounded.", fullPrompt(), false, "/v1beta/models/gemini-other:generateContent"},
		{"request_minimal", "Generate: one user message, no tools, no options: no generation settings, no tools, no tool config.", hi, false, "/v1beta/models/gemini-test:generateContent"},
		{"request_stream", "Stream: the same body as Generate, sent to streamGenerateContent with alt=sse.", &toolgate.Prompt{Messages: hi.Messages, Tools: []*toolgate.Tool{fakeapi.WeatherTool()}, Options: &toolgate.ModelOptions{ToolChoice: "required"}}, true, "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := jsonAnswer(simpleResponse)
			if tt.stream {
				a = sseAnswer(simpleResponse)
			}
			f := newFakeAPI(t, a)
			m := f.model(t)
			var err error
			_, err = fakeapi.Generate(t.Context(), m, tt.prompt, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.URI(0); got != tt.path {
				t.Errorf("path: got %q, want %q", got, tt.path)
			}
			checkGolden(t, tt.name, tt.comment, f.JSON(0))
		})
	}
}

func TestToolConfig(t *testing.T) {
	tests := []struct {
		choice string
		want   any
	}{
		{"", nil},
		{"auto", map[string]any{"functionCallingConfig": map[string]any{"mode": "AUTO"}}},
		{"required", map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY"}}},
		{"none", map[string]any{"functionCallingConfig": map[string]any{"mode": "NONE"}}},
		{"get_weather", map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY", "allowedFunctionNames": []any{"get_weather"}}}},
	}
	for _, tt := range tests {
		f := newFakeAPI(t, jsonAnswer(simpleResponse))
		p := &toolgate.Prompt{Messages: hi.Messages, Tools: []*toolgate.Tool{fakeapi.WeatherTool()}, Options: &toolgate.ModelOptions{ToolChoice: tt.choice}}
		if _, err := f.model(t).Generate(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		got, ok := f.JSON(0)["toolConfig"]
		if tt.want == nil {
			if ok {
				t.Errorf("choice %q: got toolConfig %v, want none", tt.choice, got)
			}
		} else if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("choice %q: toolConfig (-want +got):\n%s", tt.choice, diff)
		}
	}
}

func TestCallArgs(t *testing.T) {
	tests := []struct {
		args string
		want map[string]any
	}{
		{"", nil},
		{"  ", nil},
		{`{"a":"b"}`, map[string]any{"a": "b"}},
		{`{"a":1} x`, map[string]any{"_raw": `{"a":1} x`}},
		{`{"a":`, map[string]any{"_raw": `{"a":`}},
		{`[1]`, map[string]any{"_raw": `[1]`}},
		{`null`, map[string]any{"_raw": `null`}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, callArgs(tt.args)); diff != "" {
			t.Errorf("callArgs(%q) (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestGenerateResponse(t *testing.T) {
	tests := []struct {
		name, body string
		want       *toolgate.Response
	}{
		{"text", simpleResponse, &toolgate.Response{ID: "resp_1", Model: "gemini-test-001",
			Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Hi."}, FinishReason: toolgate.FinishStop}},
			Usage:       toolgate.Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 4, ReasoningTokens: 2}}},
		{"single call without id", `{"candidates":[{"content":{"role":"model","parts":[
			{"text":"planning","thought":true},
			{"text":"Let me check."},
			{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7}}`,
			&toolgate.Response{Generations: []toolgate.Generation{{
				Message: &toolgate.AssistantMessage{Text: "Let me check.", ToolCalls: []toolgate.ToolCall{
					{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
					Parts: toolgate.Parts{
						toolgate.ReasoningPart{Text: "planning", Provider: "gemini"},
						toolgate.TextPart{Text: "Let me check."},
						toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "c2ln"},
					}},
				FinishReason: toolgate.FinishToolCalls}},
				Usage: toolgate.Usage{InputTokens: 5, OutputTokens: 7}}},
		{"parallel calls, one with an id", `{"candidates":[{"content":{"role":"model","parts":[
			{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}},
			{"functionCall":{"id":"fc_2","name":"now"}}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7}}`,
			&toolgate.Response{Generations: []toolgate.Generation{{
				Message: &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
					{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
					{ID: "fc_2", Name: "now", Arguments: `{}`}}},
				FinishReason: toolgate.FinishToolCalls}},
				Usage: toolgate.Usage{InputTokens: 5, OutputTokens: 7}}},
		{"max tokens", `{"candidates":[{"content":{"role":"model","parts":[{"text":"Lo"}]},"finishReason":"MAX_TOKENS"}]}`,
			&toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Lo"}, FinishReason: toolgate.FinishLength}}}},
		{"safety", `{"candidates":[{"finishReason":"SAFETY"}]}`,
			&toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{}, FinishReason: toolgate.FinishContentFilter}}}},
		{"prohibited", `{"candidates":[{"content":{"parts":[]},"finishReason":"PROHIBITED_CONTENT"}]}`,
			&toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{}, FinishReason: toolgate.FinishContentFilter}}}},
		{"blocked prompt", `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}`,
			&toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{}, FinishReason: toolgate.FinishContentFilter}}, Usage: toolgate.Usage{InputTokens: 3}}},
		{"other reasons pass through", `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}`,
			&toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "x"}, FinishReason: "malformed_function_call"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, jsonAnswer(tt.body))
			got, err := f.model(t).Generate(t.Context(), hi)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// streamCalls streams text, then two id-less calls in separate responses,
// then a response with only the finish reason and usage.
var streamCalls = []string{
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking...","thought":true},{"text":"Checking "}]}}],"modelVersion":"gemini-test-001","responseId":"resp_s","usageMetadata":{"promptTokenCount":20}}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"both."},{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}]}}],"modelVersion":"gemini-test-001","responseId":"resp_s"}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]}}],"modelVersion":"gemini-test-001","responseId":"resp_s"}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":30,"thoughtsTokenCount":5},"modelVersion":"gemini-test-001","responseId":"resp_s"}`,
}

// streamCallsParts are the parts of the reply of streamCalls: the text
// fragments joined, the first call with its signature.
var streamCallsParts = toolgate.Parts{
	toolgate.ReasoningPart{Text: "thinking...", Provider: "gemini"},
	toolgate.TextPart{Text: "Checking both."},
	toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "c2ln"},
	toolgate.ToolCallPart{Index: 1},
}

func TestStreamChunks(t *testing.T) {
	f := newFakeAPI(t, sseAnswer(streamCalls...))
	chunks, err := fakeapi.Chunks(t.Context(), f.model(t), hi)
	if err != nil {
		t.Fatal(err)
	}
	u := toolgate.Usage{InputTokens: 20, OutputTokens: 35, ReasoningTokens: 5}
	want := []*toolgate.Chunk{
		{ID: "resp_s", Model: "gemini-test-001", Text: "Checking ", Reasoning: "thinking..."},
		{Text: "both.", ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, Name: "get_weather", Arguments: `{"city":"Rome"}`}}},
		{FinishReason: toolgate.FinishToolCalls, Usage: &u, Parts: streamCallsParts},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	got, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
	if err == nil || got != nil {
		t.Errorf("a second stream on an exhausted fake: got %v, %v; want an error", got, err)
	}
}

func TestStreamCollect(t *testing.T) {
	f := newFakeAPI(t, sseAnswer(streamCalls...), sseAnswer(`{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}`, `{"candidates":[{"content":{"parts":[{"text":"lo."}]},"finishReason":"STOP"}]}`))
	got, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.Response{ID: "resp_s", Model: "gemini-test-001",
		Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Checking both.", ToolCalls: []toolgate.ToolCall{
			{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
			{Name: "get_weather", Arguments: `{"city":"Rome"}`},
		}, Parts: streamCallsParts}, FinishReason: toolgate.FinishToolCalls}},
		Usage: toolgate.Usage{InputTokens: 20, OutputTokens: 35, ReasoningTokens: 5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	got, err = toolgate.Collect(f.model(t).Stream(t.Context(), hi))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text() != "Hello." || got.FinishReason() != toolgate.FinishStop {
		t.Errorf("got %q %q, want Hello. stop", got.Text(), got.FinishReason())
	}
}

func TestStreamMalformed(t *testing.T) {
	tests := []struct {
		name string
		a    answer
	}{
		{"no finish reason", sseAnswer(streamCalls[:3]...)},
		{"empty stream", sseAnswer()},
		{"call without a name", sseAnswer(`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]},"finishReason":"STOP"}]}`)},
		{"not JSON", answer{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: "data: {\"candidates\":[\r\n\r\n"}},
		{"error chunk", answer{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: sse(streamCalls[0]) + "data: {\"error\":{\"code\":500,\"message\":\"Internal error\",\"status\":\"INTERNAL\"}}\r\n\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, tt.a)
			_, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
			var me *provider.Error
			if !errors.As(err, &me) || me.Provider != "gemini" {
				t.Fatalf("got %v, want a provider.Error", err)
			}
			if strings.Contains(me.Error(), "candidates") {
				t.Errorf("the error quotes the response: %v", me)
			}
		})
	}
}

func TestStreamCut(t *testing.T) {
	body := sse(streamCalls[:2]...) + `data: {"candidates":[{"content":{"parts":[{"te`
	fakeapi.CheckStreamCut(t, hi, body, func(a answer) toolgate.Model { return newFakeAPI(t, a).model(t) })
}

func TestStreamBreakClosesConnection(t *testing.T) {
	fakeapi.CheckStreamStop(t, hi, sse(streamCalls[0]), func(a answer) toolgate.Model {
		return newFakeAPI(t, a).model(t)
	})
}

func TestContextCanceled(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(simpleResponse), jsonAnswer(simpleResponse))
	fakeapi.CheckCanceled(t, f.model(t), hi)
}

func TestErrors(t *testing.T) {
	fakeapi.CheckErrors(t, hi, "gemini", []fakeapi.ErrorCase{
		{Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota).", Kind: provider.KindRateLimit, Sentinel: provider.ErrRateLimited},
		{Status: 500, Type: "INTERNAL", Message: "An internal error has occurred.", Kind: provider.KindServer, Sentinel: provider.ErrServer},
		{Status: 503, Type: "UNAVAILABLE", Message: "The model is overloaded.", Kind: provider.KindServer, Sentinel: provider.ErrServer},
		{Status: 401, Type: "UNAUTHENTICATED", Message: "API key not valid.", Kind: provider.KindAuth, Sentinel: provider.ErrAuth},
		{Status: 403, Type: "PERMISSION_DENIED", Message: "Permission denied.", Kind: provider.KindAuth, Sentinel: provider.ErrAuth},
		{Status: 400, Type: "INVALID_ARGUMENT", Message: "Request contains an invalid argument.", Kind: provider.KindBadRequest, Sentinel: provider.ErrBadRequest},
	}, func(c fakeapi.ErrorCase) (toolgate.Model, *fakeapi.Server) {
		f := newFakeAPI(t, errorAnswer(c.Status, c.Type, c.Message))
		return f.model(t), f.Server
	})
}

func TestMalformedBody(t *testing.T) {
	for _, body := range []string{`not json`, `{}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"a":1}}}]}}]}`} {
		f := newFakeAPI(t, jsonAnswer(body))
		if _, err := f.model(t).Generate(t.Context(), hi); err == nil {
			t.Errorf("body %s: got no error", body)
		}
	}
}

func TestRetry(t *testing.T) {
	f := newFakeAPI(t,
		errorAnswer(500, "INTERNAL", "boom"),
		errorAnswer(429, "RESOURCE_EXHAUSTED", "slow down"),
		jsonAnswer(simpleResponse))
	m, err := New(&Options{APIKey: "k", BaseURL: f.URL, Model: "m", MaxRetries: 2, RetryDelay: time.Millisecond})
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

// TestResume pauses a turn on two id-less gated calls and one id-less
// ungated call, resumes it with decisions keyed "#0", "#1", "#2", and
// checks the request that follows.
func TestResume(t *testing.T) {
	pausedReply := `{"candidates":[{"content":{"role":"model","parts":[
		{"text":"I will ship both."},
		{"functionCall":{"name":"ship","args":{"box":1}},"thoughtSignature":"c2ln"},
		{"functionCall":{"name":"ship","args":{"box":2}}},
		{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},"finishReason":"STOP"}],
		"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":10}}`
	final := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Shipped box 1."}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":4}}`
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "call", true: "stream"}[stream], func(t *testing.T) {
			answers := []answer{jsonAnswer(pausedReply), jsonAnswer(final)}
			if stream {
				answers = []answer{sseAnswer(pausedReply), sseAnswer(final)}
			}
			f := newFakeAPI(t, answers...)
			fakeapi.PauseAndResume(t, f.model(t), stream, "#2")
			req := f.JSON(1)
			contents := req["contents"].([]any)
			if len(contents) != 3 {
				t.Fatalf("second request has %d contents, want 3 (user, reply, results):\n%v", len(contents), contents)
			}
			wantReply := map[string]any{"role": "model", "parts": []any{
				map[string]any{"text": "I will ship both."},
				map[string]any{"functionCall": map[string]any{"name": "ship", "args": map[string]any{"box": 1.0}}, "thoughtSignature": "c2ln"},
				map[string]any{"functionCall": map[string]any{"name": "ship", "args": map[string]any{"box": 2.0}}},
				map[string]any{"functionCall": map[string]any{"name": "get_weather", "args": map[string]any{"city": "Oslo"}}},
			}}
			if diff := cmp.Diff(wantReply, contents[1]); diff != "" {
				t.Errorf("replayed reply (-want +got):\n%s", diff)
			}
			resp1 := func(name, key, content string) map[string]any {
				return map[string]any{"functionResponse": map[string]any{"name": name, "response": map[string]any{key: content}}}
			}
			wantResults := map[string]any{"role": "user", "parts": []any{
				resp1("ship", "output", `{"done":{"box":1}}`),
				resp1("ship", "output", "Box 2 stays."),
				resp1("get_weather", "output", `"sunny in Oslo"`),
			}}
			if diff := cmp.Diff(wantResults, contents[2]); diff != "" {
				t.Errorf("results content (-want +got):\n%s", diff)
			}
			wantSystem := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Be careful."}}}
			if diff := cmp.Diff(wantSystem, req["systemInstruction"]); diff != "" {
				t.Errorf("systemInstruction (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDuplicateIDs: calls that share an id are keyed by position, and the
// ids are sent back as the API gave them.
func TestDuplicateIDs(t *testing.T) {
	reply := `{"candidates":[{"content":{"role":"model","parts":[
		{"functionCall":{"id":"same","name":"ship","args":{"box":1}}},
		{"functionCall":{"id":"same","name":"ship","args":{"box":2}}}]},"finishReason":"STOP"}]}`
	f := newFakeAPI(t, jsonAnswer(reply), jsonAnswer(simpleResponse))
	client := toolgate.NewClient(f.model(t), []*toolgate.Tool{fakeapi.RawTool("ship", toolgate.ToolMetadata{RequiresConfirmation: true})}, nil)
	resp, err := client.Call(t.Context(), &toolgate.CallParams{ConversationID: "c", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"#0", "#1"}, resp.Awaiting); diff != "" {
		t.Fatalf("awaiting (-want +got):\n%s", diff)
	}
	if _, err := client.Resume(t.Context(), &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "c"), ConversationID: "c", Decisions: []toolgate.Decision{toolgate.Deny("#0", ""), toolgate.Allow("#1")}}); err != nil {
		t.Fatal(err)
	}
	parts := f.JSON(1)["contents"].([]any)[2].(map[string]any)["parts"].([]any)
	want := []any{
		map[string]any{"functionResponse": map[string]any{"id": "same", "name": "ship", "response": map[string]any{"output": toolgate.DefaultDenyMessage}}},
		map[string]any{"functionResponse": map[string]any{"id": "same", "name": "ship", "response": map[string]any{"output": `{"done":{"box":2}}`}}},
	}
	if diff := cmp.Diff(want, parts); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestMalformedArgumentsThroughClient: a reply whose call arguments were
// stored as invalid JSON is replayed as {"_raw": ...}.
func TestMalformedArguments(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(simpleResponse))
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "go"},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{Name: "ship", Arguments: `{"box": one}`}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{Name: "ship", Content: "invalid arguments", Status: toolgate.ResultError}}},
	}}
	if _, err := f.model(t).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	contents := f.JSON(0)["contents"].([]any)
	want := []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "go"}}},
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "ship", "args": map[string]any{"_raw": `{"box": one}`}}, "thoughtSignature": signature}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "ship", "response": map[string]any{"error": "invalid arguments"}}}}},
	}
	if diff := cmp.Diff(want, contents); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestSchemaWithoutType(t *testing.T) {
	tool := toolgate.NewTool(toolgate.ToolDefinition{Name: "t", InputSchema: &jsonschema.Schema{
		Properties: map[string]*jsonschema.Schema{"a": {Type: "string"}}}}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	f := newFakeAPI(t, jsonAnswer(simpleResponse))
	p := &toolgate.Prompt{Messages: hi.Messages, Tools: []*toolgate.Tool{tool}}
	if _, err := f.model(t).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	decl := f.JSON(0)["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)[0].(map[string]any)
	want := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	if diff := cmp.Diff(want, decl["parametersJsonSchema"]); diff != "" {
		t.Errorf("parametersJsonSchema (-want +got):\n%s", diff)
	}
}

func TestNilPrompt(t *testing.T) {
	m, err := New(&Options{APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), nil); err == nil {
		t.Error("Generate(nil): no error")
	}
	if _, err := toolgate.Collect(m.Stream(t.Context(), nil)); err == nil {
		t.Error("Stream(nil): no error")
	}
	bad := &toolgate.Prompt{Messages: []toolgate.Message{(*toolgate.AssistantMessage)(nil)}}
	if _, err := m.Generate(t.Context(), bad); err == nil {
		t.Error("Generate with a nil message: no error")
	}
}
