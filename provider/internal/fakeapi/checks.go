package fakeapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
)

// CheckStreamStop checks that a consumer that stops reading a stream ends
// the request: the server sends prefix, an event stream holding at least
// one chunk of text, and holds the connection open; the consumer breaks
// out of the loop at the first text, and the server must see the client
// go away. start returns a model talking to a server answering with a.
func CheckStreamStop(t testing.TB, p *toolgate.Prompt, prefix string, start func(a Answer) toolgate.Model) {
	t.Helper()
	closed := make(chan struct{})
	stop := make(chan struct{}) // ends the handler if the test gave up
	m := start(Answer{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, prefix)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done(): // the client went away
			close(closed)
		case <-stop:
		}
	}})
	t.Cleanup(func() { close(stop) }) // runs before the server's Close
	for ch, err := range m.Stream(t.Context(), p) {
		if err != nil {
			t.Fatal(err)
		}
		if ch.Text != "" {
			break
		}
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still holds the stream open 10s after the consumer stopped")
	}
}

// CheckCanceled checks that a call and a stream with a cancelled context
// return [context.Canceled].
func CheckCanceled(t testing.TB, m toolgate.Model, p *toolgate.Prompt) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Generate(ctx, p); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate: got %v, want context.Canceled", err)
	}
	if _, err := toolgate.Collect(m.Stream(ctx, p)); !errors.Is(err, context.Canceled) {
		t.Errorf("Stream: got %v, want context.Canceled", err)
	}
}

// ErrorCase is an error answer of an API and the error an adapter must
// return for it.
type ErrorCase struct {
	Status   int                // the HTTP status
	Type     string             // the API's name for the error (its type, status or code)
	Message  string             // the error's message
	Kind     provider.ErrorKind // the kind the adapter must report
	Sentinel error              // a sentinel the error must match
}

// CheckErrors checks that each case's answer, to a call and to a stream,
// makes the adapter return a [provider.Error] of provider with the
// case's kind, status and message, matching its sentinel, after one
// request. start returns a model, with retries off, talking to a new
// server that answers with the API's error answer for c.
func CheckErrors(t testing.TB, p *toolgate.Prompt, name string, cases []ErrorCase, start func(c ErrorCase) (toolgate.Model, *Server)) {
	t.Helper()
	for _, tt := range cases {
		for _, stream := range []bool{false, true} {
			m, s := start(tt)
			_, err := Generate(t.Context(), m, p, stream)
			var me *provider.Error
			if !errors.As(err, &me) {
				t.Fatalf("%d stream=%v: got %v, want a provider.Error", tt.Status, stream, err)
			}
			got := *me
			got.Err = nil
			want := provider.Error{Provider: name, Kind: tt.Kind, StatusCode: tt.Status, Message: tt.Message}
			if got != want {
				t.Errorf("%d stream=%v: got %+v, want %+v", tt.Status, stream, got, want)
			}
			if !errors.Is(err, tt.Sentinel) {
				t.Errorf("%d stream=%v: errors.Is(%v) is false", tt.Status, stream, tt.Sentinel)
			}
			if s.Count() != 1 {
				t.Errorf("%d stream=%v: %d requests with retries off, want 1", tt.Status, stream, s.Count())
			}
		}
	}
}

// Chunks reads a stream of m to its end, returning the chunks and the
// error that ended it.
func Chunks(ctx context.Context, m toolgate.Model, p *toolgate.Prompt) ([]*toolgate.Chunk, error) {
	var chunks []*toolgate.Chunk
	for ch, err := range m.Stream(ctx, p) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, ch)
	}
	return chunks, nil
}

// CheckStreamCut checks a stream whose connection breaks in the middle:
// the server sends body, the start of an event stream, and drops the
// connection. The chunks before the cut arrive, none with a finish reason,
// and the stream ends with a [provider.Error]. start returns a model
// talking to a server answering with a.
func CheckStreamCut(t testing.TB, p *toolgate.Prompt, body string, start func(a Answer) toolgate.Model) {
	t.Helper()
	m := start(Answer{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drops the connection
	}})
	chunks, err := Chunks(t.Context(), m, p)
	if err == nil {
		t.Fatal("got no error for a cut stream")
	}
	var me *provider.Error
	if !errors.As(err, &me) {
		t.Fatalf("got %T %v, want a provider.Error", err, err)
	}
	if len(chunks) == 0 {
		t.Error("got no chunk before the cut")
	}
	for _, ch := range chunks {
		if ch.FinishReason != "" {
			t.Errorf("a cut stream yielded a finish reason %q", ch.FinishReason)
		}
	}
}

// LiveTurn runs a turn with a tool call through m, a model talking to a
// real API, as a call and as a stream, and checks that the tool ran and
// its result reached the answer.
func LiveTurn(t testing.TB, m toolgate.Model) {
	t.Helper()
	type in struct {
		City string `json:"city"`
	}
	called := 0
	tool := toolgate.NewToolFor("get_weather", "The current weather in a city.",
		func(_ context.Context, _ *toolgate.ToolRequest, v in) (string, error) {
			called++
			return "It is 21 degrees and sunny in " + v.City + ".", nil
		}, nil)
	client := toolgate.NewClient(m, []*toolgate.Tool{tool}, nil)
	for _, stream := range []bool{false, true} {
		p := &toolgate.CallParams{Input: "What is the weather in Oslo? Use the tool, then answer in one sentence."}
		resp, err := Call(t.Context(), client, p, stream)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Text(), "21") || resp.Usage.InputTokens == 0 {
			t.Errorf("stream=%v: answer %q, usage %+v", stream, resp.Text(), resp.Usage)
		}
	}
	if called < 2 {
		t.Errorf("the tool ran %d times, want 2", called)
	}
}
