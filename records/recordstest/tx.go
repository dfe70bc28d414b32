package recordstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/records"
)

// TxOpener opens another instance of a store on one database: a
// conversation store and its record store (with its connections of its
// own, as another process would hold). It may register cleanups with t.
type TxOpener func(t *testing.T) (toolgate.ConversationStore, records.Transactional)

// RunTx runs the conformance tests of a conversation store that runs
// [records.Hook]s in its transactions, together with its
// [records.Transactional] record store. newDB makes a new, empty
// database for each subtest and returns its [TxOpener].
func RunTx(t *testing.T, newDB func(t *testing.T) TxOpener) {
	t.Run("PauseWithIndexAndAudit", func(t *testing.T) { testHookPause(t, newDB(t)) })
	t.Run("HookThroughWrapper", func(t *testing.T) { testHookWrapper(t, newDB(t)) })
	t.Run("FailedHookRollsBack", func(t *testing.T) { testHookRollback(t, newDB(t)) })
	t.Run("ClaimWithDecision", func(t *testing.T) { testHookClaim(t, newDB(t)) })
	t.Run("MarkAndResolve", func(t *testing.T) { testHookMarkResolve(t, newDB(t)) })
	t.Run("RefusedWriteRunsNoHook", func(t *testing.T) { testHookRefused(t, newDB(t)) })
	t.Run("OtherStoresHook", func(t *testing.T) { testHookOther(t, newDB(t)) })
	t.Run("ConcurrentInstances", func(t *testing.T) { testHookConcurrent(t, newDB(t)) })
	t.Run("MarkKey", func(t *testing.T) { testHookMarkKey(t, newDB(t)) })
}

// pausedAppend returns the append of a turn that pauses on one call.
func pausedAppend(pauseID string) *toolgate.AppendParams {
	return &toolgate.AppendParams{
		Messages: []toolgate.Message{
			&toolgate.UserMessage{Text: "book VX205"},
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}},
		},
		Pause: &toolgate.PauseRecord{ID: pauseID, Awaiting: []string{"c1"}, CreatedAt: at},
	}
}

// requested is the audit record of a call that waits.
func requested(conv, pauseID string) *audit.Record {
	return &audit.Record{ConversationID: conv, PauseID: pauseID, CallKey: "c1", Tool: "bookFlight",
		Kind: audit.KindRequested, Actor: audit.Actor{ID: "ada", Source: audit.SourcePerson}, Reason: "awaiting a decision",
		ArgsDigest: audit.Digest([]byte(`{"flight":"VX205"}`))}
}

