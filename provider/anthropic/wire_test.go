package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// recordedAnswer answers with a recorded response.
func recordedAnswer(e recording.Exchange) answer { return fakeapi.Recorded(e) }

// TestStreamedAndGeneratedAlike: a reply is stored the same whether it was
// streamed or not; tool arguments are compact JSON either way, although the
// API streams them with spaces (as in the recorded stream).
func TestStreamedAndGeneratedAlike(t *testing.T) {
	bodies := map[string]string{
		"spaced input": `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[
			{"type":"text","text":"Both."},
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ "city" : "Oslo", "days": [1, 2] }},
			{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`,
		"recorded thinking reply": string(recording.Load(t, "thinking_tool")[0].Response),
		"redacted thinking, text and calls": `{"id":"msg_r","type":"message","role":"assistant","model":"m","content":[
			{"type":"thinking","thinking":"Two cities.","signature":"c2ln"},
			{"type":"redacted_thinking","data":"RXF3Ymxv"},
			{"type":"text","text":"Checking both."},
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Rome"}}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t, jsonAnswer(body), sseAnswer(messageAsEvents(body)...))
			m := f.model(t)
			generated, err := m.Generate(t.Context(), hi)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := toolgate.Collect(m.Stream(t.Context(), hi))
			if err != nil {
				t.Fatal(err)
			}
			// The events above report usage as a stream does; only the
			// replies are compared.
			if diff := cmp.Diff(generated.Generations, streamed.Generations); diff != "" {
				t.Errorf("streamed reply differs from the generated one (-generated +streamed):\n%s", diff)
			}
		})
	}

	rec := recording.Load(t, "thinking_tool_stream")
	f := newFakeAPI(t, recordedAnswer(rec[0]))
	got, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
	if err != nil {
		t.Fatal(err)
	}
	want := []toolgate.ToolCall{{ID: "toolu_01Js4AMfx5qpTLhwTusnvT68", Name: "weather", Arguments: `{"location":"Florence, Italy"}`}}
	if diff := cmp.Diff(want, got.Message().ToolCalls); diff != "" {
		t.Errorf("recorded stream: tool calls (-want +got):\n%s", diff)
	}
}

// overloaded is a stream that fails with an overloaded_error event right
// after message_start, as the API does when it is overloaded after it
// began to answer.
var overloaded = []string{
	"message_start", `{"type":"message_start","message":{"id":"msg_o","type":"message","role":"assistant","model":"claude-test-1","content":[],"usage":{"input_tokens":12,"output_tokens":1}}}`,
	"ping", `{"type":"ping"}`,
	"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
}

// noWait makes m retry at once.
func noWait(m *Model) *Model {
	m.retryWait = func(int) time.Duration { return 0 }
	return m
}

func TestStreamOverloadedRetried(t *testing.T) {
	t.Run("before any chunk", func(t *testing.T) {
		f := newFakeAPI(t, sseAnswer(overloaded...), sseAnswer(overloaded...), sseAnswer(streamText...))
		m, err := New(&Options{BaseURL: f.URL, Model: "m"}) // default retries: 2
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := fakeapi.Chunks(t.Context(), noWait(m), hi)
		if err != nil {
			t.Fatal(err)
		}
		if f.Count() != 3 {
			t.Errorf("%d requests, want 3", f.Count())
		}
		if chunks[0].ID != "msg_s" {
			t.Errorf("first chunk %+v, want the id of the answer that succeeded", chunks[0])
		}
		resp, err := toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
			for _, ch := range chunks {
				if !yield(ch, nil) {
					return
				}
			}
		})
		if err != nil || resp.Text() != "Hello." {
			t.Errorf("got %q, %v; want Hello.", resp.Text(), err)
		}
	})
	t.Run("retries exhausted", func(t *testing.T) {
		f := newFakeAPI(t, sseAnswer(overloaded...), sseAnswer(overloaded...))
		m, err := New(&Options{BaseURL: f.URL, Model: "m", MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = toolgate.Collect(noWait(m).Stream(t.Context(), hi))
		if !errors.Is(err, provider.ErrServer) {
			t.Errorf("got %v, want a server provider.Error", err)
		}
		if f.Count() != 2 {
			t.Errorf("%d requests, want 2", f.Count())
		}
	})
	t.Run("retries off", func(t *testing.T) {
		f := newFakeAPI(t, sseAnswer(overloaded...))
		_, err := toolgate.Collect(noWait(f.model(t)).Stream(t.Context(), hi))
		if !errors.Is(err, provider.ErrServer) || f.Count() != 1 {
			t.Errorf("got %v after %d requests, want a server provider.Error after 1", err, f.Count())
		}
	})
	t.Run("after text was yielded", func(t *testing.T) {
		events := append(streamText[:8:8], overloaded[4:]...)
		f := newFakeAPI(t, sseAnswer(events...), sseAnswer(streamText...))
		m, err := New(&Options{BaseURL: f.URL, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := fakeapi.Chunks(t.Context(), noWait(m), hi)
		if !errors.Is(err, provider.ErrServer) {
			t.Errorf("got %v, want a server provider.Error: a reply already partly yielded is not retried", err)
		}
		if f.Count() != 1 || len(chunks) == 0 {
			t.Errorf("%d requests, %d chunks; want 1 request and the text so far", f.Count(), len(chunks))
		}
	})
	t.Run("invalid request not retried", func(t *testing.T) {
		events := []string{overloaded[0], overloaded[1], "error", `{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`}
		f := newFakeAPI(t, sseAnswer(events...), sseAnswer(streamText...))
		m, err := New(&Options{BaseURL: f.URL, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = toolgate.Collect(noWait(m).Stream(t.Context(), hi))
		if !errors.Is(err, provider.ErrBadRequest) || f.Count() != 1 {
			t.Errorf("got %v after %d requests, want a bad-request provider.Error after 1", err, f.Count())
		}
	})
}

func TestRetryWaitCanceled(t *testing.T) {
	f := newFakeAPI(t, sseAnswer(overloaded...), sseAnswer(streamText...))
	m, err := New(&Options{BaseURL: f.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m.retryWait = func(int) time.Duration { cancel(); return time.Hour }
	if _, err := toolgate.Collect(m.Stream(ctx, hi)); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the context's error", err)
	}
}

func TestRetryWaitBackoff(t *testing.T) {
	for n, lo := range []time.Duration{375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond} {
		if d := defaultRetryWait(n); d < lo || d > 2*lo {
			t.Errorf("retry %d waits %v, want between %v and %v", n, d, lo, 2*lo)
		}
	}
	if d := defaultRetryWait(30); d > 8*time.Second {
		t.Errorf("retry 30 waits %v, want at most 8s", d)
	}
}

// TestRefusal: a refusal is its own finish reason, streamed or not. The
// stream is the SDK's test stream (see testdata/recorded/SOURCES); it also
// reports thinking tokens.
func TestRefusal(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "recorded", "refusal_stream.sse"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeAPI(t, answer{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: string(data)},
		jsonAnswer(`{"id":"m5","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":6}}`))
	m := f.model(t)
	streamed, err := toolgate.Collect(m.Stream(t.Context(), hi))
	if err != nil {
		t.Fatal(err)
	}
	if streamed.FinishReason() != toolgate.FinishRefusal || streamed.Text() != "Hi" {
		t.Errorf("streamed: got %q %q, want refusal with the text", streamed.FinishReason(), streamed.Text())
	}
	if want := (toolgate.Usage{InputTokens: 28, OutputTokens: 106, ReasoningTokens: 67}); streamed.Usage != want {
		t.Errorf("streamed usage %+v, want %+v", streamed.Usage, want)
	}
	generated, err := m.Generate(t.Context(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if generated.FinishReason() != toolgate.FinishRefusal {
		t.Errorf("generated: got %q, want refusal", generated.FinishReason())
	}
}

func TestThinkingOption(t *testing.T) {
	for _, tt := range []struct {
		budget, maxTokens int
		ok                bool
	}{
		{0, 0, true}, {1024, 0, true}, {4095, 0, true}, {4096, 0, false}, {1023, 0, false},
		{-1, 0, false}, {8000, 16000, true}, {16000, 16000, false},
	} {
		_, err := New(&Options{Model: "m", ThinkingBudget: tt.budget, MaxOutputTokens: tt.maxTokens})
		if (err == nil) != tt.ok {
			t.Errorf("budget %d, max tokens %d: got %v, want ok=%v", tt.budget, tt.maxTokens, err, tt.ok)
		}
	}

	body := `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn",
		"usage":{"input_tokens":3,"output_tokens":90,"output_tokens_details":{"thinking_tokens":80}}}`
	f := newFakeAPI(t, jsonAnswer(body))
	m, err := New(&Options{BaseURL: f.URL, Model: "m", ThinkingBudget: 2048, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(t.Context(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"type": "enabled", "budget_tokens": 2048.0}, f.JSON(0)["thinking"]); diff != "" {
		t.Errorf("thinking (-want +got):\n%s", diff)
	}
	if want := (toolgate.Usage{InputTokens: 3, OutputTokens: 90, ReasoningTokens: 80}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}

	// A prompt's smaller max_tokens makes the budget invalid: no request.
	_, err = m.Generate(t.Context(), &toolgate.Prompt{Messages: hi.Messages, Options: &toolgate.ModelOptions{MaxOutputTokens: 2048}})
	if err == nil || !strings.Contains(err.Error(), "thinking budget") {
		t.Errorf("got %v, want an error about the thinking budget", err)
	}
	if f.Count() != 1 {
		t.Errorf("%d requests, want 1", f.Count())
	}
	// A larger one is fine: the request is sent (and the fake has no
	// answer left).
	m.Generate(t.Context(), &toolgate.Prompt{Messages: hi.Messages, Options: &toolgate.ModelOptions{MaxOutputTokens: 4000}})
	if f.Count() != 2 {
		t.Errorf("%d requests, want 2", f.Count())
	}
}

// TestRetryAfterSurfaced: the wait a 429 asks for is in the provider.Error.
func TestRetryAfterSurfaced(t *testing.T) {
	a := errorAnswer(429, "rate_limit_error", "slow down")
	a.Header["retry-after"] = "17"
	f := newFakeAPI(t, a)
	_, err := f.model(t).Generate(t.Context(), hi)
	var me *provider.Error
	if !errors.As(err, &me) || me.RetryAfter != 17*time.Second {
		t.Errorf("got %#v, want a provider.Error with RetryAfter 17s", err)
	}
}

// TestRecordedThinkingReplies reads the recorded thinking replies, complete
// and streamed, and the final answers after the tool result.
func TestRecordedThinkingReplies(t *testing.T) {
	// signature returns the signature the recording sends back.
	signature := func(name string) string {
		var req struct {
			Messages []struct{ Content []struct{ Signature string } }
		}
		if err := json.Unmarshal(recording.Load(t, name)[1].Request, &req); err != nil {
			t.Fatal(err)
		}
		return req.Messages[1].Content[0].Signature
	}
	call := func(id, thinking, name string) *toolgate.Response {
		return &toolgate.Response{Generations: []toolgate.Generation{{
			Message: &toolgate.AssistantMessage{
				ToolCalls: []toolgate.ToolCall{{ID: id, Name: "weather", Arguments: `{"location":"Florence, Italy"}`}},
				Parts: toolgate.Parts{
					toolgate.ReasoningPart{Text: thinking, Signature: signature(name), Provider: "anthropic"},
					toolgate.ToolCallPart{Index: 0},
				},
			},
			FinishReason: toolgate.FinishToolCalls,
		}}}
	}
	for _, tt := range []struct {
		name  string
		first *toolgate.Response
		usage toolgate.Usage
		final string
	}{
		{"thinking_tool", call("toolu_014azqsWLU8Djh6RhmBGRC2u", "The user is asking about the weather in Florence, Italy. I have a weather function available that takes a location parameter. The user has provided the location as \"Florence, Italy\" which is specific enough for the weather function. I have all the required parameters to make the function call.", "thinking_tool"), toolgate.Usage{InputTokens: 424, OutputTokens: 118},
			"The current temperature in Florence, Italy is 40°C (104°F)."},
		{"thinking_tool_stream", call("toolu_01Js4AMfx5qpTLhwTusnvT68", "The user is asking for weather information for Florence, Italy. I have access to a weather function that takes a location parameter. The user has provided the location as \"Florence, Italy\" which is specific enough for the weather function. I have all the required parameters to make the function call.", "thinking_tool_stream"), toolgate.Usage{InputTokens: 424, OutputTokens: 119},
			"The current weather in Florence, Italy is 40°C (104°F)."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.Load(t, tt.name)
			f := newFakeAPI(t, recordedAnswer(rec[0]), recordedAnswer(rec[1]))
			m := f.model(t)
			read := m.Generate
			if rec[0].Stream {
				read = func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
					return toolgate.Collect(m.Stream(ctx, p))
				}
			}
			got, err := read(t.Context(), hi)
			if err != nil {
				t.Fatal(err)
			}
			tt.first.ID, tt.first.Model, tt.first.Usage = got.ID, "claude-sonnet-4-20250514", tt.usage
			if diff := cmp.Diff(tt.first, got); diff != "" || !strings.HasPrefix(got.ID, "msg_01") {
				t.Errorf("first reply (-want +got):\n%s", diff)
			}
			final, err := read(t.Context(), hi)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(final.Text(), tt.final) || final.FinishReason() != toolgate.FinishStop {
				t.Errorf("final answer %q (%s), want it to start with %q", final.Text(), final.FinishReason(), tt.final)
			}
		})
	}
}
