package gemini

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
)

// benchPrompt is a round in the middle of a turn: a system prompt, a user
// message, a reply with three calls, their results, and two tools.
var benchPrompt = fullPrompt()

const benchReply = `{"candidates":[{"content":{"role":"model","parts":[
	{"text":"Checking both."},
	{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}},
	{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]},"finishReason":"STOP"}],
	"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7},"modelVersion":"m","responseId":"r"}`

// benchModel returns a model whose server answers every request with body.
func benchModel(b *testing.B, contentType, body string) *Model {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	b.Cleanup(srv.Close)
	m, err := New(&Options{APIKey: "k", BaseURL: srv.URL, Model: "m"})
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

// BenchmarkStream measures one streamed round (four responses, two calls)
// against a local server, collected into a response.
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
// benchPrompt (the SDK then converts and encodes it).
func BenchmarkAdapterRequest(b *testing.B) {
	m, err := New(&Options{APIKey: "k", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := m.request(benchPrompt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdapterStream measures the adapter's own conversion of decoded
// streamed responses into chunks.
func BenchmarkAdapterStream(b *testing.B) {
	var rs []*genai.GenerateContentResponse
	for _, s := range streamCalls {
		r := new(genai.GenerateContentResponse)
		if err := r.UnmarshalJSON([]byte(strings.TrimSpace(s))); err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		var s streamState
		for _, r := range rs {
			if _, err := s.response(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.end(); err != nil {
			b.Fatal(err)
		}
	}
}