// auditOf returns the audit records of a conversation.
func auditOf(t *testing.T, rs records.Transactional, conv string) []*audit.Record {
	t.Helper()
	var out []*audit.Record
	for r, err := range rs.AuditLog().Records(t.Context(), &audit.Query{ConversationID: conv}) {
		if err != nil {
			t.Fatalf("audit records: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// sealAll seals the records of the store's audit log that are committed
// but not sealed yet, when the log seals after commit.
func sealAll(t *testing.T, rs records.Transactional) {
	t.Helper()
	if s, ok := rs.AuditLog().(audit.Sealer); ok {
		if _, err := s.SealPending(t.Context()); err != nil {
			t.Fatalf("SealPending: %v", err)
		}
	}
}

// pendingOf returns the index entry of a conversation, or nil.
func pendingOf(t *testing.T, rs records.Store, conv string) *records.Pending {
	t.Helper()
	page, err := rs.ListPending(t.Context(), nil)
	must(t, "ListPending", err)
	for i := range page.Pending {
		if page.Pending[i].ConversationID == conv {
			return &page.Pending[i]
		}
	}
	return nil
}

// pauseHook indexes the pause an append opens and audits its request.
func pauseHook(ran *int) records.Hook {
	return func(ctx context.Context, tx records.Tx, w *records.Write) error {
		*ran++
		if w.Append == nil || w.Append.Pause == nil {
			return fmt.Errorf("the hook got %+v, want an append that pauses", w)
		}
		if !w.PauseCreatedAt.Equal(w.Append.Pause.CreatedAt) && !w.Append.Pause.CreatedAt.IsZero() {
			return fmt.Errorf("the hook got the pause's time %v, want %v", w.PauseCreatedAt, w.Append.Pause.CreatedAt)
		}
		if err := tx.AddPending(&records.Pending{ConversationID: w.ConversationID, Agent: "flights", PauseID: w.Append.Pause.ID, CreatedAt: w.Append.Pause.CreatedAt}); err != nil {
			return err
		}
		return tx.Audit(requested(w.ConversationID, w.Append.Pause.ID))
	}
}

// wrapped is a record store that passes its calls on to the one it wraps.
type wrapped struct{ records.Transactional }

func (w wrapped) Unwrap() records.Store { return w.Transactional }

// testHookWrapper checks that a hook given for a store wrapping the record
// store (one with an Unwrap method) runs in the conversation store's
// writes, and its writes commit with them.
func testHookWrapper(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	var ran int
	ctx := records.WithHook(t.Context(), wrapped{wrapped{rs}}, pauseHook(&ran))
	must(t, "Append", cs.Append(ctx, "conv_1", pausedAppend("p1")))
	if ran != 1 {
		t.Fatalf("the hook given for a wrapper ran %d times, want once", ran)
	}
	if p := pendingOf(t, rs, "conv_1"); p == nil || p.PauseID != "p1" {
		t.Errorf("index entry %+v, want pause p1", p)
	}
}

func testHookPause(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	var ran int
	ctx := records.WithHook(t.Context(), rs, pauseHook(&ran))
	must(t, "Append", cs.Append(ctx, "conv_1", pausedAppend("p1")))
	if ran != 1 {
		t.Fatalf("the hook ran %d times, want once", ran)
	}
	conv, err := cs.Load(t.Context(), "conv_1")
	must(t, "Load", err)
	if conv.Pause == nil || conv.Pause.ID != "p1" {
		t.Fatalf("stored pause %+v, want p1", conv.Pause)
	}
	if p := pendingOf(t, rs, "conv_1"); p == nil || p.PauseID != "p1" || !p.CreatedAt.Equal(at) {
		t.Errorf("index entry %+v, want pause p1 created at %v", p, at)
	}
	// A pause without a time gets the store's, which the hook is told.
	var told time.Time
	untimed := pausedAppend("p2")
	untimed.Pause.CreatedAt = time.Time{}
	ctx = records.WithHook(t.Context(), rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
		told = w.PauseCreatedAt
		return nil
	})
	must(t, "Append", cs.Append(ctx, "conv_3", untimed))
	conv3, err := cs.Load(t.Context(), "conv_3")
	must(t, "Load", err)
	if told.IsZero() || !conv3.Pause.CreatedAt.Equal(told) {
		t.Errorf("the hook was told the pause's time %v, the store holds %v", told, conv3.Pause.CreatedAt)
	}
	// The record is read at once, sealed or not.
	if recs := auditOf(t, rs, "conv_1"); len(recs) != 1 || recs[0].Kind != audit.KindRequested {
		t.Fatalf("audit records %+v, want one requested record", recs)
	}
	sealAll(t, rs)
	recs := auditOf(t, rs, "conv_1")
	if len(recs) != 1 || recs[0].Kind != audit.KindRequested || recs[0].Seq != 1 {
		t.Fatalf("audit records %+v, want one requested record, seq 1", recs)
	}
	// The log in the database goes on from the hook's record.
	r := requested("conv_2", "p9")
	must(t, "AuditLog().Append", rs.AuditLog().Append(t.Context(), r))
	if r.Seq != 2 || r.PrevHash != recs[0].Hash {
		t.Errorf("a later append got seq %d after %q, want 2 after the hook's record", r.Seq, r.PrevHash)
	}
	if _, err := audit.Verify(t.Context(), rs.AuditLog(), nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func testHookRollback(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	boom := errors.New("the hook failed")
	ctx := records.WithHook(t.Context(), rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
		if err := tx.AddPending(&records.Pending{ConversationID: w.ConversationID, Agent: "flights", PauseID: "p1", CreatedAt: at}); err != nil {
			return err
		}
		if err := tx.Audit(requested(w.ConversationID, "p1")); err != nil {
			return err
		}
		return boom
	})
	if err := cs.Append(ctx, "conv_1", pausedAppend("p1")); !errors.Is(err, boom) {
		t.Fatalf("Append with a failing hook: %v, want the hook's error", err)
	}
	conv, err := cs.Load(t.Context(), "conv_1")
	must(t, "Load", err)
	if len(conv.Messages) != 0 || conv.Pause != nil {
		t.Errorf("after a failed hook the conversation holds %d messages and pause %+v, want nothing", len(conv.Messages), conv.Pause)
	}
	if p := pendingOf(t, rs, "conv_1"); p != nil {
		t.Errorf("after a failed hook the index holds %+v", p)
	}
	if recs := auditOf(t, rs, "conv_1"); len(recs) != 0 {
		t.Errorf("after a failed hook the audit log holds %d records", len(recs))
	}
	// An invalid audit record fails the write the same way.
	ctx = records.WithHook(t.Context(), rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
		return tx.Audit(&audit.Record{ConversationID: w.ConversationID, Kind: "launched", Actor: audit.Actor{Source: audit.SourceSystem}})
	})
	if err := cs.Append(ctx, "conv_1", pausedAppend("p1")); !errors.Is(err, audit.ErrInvalidRecord) {
		t.Fatalf("Append whose hook audits an invalid record: %v, want ErrInvalidRecord", err)
	}
	if conv, err := cs.Load(t.Context(), "conv_1"); err != nil || len(conv.Messages) != 0 {
		t.Errorf("after a refused audit record: %d messages, %v; want none", len(conv.Messages), err)
	}
	// And the same write without the hook goes through.
	must(t, "Append", cs.Append(t.Context(), "conv_1", pausedAppend("p1")))
}

var errTaken = errors.New("the decision was taken")

// claimHook begins the decision of the pause a claim takes and audits it;
// a decision already there fails the claim with errTaken.
func claimHook(by string, ran *int) records.Hook {
	return func(ctx context.Context, tx records.Tx, w *records.Write) error {
		*ran++
		if w.Claim == nil || w.PauseID == "" {
			return fmt.Errorf("the hook got %+v, want a claim", w)
		}
		prior, err := tx.Begin(&records.Decision{ConversationID: w.ConversationID, PauseID: w.PauseID, Source: records.SourcePerson,
			DecidedBy: by, DecidedAt: at, Decisions: w.Claim.Decisions, Outcome: records.OutcomeDeciding})
		if err != nil {
			return err
		}
		if prior != nil {
			return errTaken
		}
		return tx.Audit(&audit.Record{ConversationID: w.ConversationID, PauseID: w.PauseID, CallKey: "c1", Tool: "bookFlight",
			Kind: audit.KindDecided, Actor: audit.Actor{ID: by, Source: audit.SourcePerson}, Reason: "allow"})
	}
}

func testHookClaim(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	must(t, "Append", cs.Append(t.Context(), "conv_1", pausedAppend("p1")))
	var ran int
	claim := &toolgate.Claim{Token: "t1", At: at, Decisions: []toolgate.Decision{toolgate.Allow("c1")}, Started: []string{"c1"}}
	must(t, "ClaimPause", cs.ClaimPause(records.WithHook(t.Context(), rs, claimHook("bob", &ran)), "conv_1", "p1", claim))
	if ran != 1 {
		t.Fatalf("the hook ran %d times, want once", ran)
	}
	d, err := rs.Decision(t.Context(), "conv_1", "p1")
	must(t, "Decision", err)
	if d.DecidedBy != "bob" || d.Outcome != records.OutcomeDeciding {
		t.Errorf("decision %+v, want bob's, deciding", d)
	}
	if recs := auditOf(t, rs, "conv_1"); len(recs) != 1 || recs[0].Kind != audit.KindDecided {
		t.Errorf("audit records %+v, want one decided record", recs)
	}

	// A claim whose hook finds the decision taken is not made.
	must(t, "Append", cs.Append(t.Context(), "conv_2", pausedAppend("p2")))
	_, err = rs.Begin(t.Context(), &records.Decision{ConversationID: "conv_2", PauseID: "p2", Source: records.SourceExpiry, DecidedAt: at, Outcome: records.OutcomeDeciding})
	must(t, "Begin", err)
	claim2 := &toolgate.Claim{Token: "t2", At: at, Decisions: []toolgate.Decision{toolgate.Allow("c1")}, Started: []string{"c1"}}
	if err := cs.ClaimPause(records.WithHook(t.Context(), rs, claimHook("carol", &ran)), "conv_2", "p2", claim2); !errors.Is(err, errTaken) {
		t.Fatalf("ClaimPause whose hook refuses: %v, want the hook's error", err)
	}
	conv, err := cs.Load(t.Context(), "conv_2")
	must(t, "Load", err)
	if conv.Pause == nil || conv.Pause.Claimed || len(conv.Pause.Started) != 0 {
		t.Errorf("after a refused hook the pause is %+v, want it open, unclaimed, nothing started", conv.Pause)
	}
	if recs := auditOf(t, rs, "conv_2"); len(recs) != 0 {
		t.Errorf("after a refused hook the audit log holds %d records of conv_2", len(recs))
	}
}

func testHookMarkResolve(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	ctx := t.Context()
	p := pausedAppend("p1")
	p.Messages[1] = &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
		{ID: "c1", Name: "bookFlight", Arguments: `{}`}, {ID: "c2", Name: "bookHotel", Arguments: `{}`}}}
	p.Pause.Awaiting = []string{"c1", "c2"}
	must(t, "Append", cs.Append(ctx, "conv_1", p))
	must(t, "AddPending", rs.AddPending(ctx, &records.Pending{ConversationID: "conv_1", Agent: "flights", PauseID: "p1", CreatedAt: at}))
	_, err := rs.Begin(ctx, &records.Decision{ConversationID: "conv_1", PauseID: "p1", Source: records.SourcePerson, DecidedBy: "bob", DecidedAt: at, Outcome: records.OutcomeDeciding})
	must(t, "Begin", err)
	must(t, "ClaimPause", cs.ClaimPause(ctx, "conv_1", "p1", &toolgate.Claim{Token: "t1", At: at, Started: []string{"c1"},
		Decisions: []toolgate.Decision{toolgate.Allow("c1"), toolgate.Allow("c2")}}))

	// A mark whose hook fails is not recorded.
	boom := errors.New("boom")
	var got *records.Write
	fail := records.WithHook(ctx, rs, func(ctx context.Context, tx records.Tx, w *records.Write) error { got = w; return boom })
	if err := cs.MarkStarted(fail, "conv_1", "p1", "t1", []string{"c2"}); !errors.Is(err, boom) {
		t.Fatalf("MarkStarted with a failing hook: %v, want the hook's error", err)
	}
	if got == nil || len(got.Started) != 1 || got.Started[0] != "c2" || got.PauseID != "p1" {
		t.Errorf("the mark's hook got %+v, want the started key c2 of p1", got)
	}
	conv, err := cs.Load(ctx, "conv_1")
	must(t, "Load", err)
	if len(conv.Pause.Started) != 1 {
		t.Fatalf("after a failed hook the started keys are %v, want [c1]", conv.Pause.Started)
	}
	must(t, "MarkStarted", cs.MarkStarted(ctx, "conv_1", "p1", "t1", []string{"c2"}))

	// The resolution and its audit records commit together; the answer,
	// the outcome and the index removal too.
	resolve := records.WithHook(ctx, rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
		if w.Append == nil || w.Append.Resolves != "p1" {
			return fmt.Errorf("the hook got %+v, want the resolution of p1", w)
		}
		var recs []*audit.Record
		for _, k := range []string{"c1", "c2"} {
			recs = append(recs, &audit.Record{ConversationID: w.ConversationID, PauseID: "p1", CallKey: k, Kind: audit.KindExecuted, Actor: audit.Actor{ID: "bob", Source: audit.SourcePerson}, Reason: "ok"})
		}
		return tx.Audit(recs...)
	})
	must(t, "Append of the resolution", cs.Append(resolve, "conv_1", &toolgate.AppendParams{At: 2, Resolves: "p1", Messages: []toolgate.Message{
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "bookFlight", Content: "ok"}, {CallID: "c2", Name: "bookHotel", Content: "ok"}}}}}))
	answer := records.WithHook(ctx, rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
		return tx.Finish(w.ConversationID, "p1", records.OutcomeDecided)
	})
	must(t, "Append of the answer", cs.Append(answer, "conv_1", &toolgate.AppendParams{At: 3, Messages: []toolgate.Message{&toolgate.AssistantMessage{Text: "booked"}}}))
	if d, err := rs.Decision(ctx, "conv_1", "p1"); err != nil || d.Outcome != records.OutcomeDecided {
		t.Errorf("decision after the answer: %+v, %v; want decided", d, err)
	}
	if p := pendingOf(t, rs, "conv_1"); p != nil {
		t.Errorf("the index still holds %+v after the outcome", p)
	}
	if recs := auditOf(t, rs, "conv_1"); len(recs) != 2 {
		t.Errorf("%d audit records, want 2 executed", len(recs))
	}
	// Finish of a pause without a record fails its write.
	missing := records.WithHook(ctx, rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
		return tx.Finish(w.ConversationID, "nope", records.OutcomeDecided)
	})
	if err := cs.Append(missing, "conv_1", &toolgate.AppendParams{At: 4, Messages: []toolgate.Message{&toolgate.UserMessage{Text: "thanks"}}}); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Append whose hook finishes an unknown decision: %v, want ErrNotFound", err)
	}
	if conv, err := cs.Load(ctx, "conv_1"); err != nil || len(conv.Messages) != 4 {
		t.Errorf("after the failed hook: %d messages, %v; want 4", len(conv.Messages), err)
	}
}

