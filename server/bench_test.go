package server_test

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkPauseAndDecide measures one turn that pauses and its decision,
// through the handler, with the scripted model on SQLite: create a
// conversation, post the message (pause), decide (the tools run, the turn
// completes).
func BenchmarkPauseAndDecide(b *testing.B) {
	f := newFixture(b, nil)
	body := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
	b.ReportAllocs()
	for b.Loop() {
		conv, pause := f.pause(travellerKey)
		req := httptest.NewRequest("POST", decisionsPath(conv, pause), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+approverKey)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("decision: %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkInbox measures the approver's inbox over 100 open pauses.
func BenchmarkInbox(b *testing.B) {
	f := newFixture(b, nil)
	for range 100 {
		f.pause(travellerKey)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/v1/inbox", nil)
		req.Header.Set("Authorization", "Bearer "+approverKey)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("inbox: %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkMiddleware measures what every request pays for operations
// (request id, span, timeout, metrics, log line): GET /healthz through the
// server, whose handler itself does almost nothing, with the log line
// discarded and the global (no-op) tracer provider.
func BenchmarkMiddleware(b *testing.B) {
	f, _ := newOpsFixture(b, opsOptions{})
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != 200 {
			b.Fatalf("healthz: %d", rec.Code)
		}
	}
}

// BenchmarkHistory measures the approver's first history page over 100
// decided pauses: the history reads the records of every conversation.
func BenchmarkHistory(b *testing.B) {
	f := newFixture(b, nil)
	body := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
	for range 100 {
		conv, pause := f.pause(travellerKey)
		f.must(200, "POST", decisionsPath(conv, pause), approverKey, body)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/v1/history", nil)
		req.Header.Set("Authorization", "Bearer "+approverKey)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("history: %d %s", rec.Code, rec.Body)
		}
	}
}
