package server_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store/postgres"
)

// pgInstances returns two instances of the service on one PostgreSQL
// schema: the first on a store with the faults of fs, the second on a
// plain store.
func pgInstances(t *testing.T, fs *faultyAppends) (a, b *fixture) {
	url, schema := pgtest.Schema(t, "toolgate_idem_test_")
	open := func() *postgres.Store {
		st, err := postgres.Open(t.Context(), url, &postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	fs.txStore = open()
	return newFixtureWith(t, fs, flightdemo.Model(), nil), newFixtureWith(t, open(), flightdemo.Model(), nil)
}

// TestMessageCommitLostPostgres: on one instance a message's paused reply
// commits but the commit's reply is lost (500); the retry with the key on
// the other instance gets the turn as stored, and no second turn runs.
func TestMessageCommitLostPostgres(t *testing.T) {
	fs := &faultyAppends{pauses: true, lost: true}
	a, b := pgInstances(t, fs)
	ctx := t.Context()
	conv := a.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	fs.armed.Store(true)
	if rec := a.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "m-1", flightInput); rec.Code != 500 {
		t.Fatalf("first: %d %s, want 500", rec.Code, rec.Body)
	}
	retry := b.sendKeyed(ctx, "POST", messagesPath(conv), travellerKey, "m-1", flightInput)
	if out := decodeBody(t, retry); retry.Code != 200 || out["status"] != "paused" || retry.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry on the other instance: %d %s, want the stored pause", retry.Code, retry.Body)
	}
	if n := len(b.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["messages"].([]any)); n != 2 {
		t.Errorf("%d messages, want 2: one turn", n)
	}
	if item := b.inboxItem(approverKey); item == nil || item["conversation_id"] != conv {
		t.Errorf("inbox %v, want the pause", item)
	}
}

// TestIdempotentDecisionPostgresTwoInstances: a decision runs on one
// instance while its client goes away; the retry on the other instance is
// 409 with Retry-After while it runs, and its outcome afterwards. The tool
// ran once.
func TestIdempotentDecisionPostgresTwoInstances(t *testing.T) {
	fs := &faultyAppends{gate: make(chan struct{}), reached: make(chan struct{})}
	a, b := pgInstances(t, fs)
	conv, pause := a.pause(travellerKey)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- a.sendKeyed(ctx, "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook) }()
	<-fs.reached
	busy := b.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	if busy.Code != 409 || decodeBody(t, busy)["error"] != "idempotency_key_in_use" || busy.Header().Get("Retry-After") == "" {
		t.Errorf("retry on the other instance while the first runs: %d %s, want 409 idempotency_key_in_use with Retry-After", busy.Code, busy.Body)
	}
	cancel()
	close(fs.gate)
	first := <-done
	retry := b.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "d-1", allowBook)
	if out := decodeBody(t, retry); retry.Code != 200 || out["status"] != "completed" || retry.Body.String() != first.Body.String() {
		t.Errorf("retry after the first ended: %d %s; the first answered %d %s", retry.Code, retry.Body, first.Code, first.Body)
	}
	if _, book := a.runs(); book != 1 {
		t.Errorf("bookFlight ran %d times on the first instance, want 1", book)
	}
	if _, book := b.runs(); book != 0 {
		t.Errorf("bookFlight ran %d times on the second instance, want 0", book)
	}
}
