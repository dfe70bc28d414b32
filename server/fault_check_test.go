package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/records"
)

// The fault suite's shared parts: a store that injects a fault at a step
// of a request (faultingStore), a load of messages and decisions sent with
// Idempotency-Keys to one or more instances and recorded as the client saw
// them (faultLoad), and the invariants every fault test asserts
// (faultLoad.check, checkFaultInvariants).

// faultStep is the step of a request where a faultingStore injects its
// fault.
type faultStep string

const (
	atClaim  faultStep = "claim"  // before a decided pause is claimed
	atAnswer faultStep = "answer" // before a resumed turn's answer is appended
	atPause  faultStep = "pause"  // before a message's paused reply is appended
)

// faultingStore passes its calls on to the store it wraps; once armed it
// calls fault, once, right before the next write of its step, and then
// makes the write (which meets the fault).
type faultingStore struct {
	txStore
	at    faultStep
	fault func()
	armed atomic.Bool
}

func (s *faultingStore) Unwrap() toolgate.ConversationStore { return s.txStore }

// Ping and ProbeWrite are the wrapped store's, for the readiness checks.
func (s *faultingStore) Ping(ctx context.Context) error {
	return s.txStore.(interface{ Ping(context.Context) error }).Ping(ctx)
}

func (s *faultingStore) ProbeWrite(ctx context.Context) error {
	return s.txStore.(interface{ ProbeWrite(context.Context) error }).ProbeWrite(ctx)
}

func (s *faultingStore) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	if s.at == atClaim && s.armed.Swap(false) {
		s.fault()
	}
	return s.txStore.ClaimPause(ctx, id, pauseID, c)
}

func (s *faultingStore) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	if p != nil && len(p.Messages) > 0 {
		last, _ := p.Messages[len(p.Messages)-1].(*toolgate.AssistantMessage)
		switch {
		case last == nil:
		case s.at == atPause && p.Pause != nil, s.at == atAnswer && p.Pause == nil && !last.HasToolCalls():
			if s.armed.Swap(false) {
				s.fault()
			}
		}
	}
	return s.txStore.Append(ctx, id, p)
}

// faultRequest is a keyed request of a faultLoad and its first answer.
type faultRequest struct {
	conv, pause string // pause "": a message
	idem        string
	instance    int
	code        int
	body        string
	took        time.Duration
}

// faultLoad sends messages and decisions with Idempotency-Keys to the
// instances of one deployment and records what the client saw.
type faultLoad struct {
	t         *testing.T
	instances []*fixture
	rs        records.Store
	log       audit.Log
	mu        sync.Mutex
	sent      []*faultRequest
}

// checkUnavailable checks that the load met the fault (some request was
// answered 5xx) and that every 5xx was a 503 (the store unavailable for
// now), never a 500.
func (l *faultLoad) checkUnavailable(fault string) {
	l.t.Helper()
	var fives int
	for _, r := range l.sent {
		if r.code >= 500 {
			fives++
			if r.code != http.StatusServiceUnavailable {
				l.t.Errorf("a request %s: %d %s, want 503", fault, r.code, r.body)
			}
		}
	}
	if fives == 0 {
		l.t.Errorf("no request failed %s", fault)
	}
}

func (l *faultLoad) path(r *faultRequest) (path, key, body string) {
	if r.pause == "" {
		return messagesPath(r.conv), travellerKey, flightInput
	}
	return decisionsPath(r.conv, r.pause), approverKey, allowBook
}

// send sends r to its instance and records the answer.
func (l *faultLoad) send(r *faultRequest) *httptest.ResponseRecorder {
	path, key, body := l.path(r)
	start := time.Now()
	rec := l.instances[r.instance%len(l.instances)].sendKeyed(context.Background(), "POST", path, key, r.idem, body)
	r.code, r.body, r.took = rec.Code, rec.Body.String(), time.Since(start)
	l.mu.Lock()
	l.sent = append(l.sent, r)
	l.mu.Unlock()
	return rec
}