func testHookRefused(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	var ran int
	ctx := records.WithHook(t.Context(), rs, func(context.Context, records.Tx, *records.Write) error { ran++; return nil })
	if err := cs.ClaimPause(ctx, "conv_1", "p1", &toolgate.Claim{Token: "t"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("ClaimPause of no pause: %v, want ErrNoOpenPause", err)
	}
	if err := cs.MarkStarted(ctx, "conv_1", "p1", "t", []string{"c1"}); !errors.Is(err, toolgate.ErrClaimLost) {
		t.Errorf("MarkStarted of no claim: %v, want ErrClaimLost", err)
	}
	if err := cs.Append(ctx, "conv_1", &toolgate.AppendParams{At: 3, Messages: []toolgate.Message{&toolgate.UserMessage{Text: "x"}}}); !errors.Is(err, toolgate.ErrConflict) {
		t.Errorf("Append at the wrong place: %v, want ErrConflict", err)
	}
	if ran != 0 {
		t.Errorf("the hook ran %d times for refused writes, want never", ran)
	}
}

func testHookOther(t *testing.T, open TxOpener) {
	cs, rs := open(t)
	if rs.ConversationStore() != cs {
		t.Errorf("ConversationStore() = %v, want the conversation store that made the record store", rs.ConversationStore())
	}
	var ran int
	other := records.NewMemory()
	ctx := records.WithHook(t.Context(), other, func(context.Context, records.Tx, *records.Write) error { ran++; return errors.New("not mine") })
	must(t, "Append", cs.Append(ctx, "conv_1", pausedAppend("p1")))
	if ran != 0 {
		t.Errorf("a hook for another record store ran %d times", ran)
	}
	// A nil hook removes one set before.
	ctx = records.WithHook(records.WithHook(t.Context(), rs, func(context.Context, records.Tx, *records.Write) error { ran++; return nil }), rs, nil)
	must(t, "Append", cs.Append(ctx, "conv_2", pausedAppend("p1")))
	if ran != 0 {
		t.Errorf("a removed hook ran %d times", ran)
	}
}

// testHookConcurrent has goroutines of two instances pause conversations
// at once, each pause audited in its own transaction: one chain holds
// every record, and the index every pause.
func testHookConcurrent(t *testing.T, open TxOpener) {
	type instance struct {
		cs toolgate.ConversationStore
		rs records.Transactional
	}
	var is [2]instance
	for i := range is {
		is[i].cs, is[i].rs = open(t)
	}
	const goroutines, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			in := is[g%2]
			for i := range each {
				conv := fmt.Sprintf("conv_%d_%d", g, i)
				ctx := records.WithHook(context.Background(), in.rs, func(ctx context.Context, tx records.Tx, w *records.Write) error {
					if err := tx.AddPending(&records.Pending{ConversationID: w.ConversationID, Agent: "flights", PauseID: "p1", CreatedAt: time.Now()}); err != nil {
						return err
					}
					return tx.Audit(requested(w.ConversationID, "p1"), requested(w.ConversationID, "p1"))
				})
				if err := in.cs.Append(ctx, conv, pausedAppend("p1")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sealAll(t, is[0].rs)
	rep, err := audit.Verify(t.Context(), is[1].rs.AuditLog(), nil)
	if err != nil || rep.Records != 2*goroutines*each {
		t.Errorf("Verify: %+v, %v; want %d intact records", rep, err, 2*goroutines*each)
	}
	page, err := is[0].rs.ListPending(t.Context(), &records.ListParams{Limit: records.MaxLimit})
	must(t, "ListPending", err)
	if len(page.Pending) != goroutines*each {
		t.Errorf("%d pauses indexed, want %d", len(page.Pending), goroutines*each)
	}
}
