package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/storekit"
)

// One transaction per step. When an agent's conversation store keeps the
// server's records in its own database ([records.Transactional]: the
// stores of packages store/sqlite and store/postgres, with Config.Records
// set to the store's Records(ctx) and Config.Audit to its AuditLog(), or
// nil), the server writes its records and audit records inside the
// transactions of the conversation store's own writes, through a
// [records.Hook]:
//
//   - the append that opens a pause also writes the pause's index entry
//     (with the tools it awaits) and its requested records;
//   - the claim of a pause a person, sticky grants or an expiry decides
//     (with the first calls marked started) also writes the decision
//     record and its decided and edited records: of two deciders, the
//     one whose claim commits first holds the record, and the other's
//     claim, finding the record, is rolled back;
//   - the append that resolves a decided pause also writes the executed,
//     denied and refused records of its calls;
//   - the append of the resumed turn's answer (or of its next pause)
//     also sets the decision's outcome, which takes the pause out of the
//     index; for an expiry, which stores no answer, the resolution does.
//
// A recovery writes the records of the resolution it stores, and the
// outcome "recovered", the same way.
//
// So each of those steps is atomic: a crash, a lost connection or a full
// disk leaves all of a step or none of it, never a pause missing from the
// inbox or from the audit log, never a resolution without its records.
// Other stores keep the separate writes (audit.go, index.go).

// txAgents returns the names of the agents whose stores run the server's
// hooks: see above.
func (s *Server) txAgents() map[string]bool {
	t, ok := s.cfg.Records.(records.Transactional)
	if !ok {
		return nil
	}
	if s.cfg.Audit != nil && s.cfg.Audit != t.AuditLog() {
		// Records in the store, audit records elsewhere: writing some of
		// them in the store's log would split the history.
		return nil
	}
	out := map[string]bool{}
	for name, a := range s.cfg.Agents {
		if wraps(a.Client.Store(), t.ConversationStore()) {
			out[name] = true
		}
	}
	return out
}

// wraps reports whether cs is base, or a store that wraps it: one with a
// method Unwrap() toolgate.ConversationStore returning the store it passes
// every call on to, with the caller's context (so that the server's hooks
// reach base), or a store wrapping such a store.
func wraps(cs, base toolgate.ConversationStore) bool {
	for range 16 {
		if cs == base {
			return true
		}
		u, ok := cs.(interface {
			Unwrap() toolgate.ConversationStore
		})
		if !ok {
			return false
		}
		cs = u.Unwrap()
	}
	return false
}

// txNotes says what the hook of one request wrote in the store's
// transactions, so that the request does not write it again. It is safe
// for concurrent use.
type txNotes struct {
	mu       sync.Mutex
	begun    *records.Decision // guarded by mu: the decision record written with the claim, if its commit went through
	paused   map[string]bool   // guarded by mu: pauses indexed and audited with their append
	resolved string            // guarded by mu: the pause whose resolution's records were written with it
	finished bool              // guarded by mu: the decision's outcome set with the answer
	notified map[Event]bool    // guarded by mu: events notified in the transactions that made them
}

type txNotesKey struct{}

// notes returns the notes ctx carries, or nil.
func notes(ctx context.Context) *txNotes {
	n, _ := ctx.Value(txNotesKey{}).(*txNotes)
	return n
}

// pausedInTx reports whether the pause's index entry and requested records
// were written with it.
func pausedInTx(ctx context.Context, pauseID string) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused[pauseID]
}

// resolvedInTx reports whether the audit records of the resolution of
// pause pauseID were written with it.
func resolvedInTx(ctx context.Context, pauseID string) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.resolved != "" && n.resolved == pauseID
}

// notifiedInTx reports whether e was notified in the transaction of the
// write it tells of.
func notifiedInTx(ctx context.Context, e Event) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.notified[e]
}

