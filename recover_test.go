package toolgate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

// gatedTools are three gated tools, a, b and c, that count their runs and
// record the requests they get. A tool named in block waits, once started,
// until its channel is closed.
type gatedTools struct {
	mu    sync.Mutex
	runs  map[string]int
	reqs  map[string]toolgate.ToolRequest
	block map[string]chan struct{}
	// started receives the name of a blocking tool once it runs.
	started chan string
}

func newGatedTools(block ...string) *gatedTools {
	g := &gatedTools{runs: map[string]int{}, reqs: map[string]toolgate.ToolRequest{}, block: map[string]chan struct{}{}, started: make(chan string, 3)}
	for _, name := range block {
		g.block[name] = make(chan struct{})
	}
	return g
}

func (g *gatedTools) tools() []*toolgate.Tool {
	var out []*toolgate.Tool
	for _, name := range []string{"a", "b", "c"} {
		out = append(out, toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: "tool " + name},
			toolgate.ToolMetadata{RequiresConfirmation: true},
			func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
				g.mu.Lock()
				g.runs[name]++
				g.reqs[name] = *req
				ch := g.block[name]
				g.mu.Unlock()
				if ch != nil {
					g.started <- name
					<-ch
				}
				return name + " done", nil
			}))
	}
	return out
}

func (g *gatedTools) count() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for k, v := range g.runs {
		out[k] = v
	}
	return out
}

