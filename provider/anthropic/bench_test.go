package anthropic

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolgate/toolgate"
)

// benchPrompt is a round in the middle of a turn: a system prompt, a user
// message, a reply with three calls, their results, and two tools.
var benchPrompt = fullPrompt()

const benchReply = `{"id":"msg_3","type":"message","role":"assistant","model":"m","content":[
	{"type":"text","text":"Checking both."},
	{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
	{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Rome"}}],
	"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`

// benchModel returns a model whose server answers every request with body.
func benchModel(b *testing.B, contentType, body string) *Model {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	b.Cleanup(srv.Close)
	m, err := New(&Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkGenerate measures one blocking round against a local server:
// request building, the SDK, HTTP, and decoding of a reply with two calls.
func BenchmarkGenerate(b *testing.B) {
	m := benchModel(b, "application/json", benchReply)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(b.Context(), benchPrompt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream measures one streamed round (21 events, two calls with
// split arguments) against a local server, collected into a response.
func BenchmarkStream(b *testing.B) {
	m := benchModel(b, "text/event-stream", sse(streamCalls...))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolgate.Collect(m.Stream(b.Context(), benchPrompt)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdapterRequest measures the adapter's own request building for
// benchPrompt (the SDK then encodes it).
func BenchmarkAdapterRequest(b *testing.B) {
	m, err := New(&Options{Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.params(benchPrompt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdapterStreamEvents measures the adapter's own conversion of
// the decoded events of a streamed reply into chunks.
func BenchmarkAdapterStreamEvents(b *testing.B) {
	var evs []sdk.MessageStreamEventUnion
	for i := 1; i < len(streamCalls); i += 2 {
		var ev sdk.MessageStreamEventUnion
		if err := ev.UnmarshalJSON([]byte(streamCalls[i])); err != nil {
			b.Fatal(err)
		}
		evs = append(evs, ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		var s streamState
		for i := range evs {
			if _, err := s.event(&evs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