// notifyInTx notifies e inside tx, the transaction of the write e tells
// of, when the broker listens to the store's notifications; it notes e in
// n (whose mu the caller holds), so that [Server.publish] does not send it
// again after the commit.
func (s *Server) notifyInTx(tx records.Tx, n *txNotes, e Event) error {
	nt, ok := tx.(records.Notifier)
	if !ok || s.events.txChannel == "" {
		return nil
	}
	payload, err := encodeEvent(e)
	if err != nil {
		return err
	}
	if err := nt.Notify(s.events.txChannel, payload); err != nil {
		return err
	}
	n.notified[e] = true
	return nil
}

// finishedInTx reports whether the decision's outcome was set with the
// answer.
func finishedInTx(ctx context.Context) bool {
	n := notes(ctx)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.finished
}

// begunInTx returns the decision record the request wrote with its
// claim, or nil. Whether that claim committed is for the caller to find
// out: a commit whose answer was lost may or may not have happened.
func begunInTx(ctx context.Context) *records.Decision {
	n := notes(ctx)
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.begun
}

// sameDecision reports whether a and b are one decision record: begun at
// the same instant by the same source and person.
func sameDecision(a, b *records.Decision) bool {
	return a.DecidedAt.Equal(b.DecidedAt) && a.Source == b.Source && a.DecidedBy == b.DecidedBy
}

// resumption is what the hook of a decision's request knows of the pause
// it resumes.
type resumption struct {
	pauseID   string
	reply     *toolgate.AssistantMessage
	actor     audit.Actor
	decisions []toolgate.Decision
	// begin, when not nil, is the decision record the claim writes, with
	// decided, its audit records.
	begin   *records.Decision
	decided []*audit.Record
	// outcome is the outcome the answer (or, with finishOnResolve, the
	// resolution) sets: decided when "".
	outcome         records.Outcome
	finishOnResolve bool
}

// decidedElsewhere is the error of a claim whose pause already has a
// decision record: another decision came first, and the claim is rolled
// back.
type decidedElsewhere struct{ rec *records.Decision }

func (e *decidedElsewhere) Error() string {
	return "server: the pause was decided first by another request"
}

