package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestResponseWriterFlushes checks that handlers behind the middleware can
// flush through it, as event streams do.
func TestResponseWriterFlushes(t *testing.T) {
	rec := httptest.NewRecorder()
	w := &responseWriter{ResponseWriter: rec}
	if err := http.NewResponseController(w).Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if !rec.Flushed || w.status != http.StatusOK {
		t.Errorf("flushed %v, status %d; want a flush and 200", rec.Flushed, w.status)
	}
}

func TestRequestIDGenerated(t *testing.T) {
	a, b := requestID(""), requestID("")
	if a == b || len(a) == 0 || len(a) > maxRequestIDLen || requestID(a) != a {
		t.Errorf("generated ids %q and %q: want distinct, acceptable ids", a, b)
	}
}

// FuzzRequestID checks that whatever a client sends as X-Request-Id, the
// id the server uses is short, printable and safe in a log line, and is
// the client's own only when that one already was.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"", "req-42", "3f2c1a9e-5b7d-4c1e-9f3a-0b8d7e6c5a41", "a b", "x\nlevel=ERROR", "idé", string(make([]byte, 200))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, given string) {
		id := requestID(given)
		if id == "" || len(id) > maxRequestIDLen {
			t.Fatalf("requestID(%q) = %q: empty or too long", given, id)
		}
		for _, r := range id {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
				t.Fatalf("requestID(%q) = %q holds %q", given, id, r)
			}
		}
		if id != given && requestID(id) != id {
			t.Fatalf("the new id %q is not acceptable itself", id)
		}
	})
}