// pauseABC runs a turn that pauses on a reply calling a, b and c, and
// returns the open pause.
func pauseABC(t *testing.T, c *toolgate.Client, id string) *toolgate.PauseRecord {
	t.Helper()
	resp, err := c.Call(t.Context(), &toolgate.CallParams{ConversationID: id, Input: "do it"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Paused() {
		t.Fatal("the turn did not pause")
	}
	return load(t, c.Store(), id).Pause
}

func abcReply() scripted.Reply {
	return scripted.Reply{ToolCalls: []toolgate.ToolCall{call("ca", "a", "{}"), call("cb", "b", "{}"), call("cc", "c", "{}")}}
}

func allowABDenyC() []toolgate.Decision {
	return []toolgate.Decision{toolgate.Allow("ca"), toolgate.Allow("cb"), toolgate.Deny("cc", "not c")}
}

func TestResumeRecordsClaim(t *testing.T) {
	g := newGatedTools("a")
	store := memory.New()
	c := toolgate.NewClient(scripted.New(abcReply(), scripted.Reply{Text: "done"}), g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	done := make(chan error, 1)
	go func() {
		_, err := c.Resume(context.Background(), &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: pause.ID, Decisions: allowABDenyC()})
		done <- err
	}()
	<-g.started // a runs and waits
	got := load(t, store, "conv").Pause
	if got == nil || !got.Claimed || got.ClaimToken == "" || got.ClaimedAt.IsZero() {
		t.Fatalf("pause while its resumption runs: %+v, want it claimed with a token and a time", got)
	}
	if diff := cmp.Diff(allowABDenyC(), got.Decisions); diff != "" {
		t.Errorf("recorded decisions mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ca"}, got.Started); diff != "" {
		t.Errorf("started keys mismatch (-want +got):\n%s", diff)
	}
	close(g.block["a"])
	if err := <-done; err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got := g.count(); got["a"] != 1 || got["b"] != 1 || got["c"] != 0 {
		t.Errorf("runs = %v, want a and b once, c never", got)
	}
	for _, name := range []string{"a", "b"} {
		req := g.reqs[name]
		if want := toolgate.IdempotencyKey("conv", pause.ID, req.Key); req.IdempotencyKey != want || want == "" {
			t.Errorf("tool %s got idempotency key %q, want %q", name, req.IdempotencyKey, want)
		}
	}
	if load(t, store, "conv").Pause != nil {
		t.Error("the pause is still open after the resumption")
	}
}

func TestIdempotencyKey(t *testing.T) {
	// The form is pinned: tools may have stored keys of earlier versions.
	// Each vector is "tg_" and the first 16 bytes, in hex, of the SHA-256
	// of the three strings, each preceded by its length in bytes as a
	// big-endian uint64 (computed independently of the code under test).
	for _, tt := range []struct {
		conv, pause, call, want string
	}{
		{"conv", "pause", "call", "tg_dd4e78f9f073695949d30f34621a4e47"},
		{"", "", "", "tg_9d908ecfb6b256def8b49a7c504e6c88"},
		{"conv_01J", "pause_7", "#0", "tg_2f2d21226d242e9eccf0b2cff0166296"},
		{"cønv", "p", "k", "tg_24bae49c29735e6f0b54dba464ddd7e4"},
	} {
		if got := toolgate.IdempotencyKey(tt.conv, tt.pause, tt.call); got != tt.want {
			t.Errorf("IdempotencyKey(%q, %q, %q) = %q, want %q", tt.conv, tt.pause, tt.call, got, tt.want)
		}
	}
	seen := map[string]string{}
	for _, parts := range [][3]string{
		{"conv", "pause", "call"}, {"conv", "pause", "call2"}, {"conv", "pause2", "call"}, {"conv2", "pause", "call"},
		// Boundaries between the parts matter.
		{"conv", "pausecall", ""}, {"convpause", "call", ""}, {"", "convpause", "call"}, {"", "", ""},
	} {
		k := toolgate.IdempotencyKey(parts[0], parts[1], parts[2])
		if other, ok := seen[k]; ok {
			t.Errorf("IdempotencyKey%q = IdempotencyKey%s", parts, other)
		}
		seen[k] = fmt.Sprintf("%q", parts)
	}
}

// deadClaim claims the open pause of id as a resumption with decisions
// would, records keys as started, and leaves it there, as a resumption
// whose process died would.
func deadClaim(t *testing.T, s toolgate.ConversationStore, id string, pause *toolgate.PauseRecord, at time.Time, decisions []toolgate.Decision, started ...string) {
	t.Helper()
	if err := s.ClaimPause(t.Context(), id, pause.ID, &toolgate.Claim{Token: "dead", At: at, Decisions: decisions}); err != nil {
		t.Fatal(err)
	}
	if len(started) > 0 {
		if err := s.MarkStarted(t.Context(), id, pause.ID, "dead", started); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecoverPause(t *testing.T) {
	tests := []struct {
		name    string
		started []string
		want    []toolgate.ToolResult
		runs    map[string]int
	}{
		{"nothing started", nil, []toolgate.ToolResult{
			{CallID: "ca", Name: "a", Content: "a done"},
			{CallID: "cb", Name: "b", Content: "b done"},
			{CallID: "cc", Name: "c", Content: "not c", Status: toolgate.ResultDenied},
		}, map[string]int{"a": 1, "b": 1}},
		{"a started", []string{"ca"}, []toolgate.ToolResult{
			{CallID: "ca", Name: "a", Content: toolgate.InterruptedMessage, Status: toolgate.ResultInterrupted},
			{CallID: "cb", Name: "b", Content: "b done"},
			{CallID: "cc", Name: "c", Content: "not c", Status: toolgate.ResultDenied},
		}, map[string]int{"b": 1}},
		{"all started", []string{"cb", "ca"}, []toolgate.ToolResult{
			{CallID: "ca", Name: "a", Content: toolgate.InterruptedMessage, Status: toolgate.ResultInterrupted},
			{CallID: "cb", Name: "b", Content: toolgate.InterruptedMessage, Status: toolgate.ResultInterrupted},
			{CallID: "cc", Name: "c", Content: "not c", Status: toolgate.ResultDenied},
		}, map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGatedTools()
			store := memory.New()
			model := scripted.New(abcReply(), scripted.Reply{Text: "Here is what happened."})
			c := toolgate.NewClient(model, g.tools(), &toolgate.ClientOptions{Store: store, StoreEveryRound: true})
			pause := pauseABC(t, c, "conv")
			deadClaim(t, store, "conv", pause, time.Now().Add(-time.Hour), allowABDenyC(), tt.started...)

			res, err := c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Lease: time.Minute})
			if err != nil {
				t.Fatalf("RecoverPause: %v", err)
			}
			if diff := cmp.Diff(tt.want, res.Results); diff != "" {
				t.Errorf("results mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.runs, g.count(), cmpEmptyMap); diff != "" {
				t.Errorf("runs mismatch (-want +got):\n%s", diff)
			}
			if res.Response == nil || res.Response.Text() != "Here is what happened." {
				t.Errorf("the turn did not continue: response %+v", res.Response)
			}
			conv := load(t, store, "conv")
			if conv.Pause != nil {
				t.Errorf("the pause is still open: %+v", conv.Pause)
			}
			if err := validHistory(conv.Messages); err != nil {
				t.Error(err)
			}
			if got := conv.Messages[2].(*toolgate.ToolMessage).Results; !cmp.Equal(got, tt.want) {
				t.Errorf("stored results %+v, want %+v", got, tt.want)
			}
			// The model read the interrupted results.
			prompts := model.Prompts()
			if n := len(prompts); n != 2 {
				t.Fatalf("the model was called %d times, want 2", n)
			}
			// A second recovery finds nothing to recover.
			_, err = c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Force: true})
			if !errors.Is(err, toolgate.ErrNoOpenPause) {
				t.Errorf("a second RecoverPause: got error %v, want one wrapping %v", err, toolgate.ErrNoOpenPause)
			}
		})
	}
}

