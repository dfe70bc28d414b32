package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// Pause expiry. A pending pause older than its agent's time-to-live (see
// [Config.PauseTTL] and [Agent.PauseTTL]) is expired: its calls answer the
// model with [toolgate.ResultExpired] results through
// [toolgate.Client.ExpireOpenPause], nothing runs, and the pause's
// decision record says "expired". It happens lazily, when a request
// touches the pause (the inbox, a decision, reading or posting to its
// conversation), and in the background, by a sweeper that wakes at the
// earliest deadline. Expiry takes the pause in the index exactly like a
// decision does, so a pause is either decided or expired, never both.
//
// Deadlines are the store's CreatedAt plus the time-to-live, both on the
// system clock: the store stamps CreatedAt with time.Now. Tests control
// time with testing/synctest.

// sweepRetry is how soon the sweeper tries again to expire a pause whose
// expiry failed.
const sweepRetry = 10 * time.Second

// sweeper is the background expiry goroutine's handle.
type sweeper struct {
	kick chan struct{} // capacity 1: a pause was opened or released
	stop context.CancelFunc
	done chan struct{} // closed when the goroutine has returned
}

// expiryProblems returns the problems of the time-to-live settings.
func (c *Config) expiryProblems() []error {
	var errs []error
	if c.PauseTTL < 0 {
		errs = append(errs, fmt.Errorf("pause_ttl %v is negative", c.PauseTTL))
	}
	return errs
}

// ttl returns how long a pause of agent may wait: 0 when it never
// expires.
func (s *Server) ttl(agent string) time.Duration {
	a := s.cfg.Agents[agent]
	switch {
	case a == nil || a.PauseTTL < 0:
		return 0
	case a.PauseTTL > 0:
		return a.PauseTTL
	}
	return s.cfg.PauseTTL
}

// deadline returns when the pause pr of conversation c expires, and false
// when it never does (no time-to-live, or a pause already claimed).
func (s *Server) deadline(c *conversation, pr *toolgate.PauseRecord) (time.Time, bool) {
	ttl := s.ttl(c.Agent)
	if ttl <= 0 || pr == nil || pr.Claimed {
		return time.Time{}, false
	}
	return pr.CreatedAt.Add(ttl), true
}

// due reports whether the open pause of conv has outlived its
// time-to-live.
func (s *Server) due(c *conversation, conv *toolgate.Conversation) bool {
	d, ok := s.deadline(c, conv.Pause)
	return ok && !time.Now().Before(d)
}

// setExpiry fills in when the pause p of conversation c expires, if it
// does.
func (s *Server) setExpiry(c *conversation, conv *toolgate.Conversation, p *pauseJSON) {
	if p == nil {
		return
	}
	if d, ok := s.deadline(c, conv.Pause); ok {
		d = d.UTC()
		p.ExpiresAt = &d
	}
}

// expire expires the open pause pauseID of conversation c, unless a
// decision or another expiry has taken it. It reports whether this call
// expired it; an error is a store failure.
func (s *Server) expire(ctx context.Context, c *conversation, pauseID string) (bool, error) {
	// The resolution is stored even when the request that noticed the
	// expiry goes away.
	ctx = context.WithoutCancel(ctx)
	rec := &DecisionRecord{ConversationID: c.ID, PauseID: pauseID, Source: records.SourceExpiry, DecidedAt: now(),
		Decisions: []toolgate.Decision{}, Outcome: outcomeExpired}
	if s.tx[c.Agent] {
		return s.expireTx(ctx, c, rec)
	}
	if old, err := s.cfg.Records.Begin(ctx, rec); err != nil || old != nil {
		if err != nil {
			return false, fmt.Errorf("server: expiring pause %q of conversation %q: %w", pauseID, c.ID, err)
		}
		return false, nil
	}
	err := s.cfg.Agents[c.Agent].Client.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: c.ID, PauseID: pauseID})
	switch {
	case err == nil:
		s.unindexPause(ctx, c.ID, pauseID)
		s.auditExpired(ctx, c, pauseID)
		s.expiredNow(ctx, c, pauseID)
		return true, nil
	case errors.Is(err, toolgate.ErrNoOpenPause):
		// The pause was resolved without a record here (by the library
		// directly, or by a server with other records): nothing to expire.
		s.finish(ctx, c.ID, pauseID, records.OutcomeNone)
		s.unindexPause(ctx, c.ID, pauseID)
		return false, nil
	default:
		s.finishFailed(ctx, c, pauseID)
		return false, fmt.Errorf("server: expiring pause %q of conversation %q: %w", pauseID, c.ID, err)
	}
}

// expiredNow announces that pause pauseID of c expired.
func (s *Server) expiredNow(ctx context.Context, c *conversation, pauseID string) {
	s.publish(ctx, c.ID, EventExpired, pauseID)
	s.ops.expired(c)
}

