package server

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/server/records"
)

// Recovery of abandoned claims. A decided pause is claimed by the
// resumption that runs its calls; when that resumption stops before storing
// its results (the process died, the store failed), the pause stays
// claimed. A background goroutine looks at the conversations the server
// knows, at start and then at least once per lease, and recovers every
// pause claimed longer than [Config.ClaimLease] ago with
// [toolgate.Client.RecoverPause], for the conversation's owner: calls
// recorded as started answer "interrupted" and never run again, the others
// run, and the turn continues. Pauses this server is still deciding are
// left to their decision. With several instances on one store, the first to
// take a claim over recovers it; the others find it taken.

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
				s.logger.ErrorContext(ctx, "server: recovery: reading the open pauses failed", "err", err)
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
					s.logger.ErrorContext(ctx, "server: recovery: reading a conversation's record failed", "conversation", e.ConversationID, "err", err)
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
					s.logger.ErrorContext(ctx, "server: recovery: loading a conversation failed", "conversation", c.ID, "err", err)
				}
				continue
			}
			pr := conv.Pause
			if pr == nil || pr.ID != e.PauseID {
				// Resolved: the index entry is stale.
				s.unindexPause(ctx, c.ID, e.PauseID)
				continue
			}
			if !pr.Claimed {
				continue
			}
			if due := pr.ClaimedAt.Add(lease); time.Now().Before(due) {
				if next.IsZero() || due.Before(next) {
					next = due
				}
				continue
			}
			s.recoverClaim(ctx, a, c, pr.ID, lease)
		}
		if page.Next == "" {
			return next
		}
		params = &records.ListParams{After: page.Next, Limit: records.MaxLimit}
	}
}

// recoverClaim recovers the claimed pause pauseID of conversation c.
func (s *Server) recoverClaim(ctx context.Context, a *Agent, c *conversation, pauseID string, lease time.Duration) {
	res, err := a.Client.RecoverPause(ctx, &toolgate.RecoverParams{ConversationID: c.ID, PauseID: pauseID, Principal: &c.Owner, Lease: lease})
	switch {
	case err == nil:
		s.finish(ctx, c.ID, pauseID, outcomeRecovered)
		s.unindexPause(ctx, c.ID, pauseID)
		interrupted := 0
		for _, r := range res.Results {
			if r.Status == toolgate.ResultInterrupted {
				interrupted++
			}
		}
		s.logger.WarnContext(ctx, "server: recovered a pause whose resumption stopped", "conversation", c.ID, "pause", pauseID, "interrupted_calls", interrupted)
		// The continued turn may have paused again.
		s.kickSweeper()
	case errors.Is(err, toolgate.ErrClaimActive), errors.Is(err, toolgate.ErrClaimLost), errors.Is(err, toolgate.ErrNoOpenPause),
		errors.Is(err, toolgate.ErrNotClaimed), errors.Is(err, toolgate.ErrConflict):
		// Its claimant finished, or another instance recovered it first.
	case ctx.Err() == nil:
		s.logger.ErrorContext(ctx, "server: recovering a pause failed", "conversation", c.ID, "pause", pauseID, "err", err)
	}
}