var cmpEmptyMap = cmp.Comparer(func(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
})

func TestRecoverPauseErrors(t *testing.T) {
	g := newGatedTools()
	store := memory.New()
	c := toolgate.NewClient(scripted.New(abcReply(), abcReply()), g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	ctx := t.Context()

	for _, tt := range []struct {
		name string
		p    *toolgate.RecoverParams
		want error
	}{
		{"nil params", nil, toolgate.ErrNoOpenPause},
		{"no conversation", &toolgate.RecoverParams{PauseID: pause.ID, Force: true}, toolgate.ErrNoOpenPause},
		{"no pause id", &toolgate.RecoverParams{ConversationID: "conv", Force: true}, toolgate.ErrNoOpenPause},
		{"another pause", &toolgate.RecoverParams{ConversationID: "conv", PauseID: "pause_other", Force: true}, toolgate.ErrNoOpenPause},
		{"unknown conversation", &toolgate.RecoverParams{ConversationID: "nope", PauseID: pause.ID, Force: true}, toolgate.ErrNoOpenPause},
		{"unclaimed", &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Force: true}, toolgate.ErrNotClaimed},
	} {
		_, err := c.RecoverPause(ctx, tt.p)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: got error %v, want one wrapping %v", tt.name, err, tt.want)
		}
	}
	if _, err := c.RecoverPause(ctx, &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID}); err == nil {
		t.Error("RecoverPause without a lease or Force succeeded")
	}

	deadClaim(t, store, "conv", pause, time.Now(), allowABDenyC())
	_, err := c.RecoverPause(ctx, &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Lease: time.Hour})
	if !errors.Is(err, toolgate.ErrClaimActive) {
		t.Errorf("RecoverPause of a fresh claim: got error %v, want one wrapping %v", err, toolgate.ErrClaimActive)
	}
	if got := load(t, store, "conv").Pause; got == nil || got.ClaimToken != "dead" {
		t.Errorf("a refused recovery changed the claim: %+v", got)
	}
	if n := len(g.count()); n != 0 {
		t.Errorf("tools ran: %v", g.count())
	}
	// Resume and expiry refuse a claimed pause.
	_, err = c.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: pause.ID, Decisions: allowABDenyC()})
	if !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("Resume of a claimed pause: got error %v, want one wrapping %v", err, toolgate.ErrNoOpenPause)
	}
}

func TestRecoverExpiry(t *testing.T) {
	// A claim without decisions is an expiry: it finishes as one, without
	// calling the model.
	g := newGatedTools()
	store := memory.New()
	model := scripted.New(abcReply())
	c := toolgate.NewClient(model, g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	deadClaim(t, store, "conv", pause, time.Now().Add(-time.Hour), nil)
	res, err := c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Lease: time.Minute})
	if err != nil {
		t.Fatalf("RecoverPause: %v", err)
	}
	if res.Response != nil {
		t.Errorf("the turn continued: %+v", res.Response)
	}
	for _, r := range res.Results {
		if r.Status != toolgate.ResultExpired || r.Content != toolgate.ExpiredMessage {
			t.Errorf("result %+v, want expired", r)
		}
	}
	if len(model.Prompts()) != 1 || len(g.count()) != 0 {
		t.Errorf("the model was called %d times and tools ran %v; want 1 call and no runs", len(model.Prompts()), g.count())
	}
	if conv := load(t, store, "conv"); conv.Pause != nil || validHistory(conv.Messages) != nil {
		t.Errorf("the conversation is not resolved: %+v", conv.Pause)
	}
}

