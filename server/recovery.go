package server

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// Recovery of abandoned claims. A decided pause is claimed by the
// resumption that runs its calls; when that resumption stops before storing
// its results (the process died, the store failed), the pause stays
// claimed. A background goroutine looks at the conversations the server
// knows, at start and then at least once per lease, and recovers every
// pause claimed longer than [Config.ClaimLease] ago with
// [toolgate.Client.RecoverPause], for the conversation's owner as resolved
// now (see identity.go; an owner the server cannot resolve postpones the
// recovery, which nothing then runs of, until the next sweep): calls
// recorded as started answer "interrupted" and never run again, the others
// run, and the turn continues. Pauses this server is still deciding are
// left to their decision. With several instances on one store, the first to
// take a claim over recovers it; the others find it taken.
//
// A decider that dies can leave two more states, finished the same way
// once the decision record is older than the lease: a record "deciding" on
// a pause never claimed (it died between [records.Store.Begin] and the
// claim: nothing ran, and the record would refuse every later decision) is
// carried out with the recorded decisions, claiming the pause like any
// resumption, so that one instance wins; a record "deciding" on a pause
// whose results were stored (it died before finishing the record) becomes
// "decided". A recovered turn that pauses again is indexed like any turn.

// DefaultClaimLease is the claim lease when [Config.ClaimLease] is 0.
const DefaultClaimLease = 5 * time.Minute

// outcomeRecovered is the outcome of a decision whose resumption stopped
// after claiming the pause, and which the server then recovered.
const outcomeRecovered = records.OutcomeRecovered

// claimLease returns the lease after which a claim is recovered, 0 for
// never.
func (s *Server) claimLease() time.Duration {
	switch l := s.cfg.ClaimLease; {
	case l < 0:
		return 0
	case l == 0:
		return DefaultClaimLease
	default:
		return l
	}
}

