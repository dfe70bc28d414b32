package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/sse"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

const acceptEvents = "text/event-stream"

// turnEvents reads a streamed turn to its end: the text of its chunk
// events, and its last event.
func turnEvents(t *testing.T, s *stream) (text string, last *sse.Event) {
	t.Helper()
	var b strings.Builder
	for {
		ev, err := s.nextRaw()
		if err != nil {
			if last == nil {
				t.Fatalf("stream ended without an outcome: %v", err)
			}
			return b.String(), last
		}
		if ev.Comment != "" {
			continue
		}
		if last != nil {
			t.Fatalf("event %q %s after the outcome %q", ev.Type, ev.Data, last.Type)
		}
		if ev.ID != "" {
			t.Errorf("turn event %q has id %q, want none", ev.Type, ev.ID)
		}
		if ev.Type != "chunk" {
			last = ev
			continue
		}
		var c struct{ Text string }
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil || c.Text == "" {
			t.Fatalf("chunk %s: %v", ev.Data, err)
		}
		b.WriteString(c.Text)
	}
}

// turnOf decodes a turn outcome event.
func turnOf(t *testing.T, ev *sse.Event) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &out); err != nil {
		t.Fatalf("event %q: %s: %v", ev.Type, ev.Data, err)
	}
	return out
}

func messagesPath(conv string) string { return "/v1/conversations/" + conv + "/messages" }

func TestStreamedTurns(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	conv := f.create("flights")
	follow := open(t, f.h, eventsPath(conv), travellerKey)

	s := serveInto(t, f.h, "POST", messagesPath(conv), travellerKey, `{"input":"`+flightdemo.Input+`"}`, "Accept", "application/json, text/event-stream")
	if s.status != 200 || s.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, headers %v", s.status, s.header)
	}
	text, last := turnEvents(t, s)
	if want := "I will check the flight and book it."; text != want {
		t.Errorf("streamed text %q, want %q", text, want)
	}
	out := turnOf(t, last)
	pause, _ := out["pause"].(map[string]any)
	if last.Type != "paused" || out["status"] != "paused" || out["text"] != text || out["conversation_id"] != conv || pause == nil || len(pause["calls"].([]any)) != 2 {
		t.Fatalf("outcome %q %v", last.Type, out)
	}
	pauseID := pause["id"].(string)
	follow.expect("paused", conv, pauseID)
	if got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["pause"].(map[string]any)["id"]; got != pauseID {
		t.Errorf("stored pause %v, want %s", got, pauseID)
	}

	// The decision, streamed.
	s = serveInto(t, f.h, "POST", decisionsPath(conv, pauseID), approverKey, allowBookBody, "Accept", acceptEvents)
	text, last = turnEvents(t, s)
	if want := "VX205 is on time. Your seat on VX205 is booked."; text != want {
		t.Errorf("streamed text %q, want %q", text, want)
	}
	out = turnOf(t, last)
	if rec, _ := out["decision"].(map[string]any); last.Type != "completed" || out["status"] != "completed" || out["text"] != text || rec["outcome"] != "decided" || rec["decided_by"] != "bob" {
		t.Fatalf("outcome %q %v", last.Type, out)
	}
	follow.expect("decided", conv, pauseID)
	follow.expect("completed", conv, "")
	if s, b := f.runs(); s != 1 || b != 1 {
		t.Errorf("runs: status %d book %d, want 1 1", s, b)
	}

	// Refusals before the turn starts are plain JSON errors.
	pause2 := f.post(conv)
	for _, tc := range []struct {
		name, method, path, key, body, code string
		status                              int
	}{
		{"pause open", "POST", messagesPath(conv), travellerKey, `{"input":"hi"}`, "pause_open", 409},
		{"decided again", "POST", decisionsPath(conv, pauseID), approverKey, allowBookBody, "already_decided", 409},
		{"not the owner", "POST", messagesPath(conv), adminKey, `{"input":"hi"}`, "forbidden", 403},
		{"empty input", "POST", messagesPath(conv), travellerKey, `{"input":" "}`, "invalid_request", 400},
		{"invalid decisions", "POST", decisionsPath(conv, pause2), approverKey, `{"decisions":[]}`, "invalid_decisions", 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveInto(t, f.h, tc.method, tc.path, tc.key, tc.body, "Accept", acceptEvents)
			if ct := s.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if code := s.errorBody(); s.status != tc.status || code != tc.code {
				t.Errorf("got %d %s, want %d %s", s.status, code, tc.status, tc.code)
			}
		})
	}
}

func TestWantsEvents(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	for _, tc := range []struct {
		accept string
		stream bool
	}{
		{"text/event-stream", true},
		{"application/json;q=0.9, TEXT/EVENT-STREAM", true},
		{"text/event-stream; q=0.5", true},
		{"text/event-stream;q=0", false},
		{"text/event-stream;q=0.000", false},
		{"application/json", false},
		{"", false},
		{"*/*", false},
		{"text/event-stream;;;", false},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			conv := f.create("flights")
			s := serveInto(t, f.h, "POST", messagesPath(conv), travellerKey, `{"input":"`+flightdemo.Input+`"}`, "Accept", tc.accept)
			if got := s.header.Get("Content-Type") == "text/event-stream"; got != tc.stream {
				t.Errorf("streamed %v, want %v", got, tc.stream)
			}
			s.close()
		})
	}
}