func TestRecoverUnrunnable(t *testing.T) {
	// The stored decisions allow a tool the recovering client does not
	// have: the recovery still resolves the pause, with that call skipped.
	g := newGatedTools()
	store := memory.New()
	c := toolgate.NewClient(scripted.New(abcReply()), g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	deadClaim(t, store, "conv", pause, time.Now().Add(-time.Hour), allowABDenyC(), "ca")

	fewer := g.tools()[2:] // only c
	c2 := toolgate.NewClient(scripted.New(scripted.Reply{Text: "ok"}), fewer, &toolgate.ClientOptions{Store: store})
	res, err := c2.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Force: true})
	if err != nil {
		t.Fatalf("RecoverPause: %v", err)
	}
	want := []toolgate.ResultStatus{toolgate.ResultInterrupted, toolgate.ResultSkipped, toolgate.ResultDenied}
	for i, r := range res.Results {
		if r.Status != want[i] {
			t.Errorf("result %d: %+v, want status %v", i, r, want[i])
		}
	}
	if len(g.count()) != 0 {
		t.Errorf("tools ran: %v", g.count())
	}
}

func TestRecoverWhileClaimantRuns(t *testing.T) {
	// A resumption is running a (blocked, not dead) when a recovery takes
	// its claim over: the recovery answers a interrupted and runs b; the
	// old claimant, once a returns, cannot start b and fails with
	// ErrClaimLost. Every call ran at most once.
	g := newGatedTools("a")
	store := memory.New()
	model := scripted.New(abcReply(), scripted.Reply{Text: "recovered"}, scripted.Reply{Text: "late"})
	c := toolgate.NewClient(model, g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	done := make(chan error, 1)
	go func() {
		_, err := c.Resume(context.Background(), &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: pause.ID, Decisions: allowABDenyC()})
		done <- err
	}()
	<-g.started

	res, err := c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Force: true})
	if err != nil {
		t.Fatalf("RecoverPause: %v", err)
	}
	if res.Results[0].Status != toolgate.ResultInterrupted || res.Results[1].Status != toolgate.ResultOK {
		t.Errorf("results %+v, want a interrupted and b ok", res.Results)
	}
	close(g.block["a"])
	if err := <-done; !errors.Is(err, toolgate.ErrClaimLost) {
		t.Errorf("the superseded Resume: got error %v, want one wrapping %v", err, toolgate.ErrClaimLost)
	}
	if got := g.count(); got["a"] != 1 || got["b"] != 1 || got["c"] != 0 {
		t.Errorf("runs = %v, want a and b once each", got)
	}
	conv := load(t, store, "conv")
	if conv.Pause != nil || len(conv.Messages) != 4 || validHistory(conv.Messages) != nil {
		t.Errorf("conversation after recovery: %d messages, pause %+v", len(conv.Messages), conv.Pause)
	}
}

func TestRecoverConcurrent(t *testing.T) {
	// Recoveries racing for one dead claim: one wins, the others run
	// nothing.
	const n = 8
	g := newGatedTools()
	store := memory.New()
	replies := []scripted.Reply{abcReply()}
	for range n {
		replies = append(replies, scripted.Reply{Text: "ok"})
	}
	c := toolgate.NewClient(scripted.New(replies...), g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	deadClaim(t, store, "conv", pause, time.Now().Add(-time.Hour), allowABDenyC())
	var won atomic.Int32
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Lease: time.Minute})
			if errs[i] == nil {
				won.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, toolgate.ErrClaimLost) && !errors.Is(err, toolgate.ErrNoOpenPause) && !errors.Is(err, toolgate.ErrClaimActive) && !errors.Is(err, toolgate.ErrConflict) {
			t.Errorf("recovery %d: unexpected error %v", i, err)
		}
	}
	if won.Load() != 1 {
		t.Errorf("%d recoveries succeeded, want 1 (errors %v)", won.Load(), errs)
	}
	if got := g.count(); got["a"] != 1 || got["b"] != 1 {
		t.Errorf("runs = %v, want a and b once", got)
	}
}