// conversations creates n conversations, on the first instance.
func (l *faultLoad) conversations(n int) []string {
	var convs []string
	for range n {
		convs = append(convs, l.instances[0].must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string))
	}
	return convs
}

// message posts the message of conv on instance i and returns its
// answer and the id of the pause it answered, "" for none.
func (l *faultLoad) message(conv string, i int) (*faultRequest, string) {
	r := &faultRequest{conv: conv, idem: "m-" + conv, instance: i}
	rec := l.send(r)
	if rec.Code != http.StatusOK {
		return r, ""
	}
	pause, _ := decodeBody(l.t, rec)["pause"].(map[string]any)
	if pause == nil {
		return r, ""
	}
	return r, pause["id"].(string)
}

// decide sends the decision on pause of conv to instance i.
func (l *faultLoad) decide(conv, pause string, i int) *faultRequest {
	r := &faultRequest{conv: conv, pause: pause, idem: "d-" + conv, instance: i}
	l.send(r)
	return r
}

// turn posts the message of conv on instance i and, when it pauses,
// decides the pause on the next instance.
func (l *faultLoad) turn(conv string, i int) {
	if _, pause := l.message(conv, i); pause != "" {
		l.decide(conv, pause, i+1)
	}
}

// run runs the turns of convs, workers at a time, spreading them over the
// instances, and returns when all are answered.
func (l *faultLoad) run(convs []string, workers int) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				l.turn(convs[i], i)
			}
		})
	}
	for i := range convs {
		next <- i
	}
	close(next)
	wg.Wait()
}

// retry sends r again with its key, on another instance, until it is
// answered with neither a 5xx nor 409 "idempotency_key_in_use" (the
// first request's hold on its key not yet released), as a client honouring
// Retry-After does, for up to bound.
func (l *faultLoad) retry(r *faultRequest, bound time.Duration) *httptest.ResponseRecorder {
	l.t.Helper()
	path, key, body := l.path(r)
	deadline := time.Now().Add(bound)
	for i := 1; ; i++ {
		rec := l.instances[(r.instance+i)%len(l.instances)].sendKeyed(context.Background(), "POST", path, key, r.idem, body)
		busy := rec.Code == http.StatusConflict && decodeBody(l.t, rec)["error"] == "idempotency_key_in_use"
		if rec.Code < 500 && !busy || time.Now().After(deadline) {
			return rec
		}
		<-time.After(200 * time.Millisecond) // the client's pause before its next retry
	}
}