// startRecovery starts the background recovery of abandoned claims; it
// returns nil when claims are never recovered.
func (s *Server) startRecovery() *sweeper {
	lease := s.claimLease()
	if lease <= 0 {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	sw := &sweeper{kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go s.recoveryLoop(ctx, sw, lease)
	return sw
}

// stopRecovery stops the background recovery and waits for it to return.
func (s *Server) stopRecovery() {
	if s.recoverer == nil {
		return
	}
	s.recoverer.stop()
	<-s.recoverer.done
}

// recoveryLoop recovers due claims, then sleeps until the next one is due
// or a lease has passed (a claim made meanwhile is due no sooner), until
// ctx is canceled.
func (s *Server) recoveryLoop(ctx context.Context, sw *sweeper, lease time.Duration) {
	defer close(sw.done)
	for {
		next := s.recoverClaims(ctx, lease)
		s.pruneKeys(ctx)
		if wake := time.Now().Add(lease); next.IsZero() || wake.Before(next) {
			next = wake
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
		case <-sw.kick:
		case <-timer.C:
		}
		timer.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// recoverClaims recovers every pause claimed at least lease ago and
// returns when the earliest claim still held will be due (zero for none).
// It reads the index of open pauses, where a claimed pause stays until
// its resolution is stored. A claim older than the lease is recovered even
// when a record says "deciding": the record may be of a process that died,
// and a live claimant that is merely slow loses its claim, so it cannot
// start a call the recovery runs.
func (s *Server) recoverClaims(ctx context.Context, lease time.Duration) time.Time {
	var next time.Time
	for params := (&records.ListParams{Limit: records.MaxLimit}); ; {
		page, err := s.cfg.Records.ListPending(ctx, params)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.ErrorContext(ctx, "server: recovery: reading the open pauses failed", "err", logcap.Error(err))
			}
			return next
		}
		for _, e := range page.Pending {
			if ctx.Err() != nil {
				return time.Time{}
			}
			c, err := s.conversation(ctx, e.ConversationID)
			if err != nil || c == nil {
				if err != nil && ctx.Err() == nil {
					s.logger.ErrorContext(ctx, "server: recovery: reading a conversation's record failed", "conversation", e.ConversationID, "err", logcap.Error(err))
				}
				continue
			}
			a := s.cfg.Agents[c.Agent]
			if a == nil {
				continue
			}
			conv, err := a.Client.Store().Load(ctx, c.ID)
			if err != nil {
				if ctx.Err() == nil {
					s.logger.ErrorContext(ctx, "server: recovery: loading a conversation failed", "conversation", c.ID, "err", logcap.Error(err))
				}
				continue
			}
			later := func(due time.Time) {
				if next.IsZero() || due.Before(next) {
					next = due
				}
			}
			pr := conv.Pause
			switch {
			case pr == nil || pr.ID != e.PauseID:
				// Resolved: the index entry is stale, unless its decision
				// record still says "deciding" (see settleResolved).
				if due := s.settleResolved(ctx, c, e.PauseID, lease); !due.IsZero() {
					later(due)
					continue
				}
				s.unindexPause(ctx, c.ID, e.PauseID)
			case !pr.Claimed:
				if due := s.resumeBegun(ctx, c, conv, lease); !due.IsZero() {
					later(due)
				}
			case time.Now().Before(pr.ClaimedAt.Add(lease)):
				later(pr.ClaimedAt.Add(lease))
			default:
				s.recoverClaim(ctx, a, c, conv, lease)
			}
		}
		if page.Next == "" {
			return next
		}
		params = &records.ListParams{After: page.Next, Limit: records.MaxLimit}
	}
}

// recoverClaim recovers the claimed pause of conv, the conversation of c
// as loaded.
func (s *Server) recoverClaim(ctx context.Context, a *Agent, c *conversation, conv *toolgate.Conversation, lease time.Duration) {
	pauseID := conv.Pause.ID
	owner := s.runnableOwner(c)
	if owner == nil {
		// Fail closed: the claim stays, and is tried again on the next
		// sweep, once the owner is known again.
		s.logger.WarnContext(ctx, "server: recovery postponed: the conversation's owner is unknown now or may not use the agent", "conversation", c.ID, "pause", pauseID)
		return
	}
	if s.tx[c.Agent] {
		// The resolution is stored with its records, and the answer
		// with the outcome "recovered" (txaudit.go).
		rec, err := s.decision(ctx, c.ID, pauseID)
		if err != nil {
			s.logger.ErrorContext(ctx, "server: recovery: reading a decision record failed", "conversation", c.ID, "pause", pauseID, "err", logcap.Error(err))
			return
		}
		_, reply := pausedReply(conv)
		ctx = s.withTx(ctx, c, &resumption{pauseID: pauseID, reply: reply, actor: recordActor(rec), decisions: conv.Pause.Decisions,
			outcome: records.OutcomeRecovered})
	}
	res, err := a.Client.RecoverPause(ctx, &toolgate.RecoverParams{ConversationID: c.ID, PauseID: pauseID, Principal: owner, Lease: lease})
	switch {
	case err == nil:
		interrupted := 0
		for _, r := range res.Results {
			if r.Status == toolgate.ResultInterrupted {
				interrupted++
			}
		}
		s.logger.WarnContext(ctx, "server: recovered a pause whose resumption stopped", "conversation", c.ID, "pause", pauseID, "interrupted_calls", interrupted)
		s.recovered(ctx, c, conv, conv.Pause.Decisions, res.Response)
	case errors.Is(err, toolgate.ErrClaimActive), errors.Is(err, toolgate.ErrClaimLost), errors.Is(err, toolgate.ErrNoOpenPause),
		errors.Is(err, toolgate.ErrNotClaimed), errors.Is(err, toolgate.ErrConflict):
		// Its claimant finished, or another instance recovered it first.
	case ctx.Err() == nil:
		s.logger.ErrorContext(ctx, "server: recovering a pause failed", "conversation", c.ID, "pause", pauseID, "err", logcap.Error(err))
	}
}

// resumeBegun resumes the open, unclaimed pause of conv, the conversation
// of c as loaded, when its decision record says "deciding" since at least
// lease ago: the decider stopped after recording its decision and before
// claiming the pause (between [records.Store.Begin] and the claim), so
// nothing ran, and every later decision would be refused with the record.
// The recorded decisions are carried out, as the decider would have. It
// returns when the record will be due, or zero when there is nothing to
// wait for (no such record, or it was resumed now).
func (s *Server) resumeBegun(ctx context.Context, c *conversation, conv *toolgate.Conversation, lease time.Duration) time.Time {
	pr := conv.Pause
	rec, err := s.decision(ctx, c.ID, pr.ID)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.logger.ErrorContext(ctx, "server: recovery: reading a decision record failed", "conversation", c.ID, "pause", pr.ID, "err", logcap.Error(err))
		}
		return time.Time{}
	case rec == nil || rec.Outcome != outcomeDeciding:
		return time.Time{} // waiting for a decision
	case time.Now().Before(rec.DecidedAt.Add(lease)):
		return rec.DecidedAt.Add(lease)
	}
	owner := s.runnableOwner(c)
	if owner == nil {
		s.logger.WarnContext(ctx, "server: recovery postponed: the conversation's owner is unknown now or may not use the agent", "conversation", c.ID, "pause", pr.ID)
		return time.Now().Add(lease)
	}
	if err := s.auditDecidedOnce(ctx, c, conv, recordActor(rec), rec.Decisions); err != nil {
		if ctx.Err() == nil {
			s.logger.ErrorContext(ctx, "server: recovery: writing the decided records failed", "conversation", c.ID, "pause", pr.ID, "err", logcap.Error(err))
		}
		return time.Now().Add(lease)
	}
	params := &toolgate.ResumeTurnParams{ConversationID: c.ID, PauseID: pr.ID, Principal: owner, Decisions: rec.Decisions}
	// The decider as the server knows them now decides (one it cannot
	// resolve decides nothing, and the pause goes back to the inbox).
	switch rec.Source {
	case records.SourcePerson:
		params.MayDecide = s.decider(s.principalNow(rec.DecidedBy), c)
	case records.SourceSticky:
		params.MayDecide = s.grantDecider(c, rec.Grants)
	}
	resp, err := s.resume(ctx, c, pr.Awaiting, params)
	switch {
	case err == nil:
		s.logger.WarnContext(ctx, "server: resumed a pause whose decider stopped before claiming it", "conversation", c.ID, "pause", pr.ID)
		s.recovered(ctx, c, conv, rec.Decisions, resp)
	case errors.Is(err, toolgate.ErrNoOpenPause):
		// Claimed meanwhile: by the decider, slow but alive, or by
		// another instance's recovery.
	case ctx.Err() == nil:
		// The decision cannot run (or the store failed): the pause goes
		// back to the inbox, to be decided again.
		s.logger.ErrorContext(ctx, "server: resuming a pause whose decider stopped failed", "conversation", c.ID, "pause", pr.ID, "err", logcap.Error(err))
		s.auditResolved(ctx, c, conv, recordActor(rec), rec.Decisions, err)
		s.finishFailed(ctx, c, pr.ID)
	}
	return time.Time{}
}

