// Package fakeapi is the test kit the provider adapters share: a stand-in
// for a provider's HTTP API that replays canned answers in order and
// records what it received, builders of server-sent event streams, a
// check of request bodies against golden files, and checks that every
// adapter must pass the same way (a stream ends its request when the
// consumer stops, a cancelled context, error kinds, a live turn).
//
// A test starts a [Server] with the answers it needs, points the adapter
// at [Server.URL], runs the adapter and reads what was sent:
//
//	s := fakeapi.New(t, nil, fakeapi.JSON(`{"ok":true}`))
//	m := newModel(s.URL)
//	... m.Generate(ctx, prompt) ...
//	if got := s.JSON(0)["model"]; got != "m" { ... }
//
// Each adapter keeps its own provider-specific answers (its error format,
// its stream events) and assertions in its own tests.
package fakeapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/provider/internal/recording"
)

// Answer is one canned HTTP answer of a [Server].
type Answer struct {
	Status  int               // the HTTP status; 0 means 200
	Header  map[string]string // set on the answer; Content-Type defaults to application/json
	Body    string            // the body
	Handler http.HandlerFunc  // when set, answers instead of the fields above

	rec *recording.Exchange // the recorded exchange the answer replays, if any
}

// JSON is a 200 answer with a JSON body.
func JSON(body string) Answer { return Answer{Body: body} }

// Stream is a 200 answer with a server-sent event stream as its body
// (see [Events] and [Data]).
func Stream(body string) Answer {
	return Answer{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: body}
}

// Recorded is an answer replaying the answer of a recorded exchange: its
// status and body, as a JSON body or an event stream.
func Recorded(e recording.Exchange) Answer {
	a := Answer{Status: e.Status, Body: string(e.Response)}
	if e.Stream {
		a.Header = map[string]string{"Content-Type": "text/event-stream"}
	}
	a.rec = &e
	return a
}

// Options configures a [Server]; nil means all defaults.
type Options struct {
	// NoAnswer is the body, in the provider's error format, of the answer
	// (status 418) to a request that finds no answer left. Empty means a
	// generic JSON error.
	NoAnswer string
	// FailUnanswered reports a request that finds no answer left as an
	// error of the test. False means it is answered with NoAnswer only.
	FailUnanswered bool
}

// Request is one request a [Server] received.
type Request struct {
	Method string
	URI    string // the request URI: path and query
	Path   string
	Header http.Header
	Body   []byte
}

// Server is an httptest server that answers requests with its answers, in
// order, and records every request. It is safe for concurrent use; the
// accessors fail the test when asked for a request that did not come.
type Server struct {
	// URL is the base URL of the server, without a trailing slash.
	URL string

	// fixed at creation
	tb    testing.TB
	srv   *httptest.Server
	opts  Options
	judge func(body []byte) (Answer, bool)     // called with mu held; true rejects
	learn func(reply recording.Exchange) error // called with mu held

	mu       sync.Mutex
	answers  []Answer
	requests []Request
}

// New starts a server answering with answers, closed when tb ends.
func New(tb testing.TB, opts *Options, answers ...Answer) *Server {
	tb.Helper()
	s := &Server{tb: tb, answers: answers}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.NoAnswer == "" {
		s.opts.NoAnswer = `{"error":{"message":"no answer left in the test"}}`
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Add appends answers to those not yet given.
func (s *Server) Add(answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, answers...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, URI: r.URL.RequestURI(), Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	if s.judge != nil {
		if a, rejected := s.judge(body); rejected {
			s.mu.Unlock()
			a.ServeHTTP(w, r)
			return
		}
	}
	if len(s.answers) == 0 {
		s.mu.Unlock()
		if s.opts.FailUnanswered {
			s.tb.Errorf("unexpected request %s %s: no answer left", r.Method, r.URL.Path)
		}
		Answer{Status: http.StatusTeapot, Body: s.opts.NoAnswer}.ServeHTTP(w, r)
		return
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	if s.learn != nil && a.rec != nil {
		if err := s.learn(*a.rec); err != nil {
			s.tb.Errorf("recorded reply: %v", err)
		}
	}
	s.mu.Unlock()
	a.ServeHTTP(w, r)
}

// ServeHTTP answers r with a, as a [Server] does.
func (a Answer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.Handler != nil {
		a.Handler(w, r)
		return
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	w.WriteHeader(a.Status)
	io.WriteString(w, a.Body)
}

// Count returns how many requests the server received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Request returns request i (from 0), failing the test when fewer came.
func (s *Server) Request(i int) Request {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.requests) {
		s.tb.Fatalf("got %d requests, want at least %d", len(s.requests), i+1)
	}
	return s.requests[i]
}

// Body returns the body of request i.
func (s *Server) Body(i int) []byte {
	s.tb.Helper()
	return s.Request(i).Body
}

// JSON returns the body of request i decoded as a JSON object, failing the
// test when it is not one.
func (s *Server) JSON(i int) map[string]any {
	s.tb.Helper()
	body := s.Request(i).Body
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		s.tb.Fatalf("request %d is not JSON: %v\n%s", i, err, body)
	}
	return v
}

// Path returns the URL path of request i.
func (s *Server) Path(i int) string {
	s.tb.Helper()
	return s.Request(i).Path
}

// URI returns the request URI (path and query) of request i.
func (s *Server) URI(i int) string {
	s.tb.Helper()
	return s.Request(i).URI
}

// Header returns the header of request i.
func (s *Server) Header(i int) http.Header {
	s.tb.Helper()
	return s.Request(i).Header
}

// Close shuts the server down before the test ends, as a way to make
// requests to [Server.URL] fail.
func (s *Server) Close() { s.srv.Close() }
