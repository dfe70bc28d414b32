package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/provider/openai"
)

// request is one request the fake server received.
type request = fakeapi.Request

// reply answers one request of the fake server.
type reply func(w http.ResponseWriter, r *http.Request)

// server is an OpenAI API stand-in that answers requests with scripted
// replies, in order, and records what it received; a request finds no
// reply left fails the test.
type server struct {
	*fakeapi.Server
	t testing.TB
}

func newServer(t testing.TB, replies ...reply) server {
	s := server{fakeapi.New(t, &fakeapi.Options{NoAnswer: `{"error":{"message":"no reply scripted"}}`, FailUnanswered: true}), t}
	s.add(replies...)
	return s
}

// add appends replies to the script.
func (s server) add(replies ...reply) {
	for _, r := range replies {
		s.Add(fakeapi.Answer{Handler: http.HandlerFunc(r)})
	}
}

func (s server) received() []request { return s.Requests() }

// body returns the decoded JSON body of request i.
func (s server) body(i int) map[string]any {
	s.t.Helper()
	return s.JSON(i)
}

// model returns a model talking to the server, without retries.
func (s server) model(api openai.API) *openai.Model {
	s.t.Helper()
	m, err := openai.New(&openai.Options{
		Model:      "gpt-test",
		APIKey:     "sk-test",
		BaseURL:    s.URL + "/v1",
		HTTPClient: s.Client(),
		MaxRetries: openai.NoRetries,
		API:        api,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

// jsonReply answers with a status and a JSON body.
func jsonReply(status int, body string) reply {
	return fakeapi.Answer{Status: status, Body: body}.ServeHTTP
}

// recordedReply answers with a recorded response.
func recordedReply(e recording.Exchange) reply { return fakeapi.Recorded(e).ServeHTTP }

// apiError answers with an error in the API's error format.
func apiError(status int, message string) reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "test_error", "param": nil, "code": nil}})
	return jsonReply(status, string(b))
}

// sseReply answers with server-sent events, each a "data:" line (or, when
// it starts with "event:", the lines given), followed by what end says.
func sseReply(end streamEnd, events ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for _, e := range events {
			io.WriteString(w, sseEvent(e))
			f.Flush()
		}
		switch end {
		case endDone:
			io.WriteString(w, "data: [DONE]\n\n")
		case endAbort:
			f.Flush()
			panic(http.ErrAbortHandler) // the connection is cut
		}
	}
}

type streamEnd int

const (
	endDone  streamEnd = iota // data: [DONE]
	endClean                  // the body ends, nothing more
	endAbort                  // the connection breaks
)

func sseEvent(e string) string {
	if strings.HasPrefix(e, "event:") {
		return e + "\n\n"
	}
	return "data: " + e + "\n\n"
}

// responsesEvent returns an SSE event of the Responses API: the type as the
// event name and the JSON object (with its "type" set) as data.
func responsesEvent(typ string, fields string) string {
	data := `{"type":"` + typ + `"`
	if fields != "" {
		data += "," + fields
	}
	data += "}"
	return "event: " + typ + "\ndata: " + data
}

// checkGolden compares a request body with the golden file
// testdata/name.txtar (see [fakeapi.Golden]).
func checkGolden(t *testing.T, name, what string, body []byte) {
	t.Helper()
	fakeapi.Golden(t, name, what, body)
}

// requestCase is a request pinned by a golden file: a prompt sent as a
// call or as a stream.
type requestCase struct {
	name, what string // the golden file's name and what it pins
	prompt     *toolgate.Prompt
	stream     bool
}

// checkRequests sends each case's prompt through a model of api, answered
// with complete or stream, and checks the request: a POST to path whose
// body is the case's golden file, and what check (when not nil) says.
func checkRequests(t *testing.T, api openai.API, path string, complete, stream reply, tests []requestCase, check func(t *testing.T, req request)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := complete
			if tt.stream {
				answer = stream
			}
			s := newServer(t, answer)
			if _, err := fakeapi.Generate(t.Context(), s.model(api), tt.prompt, tt.stream); err != nil {
				t.Fatal(err)
			}
			req := s.received()[0]
			if req.Method != http.MethodPost || req.Path != path {
				t.Errorf("got %s %s, want POST %s", req.Method, req.Path, path)
			}
			if check != nil {
				check(t, req)
			}
			checkGolden(t, tt.name, tt.what, req.Body)
		})
	}
}

// collect reads a model stream to its end, returning the chunks and the
// error that ended it.
func collect(seq func(func(*toolgate.Chunk, error) bool)) ([]*toolgate.Chunk, error) {
	var chunks []*toolgate.Chunk
	for c, err := range seq {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}
