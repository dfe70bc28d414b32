package openai_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/openai"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// request is one request the fake server received.
type request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// reply answers one request of the fake server.
type reply func(w http.ResponseWriter, r *http.Request)

// server is an OpenAI API stand-in that answers requests with scripted
// replies, in order, and records what it received.
type server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []request
}

func newServer(t testing.TB, replies ...reply) *server {
	s := &server{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var next reply
	if len(s.replies) > 0 {
		next, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	if next == nil {
		s.t.Errorf("unexpected request %s %s: no reply scripted", r.Method, r.URL.Path)
		http.Error(w, `{"error":{"message":"no reply scripted"}}`, http.StatusTeapot)
		return
	}
	next(w, r)
}

// add appends replies to the script.
func (s *server) add(replies ...reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

func (s *server) received() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

// body returns the decoded JSON body of request i.
func (s *server) body(i int) map[string]any {
	s.t.Helper()
	reqs := s.received()
	if i >= len(reqs) {
		s.t.Fatalf("got %d requests, want at least %d", len(reqs), i+1)
	}
	var v map[string]any
	if err := json.Unmarshal(reqs[i].Body, &v); err != nil {
		s.t.Fatalf("request %d: body is not JSON: %v", i, err)
	}
	return v
}

// model returns a model talking to the server, without retries.
func (s *server) model(api openai.API) *openai.Model {
	s.t.Helper()
	m, err := openai.New(&openai.Options{
		Model:      "gpt-test",
		APIKey:     "sk-test",
		BaseURL:    s.srv.URL + "/v1",
		HTTPClient: s.srv.Client(),
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
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

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

// checkGolden compares a request body with the golden file testdata/name.txtar,
// a txtar archive whose comment says what the file pins and whose one file,
// request.json, is the body with sorted keys. With -update it writes the
// file instead.
func checkGolden(t *testing.T, name, what string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	pretty, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s\n-- request.json --\n%s\n", what, pretty)
	path := filepath.Join("testdata", name+".txtar")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	// Compare the JSON only: the comment is documentation.
	_, wantJSON, ok := bytes.Cut(want, []byte("\n-- request.json --\n"))
	if !ok {
		t.Fatalf("%s: no request.json section", path)
	}
	_, gotJSON, _ := strings.Cut(got, "\n-- request.json --\n")
	if diff := cmp.Diff(string(wantJSON), gotJSON); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
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