// check settles the load after the fault is gone and asserts the
// invariants: every request answered with a 5xx, retried with its key, is
// answered 200 with what the store holds (it was not carried out and runs
// now, or it was and its first outcome is returned); every other request
// retried is answered the same, byte for byte; every conversation's pause
// is decided once (the pauses whose decision was never sent are decided
// now); and then [checkFaultInvariants].
func (l *faultLoad) check(convs []string, outcome records.Outcome) {
	t := l.t
	t.Helper()
	l.mu.Lock()
	sent := slices.Clone(l.sent)
	l.mu.Unlock()
	// Messages first: their retries say which pause each conversation has.
	slices.SortStableFunc(sent, func(a, b *faultRequest) int { return len(a.pause) - len(b.pause) })
	pauses := map[string]string{}
	decided := map[string]bool{}
	for _, r := range sent {
		rec := l.retry(r, time.Minute)
		what := fmt.Sprintf("%s of %s (first answered %d %s)", map[bool]string{true: "message", false: "decision"}[r.pause == ""], r.conv, r.code, r.body)
		if r.code < 500 {
			if rec.Code != r.code || rec.Body.String() != r.body {
				t.Errorf("retry of the %s: %d %s, want the first answer", what, rec.Code, rec.Body)
			}
		} else if rec.Code != http.StatusOK {
			t.Errorf("retry of the %s once the fault is gone: %d %s, want 200", what, rec.Code, rec.Body)
			continue
		}
		if rec.Code != http.StatusOK {
			continue
		}
		out := decodeBody(t, rec)
		if r.pause == "" {
			if p, _ := out["pause"].(map[string]any); out["status"] == "paused" && p != nil {
				pauses[r.conv] = p["id"].(string)
			} else {
				t.Errorf("retry of the %s: %s, want the paused turn", what, rec.Body)
			}
			continue
		}
		decided[r.conv] = true
		if pauses[r.conv] != r.pause {
			t.Errorf("the %s decided pause %s; the message's retry answered pause %s", what, r.pause, pauses[r.conv])
		}
		stored, err := l.rs.Decision(context.Background(), r.conv, r.pause)
		if d, _ := out["decision"].(map[string]any); err != nil || d["outcome"] != string(stored.Outcome) {
			t.Errorf("retry of the %s: decision %v; the store holds %+v, %v", what, out["decision"], stored, err)
		}
	}
	for _, conv := range convs {
		pause, ok := pauses[conv]
		if !ok {
			// No message of conv was answered: the turn never ran.
			t.Errorf("conversation %s: no message of it was answered", conv)
			continue
		}
		if !decided[conv] {
			rec := l.instances[0].sendKeyed(context.Background(), "POST", decisionsPath(conv, pause), approverKey, "d-"+conv, allowBook)
			if out := decodeBody(t, rec); rec.Code != http.StatusOK || out["status"] != "completed" {
				t.Errorf("deciding the pause of %s once the fault is gone: %d %s", conv, rec.Code, rec.Body)
			}
		}
	}
	// A resumption the fault stopped after its claim leaves the pause
	// claimed (and indexed) until the recovery takes it over, once the
	// claim's lease has run out: wait for the inbox to empty, as a person
	// looking at it would.
	if outcome != "" {
		deadline := time.Now().Add(time.Minute)
		for {
			page, err := l.rs.ListPending(context.Background(), nil)
			if err == nil && len(page.Pending) == 0 || time.Now().After(deadline) {
				break
			}
			<-time.After(200 * time.Millisecond)
		}
	}
	checkFaultInvariants(t, l.instances, l.rs, l.log, pauses, outcome)
}

// resolvedOutcome, as the outcome checkFaultInvariants wants, takes
// decided and recovered (a resumption abandoned by the fault, carried out
// by the recovery once its claim's lease ran out), and failed for a
// resumption whose results were stored but whose answer the fault stopped
// (the model's answer is missing, the pause is resolved), with every other
// check.
const resolvedOutcome records.Outcome = "decided or recovered"

