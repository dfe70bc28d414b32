package privacy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const analyzerText = "Zoë Ålund lives in Paris."

func presidio(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) *httptest.Server {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, int(calls.Add(1)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func okResults(w http.ResponseWriter, r *http.Request) {
	var req analyzeRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Text != analyzerText || req.Language != "en" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	// Code point offsets: "Zoë Ålund" is 0..9, "Paris" 19..24.
	w.Write([]byte(`[{"entity_type":"PERSON","start":0,"end":9,"score":0.85,"analysis_explanation":null},
		{"entity_type":"LOCATION","start":19,"end":24,"score":0.7},{"entity_type":"NEW_LABEL","start":4,"end":9,"score":0.6}]`))
}

func TestAnalyzer(t *testing.T) {
	srv := presidio(t, func(w http.ResponseWriter, r *http.Request, _ int) { okResults(w, r) })
	a := NewAnalyzer(srv.URL+"/analyze", nil)
	fs, err := a.Recognize(ctx, analyzerText, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3 || analyzerText[fs[0].Start:fs[0].End] != "Zoë Ålund" || fs[0].Type != Person ||
		analyzerText[fs[1].Start:fs[1].End] != "Paris" || fs[1].Type != Location || fs[2].Type != Generic {
		t.Fatalf("got %+v", fs)
	}
	r := NewRewriter(NewScanner(&ScannerOptions{Recognizers: append(Builtins(), a)}), NewVault())
	out, err := r.Tokenize(ctx, analyzerText)
	if err != nil || out != "[PERSON_1] lives in [LOCATION_1]." {
		t.Errorf("Tokenize: %q, %v", out, err)
	}
}

func TestAnalyzerFailures(t *testing.T) {
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, n int)
		opts    AnalyzerOptions
		wantErr bool
		calls   int
	}{
		{"500 then success", func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
			okResults(w, r)
		}, AnalyzerOptions{Backoff: time.Millisecond}, false, 2},
		{"always 503", func(w http.ResponseWriter, r *http.Request, n int) {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}, AnalyzerOptions{Backoff: time.Millisecond, Retries: 3}, true, 4},
		{"400 not retried", func(w http.ResponseWriter, r *http.Request, n int) {
			http.Error(w, "bad", http.StatusBadRequest)
		}, AnalyzerOptions{Backoff: time.Millisecond}, true, 1},
		{"garbage", func(w http.ResponseWriter, r *http.Request, n int) {
			w.Write([]byte(`<html>` + analyzerText))
		}, AnalyzerOptions{}, true, 1},
		{"wrong shape", func(w http.ResponseWriter, r *http.Request, n int) {
			w.Write([]byte(`{"entity_type":"PERSON"}`))
		}, AnalyzerOptions{}, true, 1},
		{"trailing data", func(w http.ResponseWriter, r *http.Request, n int) {
			w.Write([]byte(`[] []`))
		}, AnalyzerOptions{}, true, 1},
		{"missing field", func(w http.ResponseWriter, r *http.Request, n int) {
			w.Write([]byte(`[{"entity_type":"PERSON","start":0,"score":1}]`))
		}, AnalyzerOptions{}, true, 1},
		{"span out of range", func(w http.ResponseWriter, r *http.Request, n int) {
			w.Write([]byte(`[{"entity_type":"PERSON","start":0,"end":26,"score":1}]`))
		}, AnalyzerOptions{}, true, 1},
		{"oversized", func(w http.ResponseWriter, r *http.Request, n int) {
			w.Write([]byte(`[` + strings.Repeat(` `, 2000) + `]`))
		}, AnalyzerOptions{MaxResponseBytes: 1000}, true, 1},
		{"best effort", func(w http.ResponseWriter, r *http.Request, n int) {
			http.Error(w, "down", http.StatusBadGateway)
		}, AnalyzerOptions{Backoff: time.Millisecond, Retries: -1, BestEffort: true}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := presidio(t, func(w http.ResponseWriter, r *http.Request, n int) {
				calls.Add(1)
				tt.handler(w, r, n)
			})
			var reported error
			tt.opts.OnError = func(err error) { reported = err }
			a := NewAnalyzer(srv.URL, &tt.opts)
			fs, err := a.Recognize(ctx, analyzerText, nil)
			if got := int(calls.Load()); got != tt.calls {
				t.Errorf("%d calls, want %d", got, tt.calls)
			}
			if tt.wantErr {
				var ae *AnalyzerError
				if !errors.As(err, &ae) {
					t.Fatalf("got %v, want an AnalyzerError", err)
				}
				if strings.Contains(err.Error(), "Paris") || strings.Contains(err.Error(), "Zoë") {
					t.Errorf("error %q holds the text", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.opts.BestEffort && (len(fs) != 0 || reported == nil) {
				t.Errorf("best effort: findings %+v, reported %v", fs, reported)
			}
		})
	}
}

func TestAnalyzerTimeout(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	srv := presidio(t, func(w http.ResponseWriter, r *http.Request, n int) {
		calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	a := NewAnalyzer(srv.URL, &AnalyzerOptions{Timeout: 20 * time.Millisecond, Retries: 1, Backoff: time.Millisecond})
	_, err := a.Recognize(ctx, analyzerText, nil)
	var ae *AnalyzerError
	if !errors.As(err, &ae) || ae.Attempts != 2 || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("got %v, want a timeout after 2 attempts", err)
	}
	// Fail closed: a scan with the analyzer fails.
	s := NewScanner(&ScannerOptions{Recognizers: append(Builtins(), a)})
	if _, err := s.Scan(ctx, analyzerText); !errors.As(err, &ae) {
		t.Errorf("scan: got %v", err)
	}
	// Cancellation of the caller's context ends the retries.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Recognize(cctx, analyzerText, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: got %v", err)
	}
}

// The strings of one payload reach the analyzer in one request, and its
// findings land in the right strings.
func TestAnalyzerOneRequestPerPayload(t *testing.T) {
	var requests atomic.Int32
	srv := presidio(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		requests.Add(1)
		var req analyzeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		// Every "Zoë Ålund" is a person, in code points.
		out := []map[string]any{}
		runes := []rune(req.Text)
		name := []rune("Zoë Ålund")
		for i := 0; i+len(name) <= len(runes); i++ {
			if string(runes[i:i+len(name)]) == string(name) {
				out = append(out, map[string]any{"entity_type": "PERSON", "start": i, "end": i + len(name), "score": 0.9})
			}
		}
		json.NewEncoder(w).Encode(out)
	})
	a := NewAnalyzer(srv.URL+"/analyze", nil)
	r := NewRewriter(NewScanner(&ScannerOptions{Recognizers: append(Builtins(), a)}), NewVault())
	payload := `{"a":"ça va, Zoë Ålund?","b":["nothing here","à Zoë Ålund et à ann@example.com"],"c":12}`
	out, err := r.TokenizeJSON(ctx, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"ça va, [PERSON_1]?","b":["nothing here","à [PERSON_1] et à [EMAIL_ADDRESS_1]"],"c":12}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests for one payload, want 1", n)
	}
}