// A turn that fails once its stream has begun ends with an error event;
// one that fails at once is a plain 500.
func TestStreamedTurnFails(t *testing.T) {
	model := scripted.New(
		scripted.Reply{Text: "Let me see. ", Err: errors.New("provider exploded")},
		scripted.Reply{Err: errors.New("provider down")},
	)
	srv, err := server.New(&server.Config{
		Agents:  map[string]*server.Agent{"a": {Client: toolgate.NewClient(model, nil, nil)}},
		APIKeys: []server.APIKey{{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f := &fixture{t: t, h: srv, srv: srv}
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	follow := open(t, srv, eventsPath(conv), travellerKey)

	s := serveInto(t, srv, "POST", messagesPath(conv), travellerKey, `{"input":"hi"}`, "Accept", acceptEvents)
	text, last := turnEvents(t, s)
	if out := turnOf(t, last); text != "Let me see. " || last.Type != "error" || out["error"] != "internal" || out["message"] != "internal error" {
		t.Errorf("text %q, last %q %v", text, last.Type, out)
	}
	follow.expect("appended", conv, "")

	s = serveInto(t, srv, "POST", messagesPath(conv), travellerKey, `{"input":"hi"}`, "Accept", acceptEvents)
	if code := s.errorBody(); s.status != 500 || code != "internal" {
		t.Errorf("failure before the first chunk: %d %s, want 500 internal", s.status, code)
	}
	follow.expect("appended", conv, "")
}

// gatedModel streams the first chunk of every reply of its model, then
// waits for release before the rest.
type gatedModel struct {
	toolgate.Model
	release chan struct{}
}

func (m *gatedModel) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		first := true
		for c, err := range m.Model.Stream(ctx, p) {
			if !yield(c, err) {
				return
			}
			if first {
				first = false
				<-m.release
			}
		}
	}
}

// A client that goes away mid-stream leaves the turn to complete and be
// stored, and nothing running: synctest fails a test whose bubble keeps
// goroutines.
func TestStreamedTurnDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		model := &gatedModel{Model: flightdemo.Model(), release: make(chan struct{})}
		store := memory.New()
		tools := &flightdemo.Tools{}
		srv, err := server.New(&server.Config{
			Agents: map[string]*server.Agent{"flights": {
				Client:    toolgate.NewClient(model, tools.Tools(), &toolgate.ClientOptions{Store: store}),
				Approvals: []server.ApprovalRule{{Roles: []string{"approver"}}},
			}},
			APIKeys: []server.APIKey{
				{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada"}},
				{SHA256: server.HashAPIKey(approverKey), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{t: t, h: srv, srv: srv, tools: tools}
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		follow := open(t, srv, eventsPath(conv), travellerKey)

		s := serveInto(t, srv, "POST", messagesPath(conv), travellerKey, `{"input":"`+flightdemo.Input+`"}`, "Accept", acceptEvents)
		if ev := s.next(); ev.Type != "chunk" {
			t.Fatalf("first event %q, want a chunk", ev.Type)
		}
		// The client leaves while the model is still writing.
		s.cancel()
		s.body.Close()
		synctest.Wait()
		close(model.release)
		<-s.done
		pause := f.storedIn(store, conv).Pause
		if pause == nil {
			t.Fatal("the abandoned turn's pause was not stored")
		}
		follow.expect("paused", conv, pause.ID)

		// The same for a streamed decision: the tools run, the answer is stored.
		s = serveInto(t, srv, "POST", decisionsPath(conv, pause.ID), approverKey, allowBookBody, "Accept", acceptEvents)
		s.cancel()
		s.body.Close()
		<-s.done
		c := f.storedIn(store, conv)
		if c.Pause != nil || len(c.Messages) != 4 {
			t.Fatalf("after the abandoned decision: pause %+v, %d messages; want none, 4", c.Pause, len(c.Messages))
		}
		if st, b := f.runs(); st != 1 || b != 1 {
			t.Errorf("runs: status %d book %d, want 1 1", st, b)
		}
		follow.expect("decided", conv, pause.ID)
		follow.expect("completed", conv, "")
		srv.Close()
		synctest.Wait()
	})
}

// storedIn returns conversation conv as store holds it.
func (f *fixture) storedIn(store toolgate.ConversationStore, conv string) *toolgate.Conversation {
	f.t.Helper()
	c, err := store.Load(context.Background(), conv)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// A streamed turn whose model is slow sends heartbeats meanwhile.
func TestStreamedTurnHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		model := &gatedModel{Model: flightdemo.Model(), release: make(chan struct{})}
		srv, err := server.New(&server.Config{
			Agents:  map[string]*server.Agent{"flights": {Client: toolgate.NewClient(model, (&flightdemo.Tools{}).Tools(), nil)}},
			APIKeys: []server.APIKey{{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		f := &fixture{t: t, h: srv, srv: srv}
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		s := serveInto(t, srv, "POST", messagesPath(conv), travellerKey, `{"input":"`+flightdemo.Input+`"}`, "Accept", acceptEvents)
		if ev := s.next(); ev.Type != "chunk" {
			t.Fatalf("first event %q, want a chunk", ev.Type)
		}
		start := time.Now()
		for i := range 2 {
			ev, err := s.nextRaw()
			if err != nil || ev.Comment != "ping" {
				t.Fatalf("heartbeat %d: %+v %v", i, ev, err)
			}
		}
		if got := time.Since(start); got != 30*time.Second {
			t.Errorf("two heartbeats after %v, want 30s", got)
		}
		close(model.release)
		if _, last := turnEvents(t, s); last.Type != "paused" {
			t.Errorf("outcome %q, want paused", last.Type)
		}
	})
}