// withTx returns ctx carrying the hook that writes the records of turns of
// conversation c in the store's transactions, and the notes of what it
// wrote, when c's agent's store runs hooks; ctx otherwise. res is the
// pause the request resumes, or nil for a new turn.
func (s *Server) withTx(ctx context.Context, c *conversation, res *resumption) context.Context {
	if !s.tx[c.Agent] {
		return ctx
	}
	n := &txNotes{paused: map[string]bool{}, notified: map[Event]bool{}}
	// A resumption inside a turn (a sticky one) tells the turn of the
	// pauses it wrote too.
	parent := notes(ctx)
	outcome := outcomeDecided
	if res != nil && res.outcome != "" {
		outcome = res.outcome
	}
	// What the hook's writes need that does not depend on the store,
	// found before the writes rather than inside their transactions: the
	// request's idempotency key (every write of the hook runs under a
	// context derived from ctx), and the argument digests of the records
	// of the resolution.
	kh := heldKey(ctx)
	var digests map[string]string
	if res != nil && res.reply != nil && s.audit != nil {
		digests = s.audit.argDigests(res.reply, res.decisions)
	}
	hook := func(ctx context.Context, tx records.Tx, w *records.Write) error {
		if w.ConversationID != c.ID {
			return nil
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if kh != nil {
			// The request's idempotency key says this write took effect
			// exactly when it commits (idempotency.go). A record no
			// longer held (settled before a late write) needs no mark.
			if err := tx.MarkKey(kh.scope, kh.key, kh.token); err != nil && !errors.Is(err, records.ErrNotFound) {
				return err
			}
		}
		if w.Claim != nil && res != nil && res.begin != nil && w.PauseID == res.pauseID && n.begun == nil {
			old, err := tx.Begin(res.begin)
			if err != nil {
				return err
			}
			if old != nil {
				return &decidedElsewhere{rec: old}
			}
			if len(res.decided) > 0 {
				if err := tx.Audit(res.decided...); err != nil {
					return err
				}
			}
			n.begun = res.begin
			return nil
		}
		ap := w.Append
		if ap == nil {
			return nil
		}
		if res != nil && ap.Resolves == res.pauseID && n.resolved == "" {
			if msg, ok := ap.Messages[0].(*toolgate.ToolMessage); ok && s.audit != nil {
				if err := tx.Audit(s.audit.resolutionDigested(c.ID, res.pauseID, res.reply, msg, res.actor, res.decisions, digests)...); err != nil {
					return err
				}
			}
			n.resolved = res.pauseID
		}
		if res != nil && n.resolved != "" && !n.finished && (res.finishOnResolve || ap.Pause != nil || answers(ap.Messages)) {
			if err := tx.Finish(c.ID, res.pauseID, outcome); err != nil {
				return err
			}
			kind := EventDecided
			if outcome == outcomeExpired {
				kind = EventExpired
			}
			if err := s.notifyInTx(tx, n, Event{ConversationID: c.ID, Kind: kind, PauseID: res.pauseID}); err != nil {
				return err
			}
			n.finished = true
		}
		if answers(ap.Messages) {
			if err := s.notifyInTx(tx, n, Event{ConversationID: c.ID, Kind: EventCompleted}); err != nil {
				return err
			}
		}
		if ap.Pause != nil {
			if err := tx.AddPending(&records.Pending{ConversationID: c.ID, Agent: c.Agent, PauseID: ap.Pause.ID, CreatedAt: w.PauseCreatedAt,
				Tools: awaitingTools(ap.Messages[len(ap.Messages)-1], ap.Pause.Awaiting)}); err != nil {
				return err
			}
			if s.audit != nil {
				if err := tx.Audit(s.requested(c, ap.Pause, ap.Messages[len(ap.Messages)-1])...); err != nil {
					return err
				}
			}
			if err := s.notifyInTx(tx, n, Event{ConversationID: c.ID, Kind: EventPaused, PauseID: ap.Pause.ID}); err != nil {
				return err
			}
			n.paused[ap.Pause.ID] = true
			if parent != nil {
				parent.mu.Lock()
				parent.paused[ap.Pause.ID] = true
				parent.mu.Unlock()
			}
		}
		return nil
	}
	return context.WithValue(records.WithHook(ctx, s.cfg.Records, hook), txNotesKey{}, n)
}

// answers reports whether msgs end with the model's answer: a reply
// without tool calls.
func answers(msgs []toolgate.Message) bool {
	last, ok := msgs[len(msgs)-1].(*toolgate.AssistantMessage)
	return ok && !last.HasToolCalls()
}

// requested returns the requested records of the pause pr opened on msg,
// the paused reply, for conversation c.
func (s *Server) requested(c *conversation, pr *toolgate.PauseRecord, msg toolgate.Message) []*audit.Record {
	reply, ok := msg.(*toolgate.AssistantMessage)
	if !ok {
		return nil
	}
	keys := reply.CallKeys()
	var recs []*audit.Record
	for i, call := range reply.ToolCalls {
		if slices.Contains(pr.Awaiting, keys[i]) {
			recs = append(recs, s.audit.callRecord(c.ID, pr.ID, keys[i], call, audit.KindRequested, person(&c.Owner), "awaiting a decision"))
		}
	}
	return recs
}

// beginDecision starts the decision rec on the open pause of conv, the
// conversation of c, decided by actor: with a store that runs the
// server's hooks it returns ctx carrying the hook that writes rec and its
// decided records in the transaction of the resumption's claim, along
// with what res says of the rest (see above); otherwise it writes them now.
// prior is the record of a decision that came first, when one did: then
// nothing was begun. An error means nothing was begun either.
func (s *Server) beginDecision(ctx context.Context, c *conversation, conv *toolgate.Conversation, rec *records.Decision, actor audit.Actor, res *resumption) (_ context.Context, prior *records.Decision, err error) {
	if s.tx[c.Agent] {
		res.begin, res.decided = rec, s.decidedRecords(c, conv, actor, rec.Decisions)
		return s.withTx(ctx, c, res), nil, nil
	}
	if old, err := s.cfg.Records.Begin(ctx, rec); err != nil || old != nil {
		return ctx, old, err
	}
	if err := s.auditDecided(ctx, c, conv, actor, rec.Decisions); err != nil {
		s.finish(ctx, c.ID, rec.PauseID, records.OutcomeNone)
		return ctx, nil, err
	}
	return ctx, nil, nil
}

// resumeFailed settles the decision of pause pauseID of c begun with
// [Server.beginDecision] (ctx is the one it returned) whose resumption
// failed with err. It reports whether another decision took the pause
// first, with that decision's record when it is known: the caller then
// answers 409. Otherwise it records the failure: nothing when the claim
// that would have begun the decision never committed, and
// [Server.finishFailed] when the decision was begun.
func (s *Server) resumeFailed(ctx context.Context, c *conversation, pauseID string, err error) (taken bool, prior *records.Decision) {
	ctx = context.WithoutCancel(ctx)
	if n := notes(ctx); n != nil {
		// The failed write's events may have rolled back with it: the
		// events published from now on are sent after their commits.
		n.mu.Lock()
		clear(n.notified)
		n.mu.Unlock()
	}
	var de *decidedElsewhere
	switch {
	case errors.As(err, &de):
		return true, de.rec
	case !s.tx[c.Agent]:
		if errors.Is(err, toolgate.ErrNoOpenPause) {
			// Another server on the same store took the pause first
			// without a shared record: this request decided nothing.
			s.finish(ctx, c.ID, pauseID, records.OutcomeNone)
			return true, nil
		}
	default:
		// Whose record the pause has, if any, says whether the claim
		// that would have begun this decision committed.
		rec, derr := settling(ctx, func() (*records.Decision, error) { return s.decision(ctx, c.ID, pauseID) })
		own := begunInTx(ctx)
		switch {
		case derr != nil:
			// A record of this decision, if committed, stays "deciding";
			// the recovery of claims reads the index and finishes it
			// after the lease.
			s.logger.ErrorContext(ctx, "server: reading the decision of a failed resumption failed", "conversation", c.ID, "pause", pauseID, "err", logcap.Error(derr))
			return false, nil
		case rec == nil:
			// No claim committed: the pause is as it was, open.
			return false, nil
		case own == nil || !sameDecision(rec, own):
			// Claimed by another decision first.
			return true, rec
		case rec.Outcome.Resolves():
			// The answer's commit went through, though its reply was
			// lost: the decision stands as stored.
			return false, nil
		}
	}
	s.finishFailed(ctx, c, pauseID)
	return false, nil
}

// settleAttempts bounds the attempts of a read or write that settles a
// failed resumption while the store says it is unavailable, and
// settleBackoff is the wait before the second attempt, doubled before
// each one after it. The failure that ended the resumption is often a
// lost connection, and then the pool's other idle connections are
// usually dead too (a restarted database, connections ended by an
// administrator): each attempt may take one of them, fail on it and have
// it dropped, until the pool dials a live one. Without the retries the
// decision record would stay "deciding", refusing every retry with 409,
// until the recovery of claims takes it after the lease. The attempts
// take at most about a third of a second.
const (
	settleAttempts = 8
	settleBackoff  = 5 * time.Millisecond
)

// settling runs fn until it succeeds, fails with an error that does not
// say the store is unavailable ([storekit.Unavailable]), or has run
// [settleAttempts] times, and returns its last outcome. fn must be safe
// to repeat: a read, or a write that sets a value.
func settling[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	v, err := fn()
	wait := settleBackoff
	for i := 1; i < settleAttempts && storekit.Unavailable(err); i++ {
		if i > 1 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return v, err
			case <-t.C:
			}
			wait *= 2
		}
		v, err = fn()
	}
	return v, err
}
