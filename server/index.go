package server

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/server/records"
)

// DecisionRecord is who or what decided a pause, how, and what came of
// it, as the API shows it: see [records.Decision].
type DecisionRecord = records.Decision

// The outcomes of a [DecisionRecord].
const (
	outcomeDeciding = records.OutcomeDeciding
	outcomeDecided  = records.OutcomeDecided
	outcomeFailed   = records.OutcomeFailed
	outcomeExpired  = records.OutcomeExpired
)

// conversation is what the server knows of a conversation besides its
// messages, which the agent's store keeps.
type conversation = records.Conversation

// conversation returns the record of conversation id, or nil when there
// is none or its agent is not one of this server's.
func (s *Server) conversation(ctx context.Context, id string) (*conversation, error) {
	c, err := s.cfg.Records.Conversation(ctx, id)
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.cfg.Agents[c.Agent] == nil {
		// Another server's agent on a shared database.
		return nil, nil
	}
	return c, nil
}

// decision returns the record of a pause, or nil.
func (s *Server) decision(ctx context.Context, convID, pauseID string) (*DecisionRecord, error) {
	d, err := s.cfg.Records.Decision(ctx, convID, pauseID)
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil
	}
	return d, err
}

// finish sets the outcome of a begun decision, logging a failure: the
// record then stays "deciding", which refuses later decisions, never
// allows a second one.
func (s *Server) finish(ctx context.Context, convID, pauseID string, outcome records.Outcome) {
	if err := s.cfg.Records.Finish(context.WithoutCancel(ctx), convID, pauseID, outcome); err != nil {
		s.logger.ErrorContext(ctx, "server: recording a decision's outcome failed", "conversation", convID, "pause", pauseID, "outcome", outcome, "err", err)
	}
}

// indexPause puts the open pause pr of conversation c in the index the
// inbox and the sweeper read.
func (s *Server) indexPause(ctx context.Context, c *conversation, pr *toolgate.PauseRecord) error {
	return s.cfg.Records.AddPending(context.WithoutCancel(ctx), &records.Pending{ConversationID: c.ID, Agent: c.Agent, PauseID: pr.ID, CreatedAt: pr.CreatedAt})
}

// unindexPause removes a resolved pause from the index, logging a failure:
// a stale entry is dropped by the next inbox or sweep that reads it.
func (s *Server) unindexPause(ctx context.Context, convID, pauseID string) {
	if err := s.cfg.Records.RemovePending(context.WithoutCancel(ctx), convID, pauseID); err != nil {
		s.logger.ErrorContext(ctx, "server: removing a pause from the index failed", "conversation", convID, "pause", pauseID, "err", err)
	}
}

// now returns the current time in UTC.
func now() time.Time { return time.Now().UTC() }