// expireTx is [Server.expire] on a store that runs the server's hooks
// (txaudit.go): the claim writes the record rec, and the resolution the
// expired records, the outcome and the pause's removal from the index.
func (s *Server) expireTx(ctx context.Context, c *conversation, rec *DecisionRecord) (bool, error) {
	a := s.cfg.Agents[c.Agent]
	conv, err := a.Client.Store().Load(ctx, c.ID)
	if err != nil {
		return false, fmt.Errorf("server: expiring pause %q of conversation %q: %w", rec.PauseID, c.ID, err)
	}
	pr, reply := pausedReply(conv)
	if pr == nil || pr.ID != rec.PauseID || pr.Claimed {
		return false, nil // resolved, or being resolved, meanwhile
	}
	system := audit.Actor{Source: audit.SourceSystem}
	ctx, _, _ = s.beginDecision(ctx, c, conv, rec, system, &resumption{pauseID: rec.PauseID, reply: reply, actor: system,
		outcome: outcomeExpired, finishOnResolve: true})
	err = a.Client.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: c.ID, PauseID: rec.PauseID})
	if err == nil {
		s.expiredNow(ctx, c, rec.PauseID)
		return true, nil
	}
	if taken, _ := s.resumeFailed(ctx, c, rec.PauseID, err); taken {
		return false, nil
	}
	return false, fmt.Errorf("server: expiring pause %q of conversation %q: %w", rec.PauseID, c.ID, err)
}

// expireIfDue loads conversation c and expires its open pause when it is
// due. It returns the conversation as it is afterwards.
func (s *Server) expireIfDue(ctx context.Context, c *conversation) (*toolgate.Conversation, error) {
	store := s.cfg.Agents[c.Agent].Client.Store()
	conv, err := store.Load(ctx, c.ID)
	if err != nil || !s.due(c, conv) {
		return conv, err
	}
	if _, err := s.expire(ctx, c, conv.Pause.ID); err != nil {
		// The pause may be open again: let the sweeper retry it.
		s.kickSweeper()
		return nil, err
	}
	return store.Load(ctx, c.ID)
}

// startSweeper starts the background expiry when some agent's pauses
// expire; it returns nil otherwise.
func (s *Server) startSweeper() *sweeper {
	if !slices.ContainsFunc(slices.Collect(maps.Keys(s.cfg.Agents)), func(name string) bool { return s.ttl(name) > 0 }) {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	sw := &sweeper{kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go s.sweepLoop(ctx, sw)
	return sw
}

// stopSweeper stops the background expiry and waits for it to return.
func (s *Server) stopSweeper() {
	if s.sweeper == nil {
		return
	}
	s.sweeper.stop()
	<-s.sweeper.done
}

// kickSweeper makes the sweeper look at the pauses again: one was opened,
// or released by a decision that failed before claiming it.
func (s *Server) kickSweeper() {
	if s.sweeper == nil {
		return
	}
	select {
	case s.sweeper.kick <- struct{}{}:
	default:
	}
}

// sweepLoop expires due pauses and sleeps until the next deadline or a
// kick, until ctx is canceled.
func (s *Server) sweepLoop(ctx context.Context, sw *sweeper) {
	defer close(sw.done)
	for {
		next := s.sweep(ctx)
		var wake <-chan time.Time
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(time.Until(next))
			wake = timer.C
		}
		select {
		case <-ctx.Done():
		case <-sw.kick:
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// sweep expires every due pause of the index of open pauses and returns
// the earliest deadline of the pauses still waiting (zero for none).
// Pauses being decided are left to their decision; a decision that fails
// before claiming its pause kicks the sweeper.
func (s *Server) sweep(ctx context.Context) time.Time {
	var next time.Time
	retryAt := func() {
		if retry := time.Now().Add(sweepRetry); next.IsZero() || retry.Before(next) {
			next = retry
		}
	}
	for params := (&records.ListParams{Limit: records.MaxLimit}); ; {
		page, err := s.cfg.Records.ListPending(ctx, params)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.ErrorContext(ctx, "server: expiry: reading the open pauses failed", "err", logcap.Error(err))
				retryAt()
			}
			return next
		}
		for _, e := range page.Pending {
			if ctx.Err() != nil {
				return time.Time{}
			}
			ttl := s.ttl(e.Agent)
			if ttl <= 0 {
				continue
			}
			if d := e.CreatedAt.Add(ttl); time.Now().Before(d) {
				if next.IsZero() || d.Before(next) {
					next = d
				}
				continue
			}
			c, err := s.conversation(ctx, e.ConversationID)
			if err == nil && c != nil {
				_, err = s.expire(ctx, c, e.PauseID)
			}
			if err != nil {
				s.logger.ErrorContext(ctx, "server: expiry failed", "conversation", e.ConversationID, "pause", e.PauseID, "err", logcap.Error(err))
				retryAt()
			}
		}
		if page.Next == "" {
			return next
		}
		params.After = page.Next
	}
}

// writeExpired answers 409 "expired" for a decision on an expired pause,
// with the expiry's record.
func writeExpired(w http.ResponseWriter, rec *DecisionRecord) {
	writeJSON(w, http.StatusConflict, struct {
		errorJSON
		Decision *DecisionRecord `json:"decision,omitempty"`
	}{errorJSON{Error: codeExpired, Message: "the pause expired before it was decided; nothing ran"}, rec})
}