// settleResolved looks at the decision record of pause pauseID of c, which
// the store holds as resolved: a record that still says "deciding" since
// at least lease ago is of a decider that stopped after storing the
// resolution and before recording its outcome, and becomes "decided". It
// returns when the record will be due, or zero when the index entry may
// go.
func (s *Server) settleResolved(ctx context.Context, c *conversation, pauseID string, lease time.Duration) time.Time {
	rec, err := s.decision(ctx, c.ID, pauseID)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.logger.ErrorContext(ctx, "server: recovery: reading a decision record failed", "conversation", c.ID, "pause", pauseID, "err", logcap.Error(err))
		}
		return time.Now().Add(lease) // keep the entry; look again later
	case rec == nil || rec.Outcome != outcomeDeciding:
		return time.Time{}
	case time.Now().Before(rec.DecidedAt.Add(lease)):
		return rec.DecidedAt.Add(lease)
	}
	s.finish(ctx, c.ID, pauseID, outcomeDecided)
	s.publish(ctx, c.ID, EventDecided, pauseID)
	return time.Time{}
}

// dropStale removes the index entry of pause pauseID of c, which the
// store holds as resolved, unless its decision record still says
// "deciding": the recovery of claims then finishes the record first (see
// settleResolved), and finds it through the entry.
func (s *Server) dropStale(ctx context.Context, c *conversation, pauseID string) {
	if lease := s.claimLease(); lease > 0 && !s.settleResolved(ctx, c, pauseID, lease).IsZero() {
		return
	}
	s.unindexPause(ctx, c.ID, pauseID)
}

