package loadgen_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/loadgen"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

const (
	requesterKey = "key-requester"
	approverKey  = "key-approver"
)

// service serves the flight agent on the scripted model with an in-memory
// store over loopback, and returns its URL and tools.
func service(t *testing.T) (string, *flightdemo.Tools) {
	return serviceOf(t, flightdemo.Model())
}

// serviceOf is service with another model.
func serviceOf(t *testing.T, model toolgate.Model) (string, *flightdemo.Tools) {
	t.Helper()
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(model, tools.Tools(), &toolgate.ClientOptions{Store: memory.New()})
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:    client,
			Approvals: []server.ApprovalRule{{Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey(requesterKey), Principal: toolgate.Principal{ID: "ada"}},
			{SHA256: server.HashAPIKey(approverKey), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL, tools
}

func TestRunDecidesEveryPause(t *testing.T) {
	for _, verdict := range []string{"allow", "deny"} {
		t.Run(verdict, func(t *testing.T) {
			url, tools := service(t)
			rep, err := loadgen.Run(context.Background(), loadgen.Options{
				URLs: []string{url, url}, RequesterKey: requesterKey, ApproverKey: approverKey,
				Input: flightdemo.Input, Pauses: 40, Concurrency: 6, Verdict: verdict,
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.PostMessage.Count != 40 || rep.Decide.Count != 40 {
				t.Errorf("counts: post %d, decide %d, want 40 each", rep.PostMessage.Count, rep.Decide.Count)
			}
			if rep.DecisionsPerSecond <= 0 || rep.DecidePhase <= 0 {
				t.Errorf("rate %v over %v", rep.DecisionsPerSecond, rep.DecidePhase)
			}
			for _, l := range []loadgen.Latency{rep.PostMessage, rep.Decide} {
				if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
					t.Errorf("percentiles out of order: %v", l)
				}
			}
			// Every pause was decided once: the gated tool ran once per
			// allowed pause and never for denied ones.
			wantBook := int32(40)
			if verdict == "deny" {
				wantBook = 0
			}
			if got := tools.Book.Load(); got != wantBook {
				t.Errorf("bookFlight ran %d times, want %d", got, wantBook)
			}
			if !strings.Contains(rep.String(), "decisions/s") {
				t.Errorf("report text %q", rep)
			}
		})
	}
}

func TestRunStopsAtTheFirstFailure(t *testing.T) {
	url, tools := service(t)
	tests := []struct {
		name   string
		o      loadgen.Options
		op     string
		status int
	}{
		{"unknown requester key", loadgen.Options{RequesterKey: "nope", ApproverKey: approverKey, Input: flightdemo.Input}, "create", http.StatusUnauthorized},
		{"approver without the role", loadgen.Options{RequesterKey: requesterKey, ApproverKey: requesterKey, Input: flightdemo.Input}, "decide", http.StatusForbidden},
		{"a turn that does not pause", loadgen.Options{RequesterKey: requesterKey, ApproverKey: approverKey, Input: "hello"}, "post", http.StatusOK},
	}
	chatty, _ := serviceOf(t, scripted.NewFunc(func(*toolgate.Prompt) (scripted.Reply, error) { return scripted.Reply{Text: "Hello."}, nil }))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.URLs, tt.o.Pauses, tt.o.Concurrency = []string{url}, 20, 4
			if tt.o.Input == "hello" {
				tt.o.URLs = []string{chatty}
			}
			_, err := loadgen.Run(context.Background(), tt.o)
			var le *loadgen.Error
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *loadgen.Error", err)
			}
			if le.Op != tt.op || le.Status != tt.status {
				t.Errorf("got %s/%d (%v), want %s/%d", le.Op, le.Status, err, tt.op, tt.status)
			}
		})
	}
	if n := tools.Book.Load(); n != 0 {
		t.Errorf("bookFlight ran %d times", n)
	}
}

