package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/sse"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
)

// eventsConfig configures newEventsServer.
type eventsConfig struct {
	store  toolgate.ConversationStore // nil: a memory store
	broker server.Broker              // nil: the server's own
	ttl    time.Duration              // the pauses' time-to-live; 0: none
	// records are the server's records; nil: the SQLite store's when
	// store is one, else the server's own in memory.
	records records.Store
}

// eventsFixture is a fixture with two agents: "flights", whose bookFlight
// calls the "approver" role decides, and "trains", whose calls only the
// "conductor" role decides.
type eventsFixture struct {
	*fixture
	store toolgate.ConversationStore
}

func newEventsFixture(t testing.TB, ec eventsConfig) *eventsFixture {
	t.Helper()
	if ec.store == nil {
		ec.store = memory.New()
	}
	if st, ok := ec.store.(*sqlite.Store); ok && ec.records == nil {
		ec.records = mustRecords(t, st)
	}
	tools := &flightdemo.Tools{}
	opts := &toolgate.ClientOptions{Store: ec.store, SystemPrompt: flightdemo.SystemPrompt}
	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{
			"flights": {
				Client:         toolgate.NewClient(flightdemo.Model(), tools.Tools(), opts),
				RequesterRoles: []string{"traveller"},
				Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
			},
			"trains": {
				Client:         toolgate.NewClient(flightdemo.Model(), (&flightdemo.Tools{}).Tools(), opts),
				RequesterRoles: []string{"traveller"},
				Approvals:      []server.ApprovalRule{{Roles: []string{"conductor"}}},
			},
		},
		APIKeys: []server.APIKey{
			key(travellerKey, "ada", "traveller"),
			key(approverKey, "bob", "approver"),
			key(guestKey, "eve", "guest"),
			key(adminKey, "root", "admin"),
		},
		ReadAllRoles: []string{"admin"},
		PauseTTL:     ec.ttl,
		Broker:       ec.broker,
		Records:      ec.records,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &eventsFixture{fixture: &fixture{t: t, h: srv, srv: srv, tools: tools}, store: ec.store}
}

// create starts a conversation of the traveller with agent and returns its
// id.
func (f *eventsFixture) create(agent string) string {
	f.t.Helper()
	return f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"`+agent+`"}`)["id"].(string)
}

// post posts the story's input to conv and returns its pause's id.
func (f *eventsFixture) post(conv string) string {
	f.t.Helper()
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		f.t.Fatalf("turn %v, want paused", out)
	}
	return out["pause"].(map[string]any)["id"].(string)
}

// pipeWriter is an [http.ResponseWriter] whose body goes into a pipe, so
// that a test reads a stream as the handler writes it, in or out of a
// synctest bubble.
type pipeWriter struct {
	header  http.Header
	pw      *io.PipeWriter
	once    sync.Once
	started chan struct{} // closed once the status is set
	status  int           // set before started is closed
}

func (p *pipeWriter) Header() http.Header { return p.header }

func (p *pipeWriter) WriteHeader(code int) {
	p.once.Do(func() {
		p.status = code
		close(p.started)
	})
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.pw.Write(b)
}

// Flush implements [http.Flusher]: the pipe is unbuffered.
func (p *pipeWriter) Flush() {}

// stream is a request served into a pipe.
type stream struct {
	t      testing.TB
	status int
	header http.Header
	body   *io.PipeReader
	r      *sse.Reader
	cancel context.CancelFunc
	done   chan struct{} // closed when the handler has returned
}

// open sends a GET request to h, with the API key and the headers given
// as name/value pairs, and returns once the handler has set the status.
func open(t testing.TB, h http.Handler, path, key string, headers ...string) *stream {
	t.Helper()
	return serveInto(t, h, "GET", path, key, "", headers...)
}

// serveInto runs a request on h in a goroutine, its response going into a
// pipe, and returns once the handler has set the status.
func serveInto(t testing.TB, h http.Handler, method, path, key, body string, headers ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, started: make(chan struct{})}
	s := &stream{t: t, body: pr, r: sse.NewReader(pr), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		h.ServeHTTP(w, req)
		w.WriteHeader(http.StatusOK)
		pw.Close()
	}()
	<-w.started
	s.status, s.header = w.status, w.header.Clone()
	t.Cleanup(s.close)
	return s
}

// close disconnects the client and waits for the handler to return.
func (s *stream) close() {
	s.cancel()
	s.body.Close()
	<-s.done
}

// next returns the next event, skipping heartbeats; it fails the test
// when the stream ends or only heartbeats come.
func (s *stream) next() *sse.Event {
	s.t.Helper()
	for range 100 {
		ev, err := s.r.Next()
		if err != nil {
			s.t.Fatalf("stream ended: %v", err)
		}
		if ev.Comment == "" {
			return ev
		}
	}
	s.t.Fatal("100 heartbeats and no event")
	return nil
}

// nextRaw returns the next event or comment, or the error that ended the
// stream.
func (s *stream) nextRaw() (*sse.Event, error) { return s.r.Next() }

// expect reads the next event and checks its name and data.
func (s *stream) expect(kind, conv, pause string) *sse.Event {
	s.t.Helper()
	ev := s.next()
	want := map[string]any{"conversation_id": conv, "kind": kind}
	if pause != "" {
		want["pause_id"] = pause
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &got); err != nil {
		s.t.Fatalf("event %q: data %q is not JSON: %v", ev.Type, ev.Data, err)
	}
	if ev.Type != kind || !equalJSON(got, want) {
		s.t.Fatalf("event %q %s, want %q %v", ev.Type, ev.Data, kind, want)
	}
	return ev
}

// errorBody reads an error response's body and returns its code.
func (s *stream) errorBody() string {
	s.t.Helper()
	b, err := io.ReadAll(s.body)
	if err != nil && !errors.Is(err, io.ErrClosedPipe) {
		s.t.Fatal(err)
	}
	var out struct{ Error string }
	if err := json.Unmarshal(b, &out); err != nil {
		s.t.Fatalf("body %q: %v", b, err)
	}
	return out.Error
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