// recovered records that a recovery resolved the pause of conv (the
// conversation of c as loaded before, the pause open) with decisions: the
// outcome "recovered", the index, the audit records of the resolution, the
// events, and the continued turn resp (nil: none), which may have paused
// again.
func (s *Server) recovered(ctx context.Context, c *conversation, conv *toolgate.Conversation, decisions []toolgate.Decision, resp *toolgate.Response) {
	pauseID := conv.Pause.ID
	rec, err := s.decision(ctx, c.ID, pauseID)
	if err != nil {
		s.logger.ErrorContext(ctx, "server: recovery: reading a decision record failed", "conversation", c.ID, "pause", pauseID, "err", logcap.Error(err))
	}
	if !resolvedInTx(ctx, pauseID) {
		s.auditResolved(ctx, c, conv, recordActor(rec), decisions, nil)
	}
	if !finishedInTx(ctx) {
		s.finish(ctx, c.ID, pauseID, outcomeRecovered) // and out of the index
	}
	s.publish(ctx, c.ID, EventDecided, pauseID)
	if resp != nil {
		out, err := s.turnResult(ctx, c, resp)
		if err != nil {
			s.logger.ErrorContext(ctx, "server: recovery: the continued turn's outcome failed", "conversation", c.ID, "err", logcap.Error(err))
		} else {
			s.publishTurn(ctx, out)
		}
	}
	// The continued turn may have paused again.
	s.kickSweeper()
}

// recordActor is the audit actor of a decision record: the person, the
// sticky grants, or the system when there is no record.
func recordActor(rec *DecisionRecord) audit.Actor {
	switch {
	case rec == nil:
		return audit.Actor{Source: audit.SourceSystem}
	case rec.Source == records.SourceSticky:
		return stickyActor(rec.Grants)
	case rec.DecidedBy != "":
		return audit.Actor{ID: rec.DecidedBy, Source: audit.SourcePerson}
	}
	return audit.Actor{Source: audit.SourceSystem}
}

// auditDecidedOnce writes the decided records of a decision on the open
// pause of conv, as [Server.auditDecided] does, unless the log already
// holds decided records of the pause: its decider may have stopped before
// or after writing them.
func (s *Server) auditDecidedOnce(ctx context.Context, c *conversation, conv *toolgate.Conversation, actor audit.Actor, decisions []toolgate.Decision) error {
	if s.audit == nil {
		return nil
	}
	for r, err := range s.audit.log.Records(ctx, &audit.Query{ConversationID: c.ID}) {
		if err != nil {
			return err
		}
		if r.PauseID == conv.Pause.ID && r.Kind == audit.KindDecided {
			return nil
		}
	}
	return s.auditDecided(ctx, c, conv, actor, decisions)
}
