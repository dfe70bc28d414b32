package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestHeader(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 0},
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"30"}}, 30 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"1e400"}}, 0},
		{http.Header{"Retry-After": {"99999999999"}}, Max},
		{http.Header{"Retry-After": {"Sun, 01 Mar 2026 12:00:10 GMT"}}, 10 * time.Second},
		{http.Header{"Retry-After": {"Sun, 01 Mar 2026 11:00:00 GMT"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"9"}}, 9 * time.Second},
	} {
		if got := Header(tt.h, now); got != tt.want {
			t.Errorf("Header(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestRetryInfo(t *testing.T) {
	details := []map[string]any{
		{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{}},
		{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
	}
	if got := RetryInfo(details); got != 37*time.Second {
		t.Errorf("got %v, want 37s", got)
	}
	for _, d := range [][]map[string]any{nil, {{"@type": 1}}, {{"@type": retryInfoType, "retryDelay": 5}}} {
		if got := RetryInfo(d); got != 0 {
			t.Errorf("RetryInfo(%v) = %v, want 0", d, got)
		}
	}
}

func TestDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"37s": 37 * time.Second, "0.5s": 500 * time.Millisecond, " 2s ": 2 * time.Second,
		"": 0, "s": 0, "5": 0, "-1s": 0, "1e3s": 0, "NaNs": 0, "infs": 0, "9999999999s": Max,
	} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzDuration(f *testing.F) {
	for _, s := range []string{"37s", "0.5s", "-1s", "1e3s", "s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := Duration(s); d < 0 || d > Max {
			t.Fatalf("Duration(%q) = %v, out of range", s, d)
		}
		h := http.Header{"Retry-After": {s}, "Retry-After-Ms": {s}}
		if d := Header(h, time.Unix(0, 0)); d < 0 || d > Max {
			t.Fatalf("Header(%q) = %v, out of range", s, d)
		}
	})
}
