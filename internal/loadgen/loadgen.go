// Package loadgen drives a running toolgate service the way its users do
// and measures it: requesters open conversations and post messages whose
// turns pause, then approvers decide every pause concurrently. It reports
// the decisions resolved per second and the latency percentiles of
// posting a message and of deciding.
//
// The generator speaks only the public HTTP API (see docs/API.md), so it
// measures a service in-process (an httptest server), a "toolgate serve"
// on this machine, or several instances behind one database: requests go
// round-robin over the URLs given.
//
// With a [Meter] ([ProcMeter], with a [PostgresMeter] for a PostgreSQL
// store), a run also reports what one pause cost in each phase: the CPU
// time of the service's processes and of the database server, read from
// /proc, and the database's commits, write transactions and WAL flushes.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a run.
type Options struct {
	// URLs are the service's base URLs, such as "http://127.0.0.1:8080";
	// requests go round-robin over them. At least one is required.
	URLs []string
	// RequesterKey is the API key of a principal who may open
	// conversations and post to them. Required.
	RequesterKey string
	// ApproverKey is the API key of a principal who may decide the
	// pauses. Required.
	ApproverKey string
	// Agent names the agent of the conversations. "": the service's only
	// agent.
	Agent string
	// Input is the message posted to every conversation; its turn must
	// pause. Required.
	Input string
	// Pauses is how many paused conversations are opened, then decided.
	// 0: 1000.
	Pauses int
	// Concurrency is how many requests are in flight at once, in each
	// phase. 0: 32.
	Concurrency int
	// Verdict is what every awaiting call is decided: "allow" or "deny".
	// "": allow.
	Verdict string
	// Client sends the requests. nil: a client with keep-alive
	// connections enough for Concurrency.
	Client *http.Client
	// Meter, when set, is read before and after each phase; the report
	// then has the cost of each phase per pause. nil: no costs.
	Meter Meter
}

// Latency summarises the latencies of one kind of request.
type Latency struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}

func (l Latency) String() string {
	return fmt.Sprintf("n=%d p50=%v p90=%v p99=%v max=%v", l.Count, round(l.P50), round(l.P90), round(l.P99), round(l.Max))
}

func round(d time.Duration) time.Duration {
	if d > time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Report is the outcome of a run.
type Report struct {
	// PostMessage is the latency of posting a message whose turn pauses.
	PostMessage Latency `json:"post_message"`
	// Decide is the latency of a decision, whose resumed turn runs to its
	// end before the answer.
	Decide Latency `json:"decide"`
	// DecidePhase is the wall time of the decision phase.
	DecidePhase time.Duration `json:"decide_phase"`
	// DecisionsPerSecond is the number of pauses decided divided by
	// DecidePhase.
	DecisionsPerSecond float64 `json:"decisions_per_second"`
	// Open and Decided are what one pause cost in each phase: opening
	// (creating the conversation and posting the message that pauses) and
	// deciding. nil without [Options.Meter].
	Open    *Cost `json:"open,omitempty"`
	Decided *Cost `json:"decided,omitempty"`
}

func (r *Report) String() string {
	s := fmt.Sprintf("post message: %v\ndecide:       %v\ndecisions/s:  %.0f (%d in %v)",
		r.PostMessage, r.Decide, r.DecisionsPerSecond, r.Decide.Count, r.DecidePhase.Round(time.Millisecond))
	if r.Open != nil && r.Decided != nil {
		s += fmt.Sprintf("\nper pause opened:  %v\nper pause decided: %v", r.Open, r.Decided)
	}
	return s
}

// Error is a request the service answered unexpectedly. A run stops at
// the first one.
type Error struct {
	Op     string // "create", "post" or "decide"
	URL    string
	Status int    // 0 when no response came
	Body   string // the start of the response body
	Err    error  // the transport error, when no response came
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("loadgen: %s %s: %v", e.Op, e.URL, e.Err)
	}
	return fmt.Sprintf("loadgen: %s %s: status %d: %s", e.Op, e.URL, e.Status, e.Body)
}

func (e *Error) Unwrap() error { return e.Err }

// pending is a paused conversation waiting for its decision.
type pending struct {
	base     string
	conv     string
	pause    string
	awaiting []string
}

// Run opens o.Pauses paused conversations, then decides them all, and
// reports how fast. It stops at the first failed request with an
// [*Error], or when ctx ends.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Pauses == 0 {
		o.Pauses = 1000
	}
	if o.Concurrency == 0 {
		o.Concurrency = 32
	}
	if o.Verdict == "" {
		o.Verdict = "allow"
	}
	if o.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.Concurrency
		t.MaxConnsPerHost = 0
		o.Client = &http.Client{Transport: t}
		defer t.CloseIdleConnections()
	}
	g := &gen{o: o}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var counters [3]Counters
	read := func(i int) error {
		if o.Meter == nil {
			return nil
		}
		c, err := o.Meter.Read(ctx)
		if err != nil {
			return fmt.Errorf("loadgen: meter: %w", err)
		}
		counters[i] = c
		return nil
	}
	if err := read(0); err != nil {
		return nil, err
	}

	// Phase 1: open the pauses.
	paused := make([]pending, o.Pauses)
	postLat := make([]time.Duration, o.Pauses)
	if err := g.parallel(ctx, cancel, o.Pauses, func(ctx context.Context, i int) error {
		p, d, err := g.openPause(ctx, o.URLs[i%len(o.URLs)])
		paused[i], postLat[i] = p, d
		return err
	}); err != nil {
		return nil, err
	}
	if err := read(1); err != nil {
		return nil, err
	}

	// Phase 2: decide them, each through another instance than the one
	// that opened it when there are several.
	decLat := make([]time.Duration, o.Pauses)
	start := time.Now()
	if err := g.parallel(ctx, cancel, o.Pauses, func(ctx context.Context, i int) error {
		d, err := g.decide(ctx, o.URLs[(i+1)%len(o.URLs)], &paused[i])
		decLat[i] = d
		return err
	}); err != nil {
		return nil, err
	}
	phase := time.Since(start)
	if err := read(2); err != nil {
		return nil, err
	}
	rep := &Report{
		PostMessage:        summarise(postLat),
		Decide:             summarise(decLat),
		DecidePhase:        phase,
		DecisionsPerSecond: float64(o.Pauses) / phase.Seconds(),
	}
	if o.Meter != nil {
		rep.Open = cost(counters[0], counters[1], o.Pauses)
		rep.Decided = cost(counters[1], counters[2], o.Pauses)
	}
	return rep, nil
}