func TestRecoverDeniedPause(t *testing.T) {
	// DenyOpenPause records its denials: a recovery of its claim denies
	// again and continues the turn.
	g := newGatedTools()
	store := memory.New()
	c := toolgate.NewClient(scripted.New(abcReply(), scripted.Reply{Text: "ok"}), g.tools(), &toolgate.ClientOptions{Store: store})
	pause := pauseABC(t, c, "conv")
	deadClaim(t, store, "conv", pause, time.Now().Add(-time.Hour), toolgate.DenyAll(load(t, store, "conv").Messages[1].(*toolgate.AssistantMessage), "moved on"))
	res, err := c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		if r.Status != toolgate.ResultDenied || r.Content != "moved on" {
			t.Errorf("result %+v, want denied with the message", r)
		}
	}
	if len(g.count()) != 0 {
		t.Errorf("tools ran: %v", g.count())
	}
}

// slowMarks holds the first record of started calls (the claim's) until
// release is closed and records the keys of every record.
type slowMarks struct {
	*memory.Store
	release chan struct{}
	mu      sync.Mutex
	batches [][]string
}

func (s *slowMarks) record(keys []string) {
	s.mu.Lock()
	first := len(s.batches) == 0
	s.batches = append(s.batches, slices.Clone(keys))
	s.mu.Unlock()
	if first {
		<-s.release
	}
}

func (s *slowMarks) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	s.record(c.Started)
	return s.Store.ClaimPause(ctx, id, pauseID, c)
}

func (s *slowMarks) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	s.record(keys)
	return s.Store.MarkStarted(ctx, id, pauseID, token, keys)
}

func TestMarksCoalesce(t *testing.T) {
	// The calls a concurrent execution launches at once are recorded by
	// one write (the claim's); a call launched later, when a slot frees,
	// by a write of its own.
	for _, tc := range []struct {
		concurrency int
		want        [][]string
	}{
		{3, [][]string{{"ca", "cb", "cc"}}},
		{2, [][]string{{"ca", "cb"}, {"cc"}}},
	} {
		synctest.Test(t, func(t *testing.T) {
			store := &slowMarks{Store: memory.New(), release: make(chan struct{})}
			g := newGatedTools()
			model := scripted.New(abcReply(), scripted.Reply{Text: "ok"})
			c := toolgate.NewClient(model, g.tools(), &toolgate.ClientOptions{Store: store,
				Concurrency: tc.concurrency})
			pause := pauseABC(t, c, "conv")
			done := make(chan error, 1)
			go func() {
				_, err := c.Resume(t.Context(), &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: pause.ID,
					Decisions: []toolgate.Decision{toolgate.Allow("ca"), toolgate.Allow("cb"), toolgate.Allow("cc")}})
				done <- err
			}()
			synctest.Wait() // the first write (the claim) waits
			close(store.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for _, b := range store.batches {
				slices.Sort(b)
			}
			if diff := cmp.Diff(tc.want, store.batches); diff != "" {
				t.Errorf("concurrency %d: records of started calls mismatch (-want +got):\n%s", tc.concurrency, diff)
			}
			if got := load(t, store, "conv").Messages[2].(*toolgate.ToolMessage); len(got.Results) != 3 {
				t.Errorf("resolution %+v, want 3 results", got)
			}
			if got := g.count(); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 {
				t.Errorf("runs = %v, want each once", got)
			}
		})
	}
}

