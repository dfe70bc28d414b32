package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
)

// sendKeyed sends a request with an Idempotency-Key (none when idem is "")
// and returns the recorded response.
func (f *fixture) sendKeyed(ctx context.Context, method, path, key, idem, body string) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func decodeBody(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return out
}

var flightInput = `{"input":"` + flightdemo.Input + `"}`

// TestIdempotentMessage: a message retried with its key is answered with
// the first outcome, byte for byte, without a second turn; another body
// with the key is 422; the key of one conversation's endpoint is not the
// key of another's; malformed keys are 400.
func TestIdempotentMessage(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	first := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "k-1", flightInput)
	if first.Code != 200 || decodeBody(t, first)["status"] != "paused" {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	again := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "k-1", flightInput)
	if again.Code != 200 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %d %s (replayed %q), want the first response", again.Code, again.Body, again.Header().Get("Idempotent-Replayed"))
	}
	if n := len(f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["messages"].([]any)); n != 2 {
		t.Errorf("%d messages after a retried message, want 2 (one turn)", n)
	}
	other := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "k-1", `{"input":"something else"}`)
	if other.Code != 422 || decodeBody(t, other)["error"] != "idempotency_key_reused" {
		t.Errorf("another body with the key: %d %s, want 422 idempotency_key_reused", other.Code, other.Body)
	}
	// Without the key the request runs (and meets the open pause).
	if rec := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "", flightInput); rec.Code != 409 {
		t.Errorf("without a key: %d %s, want 409 pause_open", rec.Code, rec.Body)
	}
	// The same key on another conversation is another request.
	conv2 := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	if rec := f.sendKeyed(ctx, "POST", messagesPath(conv2), travellerKey, "k-1", flightInput); rec.Code != 200 || decodeBody(t, rec)["conversation_id"] != conv2 {
		t.Errorf("the key on another conversation: %d %s, want its own turn", rec.Code, rec.Body)
	}
	// A refusal is an outcome too: stored, and answered again.
	guest := f.sendKeyed(ctx, "POST", messagesPath(conv), guestKey, "k-1", flightInput)
	if guest.Code != 404 {
		t.Errorf("another caller's post: %d %s, want 404", guest.Code, guest.Body)
	}

	for name, keys := range map[string][]string{
		"too long": {strings.Repeat("k", 256)}, "a space": {"a b"}, "a control": {"a\x01"},
		"not ASCII": {"clé"}, "twice": {"a", "b"}, "empty": {""},
	} {
		req := httptest.NewRequestWithContext(ctx, "POST", messagesPath(conv2), strings.NewReader(flightInput))
		req.Header.Set("Authorization", "Bearer "+travellerKey)
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != 400 || decodeBody(t, rec)["error"] != "invalid_idempotency_key" {
			t.Errorf("key %s: %d %s, want 400 invalid_idempotency_key", name, rec.Code, rec.Body)
		}
	}
	if rec := f.sendKeyed(ctx, "POST", messagesPath(conv2), travellerKey, strings.Repeat("k", 255), flightInput); rec.Code != 409 {
		t.Errorf("a key of 255 bytes: %d %s, want the request to run (409 pause_open)", rec.Code, rec.Body)
	}
	req := httptest.NewRequestWithContext(ctx, "POST", messagesPath(conv2), strings.NewReader(flightInput))
	req.Header.Set("Authorization", "Bearer "+travellerKey)
	req.Header.Set("Idempotency-Key", "k-stream")
	req.Header.Set("Accept", "text/event-stream")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Errorf("a key with an event stream: %d, want 400", rec.Code)
	}
}

// TestIdempotentDecisionMemory: with the records in memory a decision
// retried with its key gets the first outcome, and the tool ran once.
func TestIdempotentDecisionMemory(t *testing.T) {
	f := newFixtureWith(t, memory.New(), flightdemo.Model(), nil)
	conv, pause := f.pause(travellerKey)
	first := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	if first.Code != 200 {
		t.Fatalf("first decision: %d %s", first.Code, first.Body)
	}
	again := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	if again.Code != 200 || again.Body.String() != first.Body.String() {
		t.Errorf("retry: %d %s, want the first response", again.Code, again.Body)
	}
	// Another approver's request with the same key is theirs: 409.
	if rec := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approver2Key, "d-1", allowBook); rec.Code != 409 {
		t.Errorf("another approver with the key: %d %s, want 409 already_decided", rec.Code, rec.Body)
	}
	if _, book := f.runs(); book != 1 {
		t.Errorf("bookFlight ran %d times, want 1", book)
	}
}

// faultyAppends is a SQLite store whose appends of the model's answer
// (or, with pauses, of a paused reply) fail once armed: after committing
// (the answer of the commit lost, as with a connection dropped
// mid-commit) when lost is set, before writing anything otherwise. With
// gate set, such an append waits for it to close before committing, and
// reached is closed when one is waiting.
type faultyAppends struct {
	txStore
	pauses  bool
	lost    bool
	armed   atomic.Bool
	gate    chan struct{}
	reached chan struct{}
}

// txStore is a conversation store keeping the server's records too.
type txStore interface {
	toolgate.ConversationStore
	Records(context.Context) (records.Store, error)
}

func (s *faultyAppends) Unwrap() toolgate.ConversationStore { return s.txStore }