func TestRunRefusesBadOptions(t *testing.T) {
	good := loadgen.Options{URLs: []string{"http://127.0.0.1:1"}, RequesterKey: "r", ApproverKey: "a", Input: "x"}
	for name, mod := range map[string]func(*loadgen.Options){
		"no URL":           func(o *loadgen.Options) { o.URLs = nil },
		"not http":         func(o *loadgen.Options) { o.URLs = []string{"ftp://x"} },
		"no keys":          func(o *loadgen.Options) { o.ApproverKey = "" },
		"no input":         func(o *loadgen.Options) { o.Input = "" },
		"negative pauses":  func(o *loadgen.Options) { o.Pauses = -1 },
		"negative workers": func(o *loadgen.Options) { o.Concurrency = -3 },
		"bad verdict":      func(o *loadgen.Options) { o.Verdict = "maybe" },
	} {
		t.Run(name, func(t *testing.T) {
			o := good
			mod(&o)
			_, err := loadgen.Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "invalid options") {
				t.Errorf("got %v, want invalid options", err)
			}
		})
	}
}

func TestRunUnreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	_, err := loadgen.Run(context.Background(), loadgen.Options{URLs: []string{url}, RequesterKey: "r", ApproverKey: "a", Input: "x", Pauses: 3})
	var le *loadgen.Error
	if !errors.As(err, &le) || le.Err == nil || le.Status != 0 {
		t.Fatalf("got %v, want a transport *loadgen.Error", err)
	}
}

func TestRunCanceled(t *testing.T) {
	url, _ := service(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := loadgen.Run(ctx, loadgen.Options{URLs: []string{url}, RequesterKey: requesterKey, ApproverKey: approverKey, Input: flightdemo.Input, Pauses: 5})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestLatencyString(t *testing.T) {
	l := loadgen.Latency{Count: 3, P50: 1500 * time.Microsecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond, Max: 3 * time.Millisecond}
	if got, want := l.String(), "n=3 p50=1.5ms p90=2ms p99=3ms max=3ms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// bookMeter is a Meter whose counters follow the runs of bookFlight: one
// commit and 2 ms of CPU per run, in the database.
type bookMeter struct {
	tools *flightdemo.Tools
	reads int
}

func (m *bookMeter) Read(context.Context) (loadgen.Counters, error) {
	m.reads++
	n := int64(m.tools.Book.Load())
	return loadgen.Counters{ServiceCPU: time.Duration(n) * time.Millisecond, DatabaseCPU: time.Duration(n) * 2 * time.Millisecond,
		Database: true, Commits: n, WriteTransactions: n, WALSyncs: n / 2}, nil
}

func TestRunMeasuresEachPhase(t *testing.T) {
	url, tools := service(t)
	m := &bookMeter{tools: tools}
	rep, err := loadgen.Run(context.Background(), loadgen.Options{
		URLs: []string{url}, RequesterKey: requesterKey, ApproverKey: approverKey,
		Input: flightdemo.Input, Pauses: 20, Concurrency: 4, Meter: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.reads != 3 {
		t.Errorf("the meter was read %d times, want 3 (before, between and after the phases)", m.reads)
	}
	// bookFlight runs only when a pause is decided: the opening phase
	// cost nothing, each decision one run.
	want := loadgen.Cost{Database: true}
	if *rep.Open != want {
		t.Errorf("open: got %+v, want %+v", *rep.Open, want)
	}
	want = loadgen.Cost{ServiceCPU: time.Millisecond, DatabaseCPU: 2 * time.Millisecond, Database: true, Commits: 1, WriteTransactions: 1, WALSyncs: 0.5}
	if *rep.Decided != want {
		t.Errorf("decided: got %+v, want %+v", *rep.Decided, want)
	}
	if s := rep.String(); !strings.Contains(s, "per pause decided: CPU 1ms service + 2ms database = 3ms; commits 1.00") {
		t.Errorf("report text %q", s)
	}
}

type failingMeter struct{}

func (failingMeter) Read(context.Context) (loadgen.Counters, error) {
	return loadgen.Counters{}, errors.New("no statistics")
}

func TestRunStopsWhenTheMeterFails(t *testing.T) {
	url, tools := service(t)
	_, err := loadgen.Run(context.Background(), loadgen.Options{
		URLs: []string{url}, RequesterKey: requesterKey, ApproverKey: approverKey,
		Input: flightdemo.Input, Pauses: 5, Meter: failingMeter{},
	})
	if err == nil || !strings.Contains(err.Error(), "no statistics") {
		t.Errorf("got %v, want the meter's error", err)
	}
	if n := tools.Book.Load(); n != 0 {
		t.Errorf("bookFlight ran %d times", n)
	}
}