// checkFaultInvariants asserts what every fault test asserts of the
// pauses (conversation → pause) it decided once each: bookFlight ran once
// per pause over all instances, at most once where its result is
// "interrupted" (no tool ran twice, none lost its result unsaid); every pause has one
// decision record, with outcome (any when ""), and none other (none
// resolved twice); every conversation holds one turn and its resumption,
// its pause resolved (none lost); its audit records are exactly one
// requested and one decided record of the gated call and one executed
// record per call; the inbox is empty (unless outcome is "", when a failed
// resumption stays indexed for the recovery); and the one audit chain
// verifies.
func checkFaultInvariants(t *testing.T, instances []*fixture, rs records.Store, log audit.Log, pauses map[string]string, outcome records.Outcome) {
	t.Helper()
	ctx := context.Background()
	var booked int32
	for _, f := range instances {
		_, b := f.runs()
		booked += b
	}
	nrec, interrupted := 0, 0
	for conv, pause := range pauses {
		recs, err := rs.Decisions(ctx, conv)
		var got struct {
			Messages []struct {
				Role    string `json:"role"`
				Results []struct {
					CallID string `json:"call_id"`
					Status string `json:"status"`
				} `json:"results"`
			} `json:"messages"`
			Pause any `json:"pause"`
		}
		_, body := instances[0].raw("GET", "/v1/conversations/"+conv, travellerKey, "")
		jerr := json.Unmarshal([]byte(body), &got)
		if n := len(got.Messages); outcome != "" && (jerr != nil || n != 4 && (outcome != resolvedOutcome || n != 3) || got.Messages[2].Role != "tool" || got.Pause != nil) {
			// One turn, resumed once: the user's message, the paused
			// reply, the results, and the model's answer, which
			// resolvedOutcome lets a fault cut off (the decision carried
			// out, its results stored).
			t.Errorf("conversation %s: %+v, pause %v (%v); want one turn resumed once: the results third, the answer fourth, no pause", conv, got.Messages, got.Pause, jerr)
		}
		// The outcome records: one per call, in the order of the results,
		// also for a call answered "interrupted" (started before the fault,
		// its outcome unknown, never run again).
		want := []string{"requested call_book", "decided call_book"}
		if len(got.Messages) >= 3 {
			for _, r := range got.Messages[2].Results {
				want = append(want, "executed "+r.CallID)
				if r.CallID == "call_book" && r.Status == "interrupted" {
					interrupted++
				}
			}
		} else {
			want = append(want, "executed call_status", "executed call_book")
		}
		outcomeOK := len(recs) == 1 && (outcome == "" || recs[0].Outcome == outcome ||
			outcome == resolvedOutcome && (recs[0].Outcome == records.OutcomeDecided || recs[0].Outcome == records.OutcomeRecovered ||
				recs[0].Outcome == records.OutcomeFailed && len(got.Messages) == 3))
		if err != nil || len(recs) != 1 || recs[0].PauseID != pause || !outcomeOK {
			t.Errorf("decision records of %s: %+v, %v; want one of pause %s, outcome %q", conv, recs, err, pause, outcome)
		}
		var kinds []string
		for r, err := range log.Records(ctx, &audit.Query{ConversationID: conv}) {
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, string(r.Kind)+" "+r.CallKey)
		}
		if !slices.Equal(kinds, want) {
			t.Errorf("audit records of %s: %v, want %v", conv, kinds, want)
		}
		nrec += len(want)
	}
	// bookFlight ran once per pause whose result is its own. A result
	// "interrupted" says the outcome is unknown: the start was recorded,
	// then the fault either kept the call from running (a start whose
	// commit went through after its claimant gave up on it) or lost its
	// result; either way it never runs again. So each such pause ran it
	// at most once, the others exactly once.
	if lo, hi := int32(len(pauses)-interrupted), int32(len(pauses)); booked < lo || booked > hi {
		t.Errorf("bookFlight ran %d times, want %d to %d: once per pause of %d, at most once for the %d interrupted", booked, lo, hi, len(pauses), interrupted)
	}
	if page, err := rs.ListPending(ctx, nil); outcome != "" && (err != nil || len(page.Pending) != 0) {
		t.Errorf("inbox index after the run: %+v, %v; want empty", page, err)
	}
	// A log that seals after commit (PostgreSQL) may still hold records
	// its sealers have not reached: they count, after the sealed ones,
	// and once sealed the whole chain verifies.
	if rep, err := audit.Verify(ctx, log, nil); err != nil || rep.Records+rep.Unsealed != uint64(nrec) {
		t.Errorf("Verify = %+v, %v; want %d records, sealed or not", rep, err, nrec)
	}
	sealPending(t, log)
	if rep, err := audit.Verify(ctx, log, nil); err != nil || rep.Records != uint64(nrec) || rep.Unsealed != 0 {
		t.Errorf("Verify after sealing = %+v, %v; want %d intact records", rep, err, nrec)
	}
}

// sealPending seals the records of log committed but not sealed yet, when
// it seals after commit.
func sealPending(t *testing.T, log audit.Reader) {
	t.Helper()
	if s, ok := log.(audit.Sealer); ok {
		if _, err := s.SealPending(t.Context()); err != nil {
			t.Fatalf("SealPending: %v", err)
		}
	}
}