func TestMarksWaveCallEndsUnstarted(t *testing.T) {
	// A call launched with others that ends before it starts (its
	// arguments are not JSON) is not waited for: the others start in one
	// write, the claim, and it is never recorded.
	for _, bad := range []toolgate.ToolCall{call("cb", "b", "{not json"), call("cb", "b", "[1, 2")} {
		synctest.Test(t, func(t *testing.T) {
			store := &slowMarks{Store: memory.New(), release: make(chan struct{})}
			close(store.release)
			g := newGatedTools()
			reply := scripted.Reply{ToolCalls: []toolgate.ToolCall{call("ca", "a", "{}"), bad, call("cc", "c", "{}")}}
			c := toolgate.NewClient(scripted.New(reply, scripted.Reply{Text: "ok"}), g.tools(), &toolgate.ClientOptions{Store: store,
				Concurrency: 3})
			pause := pauseABC(t, c, "conv")
			_, err := c.Resume(t.Context(), &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: pause.ID,
				Decisions: []toolgate.Decision{toolgate.Allow("ca"), toolgate.Allow("cb"), toolgate.Allow("cc")}})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range store.batches {
				slices.Sort(b)
			}
			if diff := cmp.Diff([][]string{{"ca", "cc"}}, store.batches); diff != "" {
				t.Errorf("%s: records of started calls mismatch (-want +got):\n%s", bad.Arguments, diff)
			}
			msg := load(t, store, "conv").Messages[2].(*toolgate.ToolMessage)
			if len(msg.Results) != 3 || msg.Results[1].Status != toolgate.ResultError {
				t.Errorf("%s: resolution %+v, want the second call failed", bad.Arguments, msg)
			}
			if got := g.count(); got["a"] != 1 || got["b"] != 0 || got["c"] != 1 {
				t.Errorf("%s: runs = %v, want a and c once", bad.Arguments, got)
			}
		})
	}
}

// panickyMarks panics on every record of started calls: every MarkStarted
// and, with claims too, every claim that starts calls.
type panickyMarks struct {
	*memory.Store
	claims bool
}

func (s panickyMarks) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	if s.claims && len(c.Started) > 0 {
		panic("disk on fire")
	}
	return s.Store.ClaimPause(ctx, id, pauseID, c)
}

func (panickyMarks) MarkStarted(context.Context, string, string, string, []string) error {
	panic("disk on fire")
}

func TestMarkStoreFails(t *testing.T) {
	// A store that cannot record a start (here: it panics) stops the run
	// before the call, without leaving concurrent calls waiting. The first
	// calls start with the claim (with Concurrency, all those launched at
	// once); when only later records fail, the calls started with the
	// claim ran and the others did not.
	allowAll := []toolgate.Decision{toolgate.Allow("ca"), toolgate.Allow("cb"), toolgate.Allow("cc")}
	for _, tc := range []struct {
		claims      bool // claims fail too, not just later records
		concurrency int
		decisions   []toolgate.Decision
		ran         []string // the tools that ran; nil: none, and the pause stays unclaimed
	}{
		{true, 1, allowABDenyC(), nil},
		{true, 3, allowABDenyC(), nil},
		{false, 1, allowABDenyC(), []string{"a"}},
		{false, 2, allowAll, []string{"a", "b"}},
	} {
		store := panickyMarks{Store: memory.New(), claims: tc.claims}
		g := newGatedTools()
		c := toolgate.NewClient(scripted.New(abcReply()), g.tools(), &toolgate.ClientOptions{Store: store,
			Concurrency: tc.concurrency, Logger: discardLogger()})
		pause := pauseABC(t, c, "conv")
		_, err := c.Resume(t.Context(), &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: pause.ID, Decisions: tc.decisions})
		if err == nil {
			t.Errorf("claims %v, concurrency %d: Resume succeeded although starts could not be recorded", tc.claims, tc.concurrency)
		}
		ran := g.count()
		pr := load(t, store, "conv").Pause
		if pr == nil {
			t.Fatalf("claims %v, concurrency %d: the pause was resolved", tc.claims, tc.concurrency)
		}
		var names, started []string
		for name := range ran {
			names = append(names, name)
		}
		for _, k := range pr.Started {
			started = append(started, strings.TrimPrefix(k, "c"))
		}
		slices.Sort(names)
		slices.Sort(started)
		switch {
		case tc.ran == nil && (len(ran) != 0 || pr.Claimed):
			t.Errorf("claims failing, concurrency %d: tools ran: %v, pause %+v; want none run and the pause unclaimed", tc.concurrency, ran, pr)
		case tc.ran != nil && (!slices.Equal(names, tc.ran) || !slices.Equal(started, tc.ran)):
			t.Errorf("marks failing, concurrency %d: ran %v with %v started, want %v, the calls the claim started", tc.concurrency, ran, pr.Started, tc.ran)
		}
		for name, n := range ran {
			if n != 1 {
				t.Errorf("concurrency %d: %s ran %d times", tc.concurrency, name, n)
			}
		}
	}
}