func (o *Options) check() error {
	var errs []error
	if len(o.URLs) == 0 {
		errs = append(errs, errors.New("no URLs"))
	}
	for _, u := range o.URLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("URL %q is not http or https", u))
		}
	}
	if o.RequesterKey == "" || o.ApproverKey == "" {
		errs = append(errs, errors.New("both a requester key and an approver key are required"))
	}
	if o.Input == "" {
		errs = append(errs, errors.New("no input"))
	}
	if o.Pauses < 0 || o.Concurrency < 0 {
		errs = append(errs, errors.New("pauses and concurrency must not be negative"))
	}
	if o.Verdict != "" && o.Verdict != "allow" && o.Verdict != "deny" {
		errs = append(errs, fmt.Errorf("verdict %q is neither allow nor deny", o.Verdict))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("loadgen: invalid options: %w", err)
	}
	return nil
}

type gen struct{ o Options }

// parallel runs f for 0..n-1 on o.Concurrency workers, stopping at the
// first error.
func (g *gen) parallel(ctx context.Context, cancel context.CancelCauseFunc, n int, f func(context.Context, int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(g.o.Concurrency, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// openPause creates a conversation on base and posts the input; it returns
// the pause and the latency of the post.
func (g *gen) openPause(ctx context.Context, base string) (pending, time.Duration, error) {
	body := `{}`
	if g.o.Agent != "" {
		b, _ := json.Marshal(map[string]string{"agent": g.o.Agent})
		body = string(b)
	}
	var conv struct {
		ID string `json:"id"`
	}
	if _, err := g.call(ctx, "create", base+"/v1/conversations", g.o.RequesterKey, body, http.StatusCreated, &conv); err != nil {
		return pending{}, 0, err
	}
	in, _ := json.Marshal(map[string]string{"input": g.o.Input})
	var turn struct {
		Status string `json:"status"`
		Pause  *struct {
			ID       string   `json:"id"`
			Awaiting []string `json:"awaiting"`
		} `json:"pause"`
	}
	url := base + "/v1/conversations/" + conv.ID + "/messages"
	d, err := g.call(ctx, "post", url, g.o.RequesterKey, string(in), http.StatusOK, &turn)
	if err != nil {
		return pending{}, 0, err
	}
	if turn.Status != "paused" || turn.Pause == nil {
		return pending{}, 0, &Error{Op: "post", URL: url, Status: http.StatusOK, Body: "the turn did not pause (status " + turn.Status + ")"}
	}
	return pending{base: base, conv: conv.ID, pause: turn.Pause.ID, awaiting: turn.Pause.Awaiting}, d, nil
}

// decide decides every awaiting call of p on base.
func (g *gen) decide(ctx context.Context, base string, p *pending) (time.Duration, error) {
	type decision struct {
		Key     string `json:"key"`
		Verdict string `json:"verdict"`
	}
	ds := make([]decision, len(p.awaiting))
	for i, k := range p.awaiting {
		ds[i] = decision{Key: k, Verdict: g.o.Verdict}
	}
	body, _ := json.Marshal(map[string]any{"decisions": ds})
	url := base + "/v1/conversations/" + p.conv + "/pauses/" + p.pause + "/decisions"
	return g.call(ctx, "decide", url, g.o.ApproverKey, string(body), http.StatusOK, nil)
}

// call sends one POST and decodes the answer into out when it has the
// status wanted; it returns the request's latency.
func (g *gen) call(ctx context.Context, op, url, key, body string, want int, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, &Error{Op: op, URL: url, Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := g.o.Client.Do(req)
	if err != nil {
		return 0, &Error{Op: op, URL: url, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	d := time.Since(start)
	if err != nil {
		return 0, &Error{Op: op, URL: url, Err: err}
	}
	if resp.StatusCode != want {
		return 0, &Error{Op: op, URL: url, Status: resp.StatusCode, Body: string(b[:min(len(b), 300)])}
	}
	if out != nil {
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(out); err != nil {
			return 0, &Error{Op: op, URL: url, Status: resp.StatusCode, Body: "undecodable answer: " + err.Error()}
		}
	}
	return d, nil
}

// summarise returns the percentiles of ds (nearest rank).
func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Latency{Count: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: s[len(s)-1]}
}