func (s *faultyAppends) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	last, _ := p.Messages[len(p.Messages)-1].(*toolgate.AssistantMessage)
	match := last != nil && (p.Pause != nil) == s.pauses && (s.pauses || !last.HasToolCalls())
	if !match {
		return s.txStore.Append(ctx, id, p)
	}
	if s.gate != nil {
		close(s.reached)
		<-s.gate
	}
	if !s.armed.Swap(false) {
		return s.txStore.Append(ctx, id, p)
	}
	if s.lost {
		if err := s.txStore.Append(ctx, id, p); err != nil {
			return err
		}
	}
	return errors.New("connection lost")
}

func newFaultyFixture(t *testing.T, fs *faultyAppends) (*fixture, records.Store) {
	st, err := sqlite.Open(t.Context(), t.TempDir()+"/toolgate.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fs.txStore = st
	return newFixtureWith(t, fs, flightdemo.Model(), nil), mustRecords(t, st)
}

// TestDecisionAnswerCommitLost: the answer of a decision commits but its
// commit's reply is lost. The decision stands as stored — answered 200
// with the outcome, its record "decided", not "failed" — and a retry with
// the key gets the same answer; the tool ran once.
func TestDecisionAnswerCommitLost(t *testing.T) {
	fs := &faultyAppends{lost: true}
	f, rs := newFaultyFixture(t, fs)
	conv, pause := f.pause(travellerKey)
	fs.armed.Store(true)
	first := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	out := decodeBody(t, first)
	if first.Code != 200 || out["status"] != "completed" || !strings.Contains(out["text"].(string), "booked") {
		t.Fatalf("decision whose answer's commit reply was lost: %d %s, want 200 completed", first.Code, first.Body)
	}
	if d := out["decision"].(map[string]any); d["outcome"] != "decided" {
		t.Errorf("answered decision %v, want outcome decided", d)
	}
	if rec, err := rs.Decision(t.Context(), conv, pause); err != nil || rec.Outcome != records.OutcomeDecided {
		t.Errorf("decision record %+v, %v; want decided", rec, err)
	}
	again := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	if again.Code != 200 || again.Body.String() != first.Body.String() {
		t.Errorf("retry: %d %s, want the first response", again.Code, again.Body)
	}
	if _, book := f.runs(); book != 1 {
		t.Errorf("bookFlight ran %d times, want 1", book)
	}
}

// TestMessageCommitLost: a message whose paused reply commits but whose
// commit's reply is lost is answered 500; the retry with its key gets the
// turn as stored (the pause), and no second turn runs. When the append did
// not commit, the retry runs the turn afresh.
func TestMessageCommitLost(t *testing.T) {
	for _, lost := range []bool{true, false} {
		name := map[bool]string{true: "committed", false: "not committed"}[lost]
		t.Run(name, func(t *testing.T) {
			fs := &faultyAppends{pauses: true, lost: lost}
			f, _ := newFaultyFixture(t, fs)
			ctx := t.Context()
			conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
			fs.armed.Store(true)
			if rec := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "m-1", flightInput); rec.Code != 500 {
				t.Fatalf("first: %d %s, want 500", rec.Code, rec.Body)
			}
			retry := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "m-1", flightInput)
			out := decodeBody(t, retry)
			if retry.Code != 200 || out["status"] != "paused" {
				t.Fatalf("retry: %d %s, want 200 paused", retry.Code, retry.Body)
			}
			if replayed := retry.Header().Get("Idempotent-Replayed") == "true"; replayed != lost {
				t.Errorf("retry replayed %v, want %v", replayed, lost)
			}
			got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
			if n := len(got["messages"].([]any)); n != 2 {
				t.Errorf("%d messages, want 2: one turn", n)
			}
			if p := got["pause"].(map[string]any); p["id"] != out["pause"].(map[string]any)["id"] {
				t.Errorf("open pause %v, the retry answered %v", p["id"], out["pause"])
			}
			if item := f.inboxItem(approverKey); item == nil || item["conversation_id"] != conv {
				t.Errorf("inbox %v, want the pause", item)
			}
			// Settled: answered the same from now on.
			if again := f.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "m-1", flightInput); again.Body.String() != retry.Body.String() {
				t.Errorf("third attempt: %d %s, want the settled answer %s", again.Code, again.Body, retry.Body)
			}
		})
	}
}

// TestIdempotentDecisionClientGone: the client of a decision goes away
// while the answer commits. A retry meanwhile is 409 with Retry-After; the
// decision is carried out all the same, and a retry afterwards gets its
// outcome. The tool ran once.
func TestIdempotentDecisionClientGone(t *testing.T) {
	fs := &faultyAppends{gate: make(chan struct{}), reached: make(chan struct{})}
	f, _ := newFaultyFixture(t, fs)
	conv, pause := f.pause(travellerKey)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- f.sendKeyed(ctx, "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook) }()
	<-fs.reached
	busy := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	if busy.Code != 409 || decodeBody(t, busy)["error"] != "idempotency_key_in_use" || busy.Header().Get("Retry-After") == "" {
		t.Errorf("retry while the first runs: %d %s (Retry-After %q), want 409 idempotency_key_in_use with Retry-After", busy.Code, busy.Body, busy.Header().Get("Retry-After"))
	}
	cancel() // the client is gone
	close(fs.gate)
	first := <-done
	retry := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	out := decodeBody(t, retry)
	if retry.Code != 200 || out["status"] != "completed" || retry.Body.String() != first.Body.String() {
		t.Errorf("retry after the first ended: %d %s; the first answered %d %s", retry.Code, retry.Body, first.Code, first.Body)
	}
	if _, book := f.runs(); book != 1 {
		t.Errorf("bookFlight ran %d times, want 1", book)
	}
}
