package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
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

// convCacheSize bounds the cache of conversation records; a full cache is
// emptied.
const convCacheSize = 1 << 14

// convCache keeps conversation records read from the record store. They
// never change once created, so a cached one is never stale. It is safe
// for concurrent use.
type convCache struct {
	mu sync.Mutex
	m  map[string]*conversation // guarded by mu
}

func (cc *convCache) get(id string) *conversation {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.m[id]
}

func (cc *convCache) put(c *conversation) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil || len(cc.m) >= convCacheSize {
		cc.m = make(map[string]*conversation)
	}
	cc.m[c.ID] = c
}

// storedConversation returns the record c as a record store reads it back:
// a copy without the empty role list and attributes, which a stored owner
// does not keep, and without the clock reading of the creation time.
func storedConversation(c *conversation) *conversation {
	out := *c
	out.Owner.Roles = nil
	if len(c.Owner.Roles) > 0 {
		out.Owner.Roles = slices.Clone(c.Owner.Roles)
	}
	out.Owner.Attributes = nil
	if len(c.Owner.Attributes) > 0 {
		out.Owner.Attributes = maps.Clone(c.Owner.Attributes)
	}
	out.CreatedAt = c.CreatedAt.Round(0)
	return &out
}

// conversation returns the record of conversation id, or nil when there
// is none or its agent is not one of this server's. The record is shared:
// callers must not change it.
func (s *Server) conversation(ctx context.Context, id string) (*conversation, error) {
	if c := s.convs.get(id); c != nil {
		return c, nil
	}
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
	s.convs.put(c)
	return c, nil
}

// loadConversation returns what [Server.conversation] returns for id and,
// when there is a record, the conversation as its agent's store holds it.
// A record not yet cached is read with the conversation in one statement
// when the record store can ([records.ConversationLoader]) and is the
// agent's store's; otherwise the conversation is loaded after the record.
func (s *Server) loadConversation(ctx context.Context, id string) (*conversation, *toolgate.Conversation, error) {
	if l, ok := s.cfg.Records.(records.ConversationLoader); ok && s.convs.get(id) == nil {
		c, conv, err := l.LoadConversation(ctx, id)
		switch {
		case errors.Is(err, records.ErrNotFound):
			return nil, nil, nil
		case err != nil:
			return nil, nil, err
		}
		a := s.cfg.Agents[c.Agent]
		if a == nil {
			return nil, nil, nil // another server's agent on a shared database
		}
		s.convs.put(c)
		if t, ok := s.cfg.Records.(records.Transactional); ok && a.Client.Store() == t.ConversationStore() {
			return c, conv, nil
		}
	}
	c, err := s.conversation(ctx, id)
	if c == nil || err != nil {
		return nil, nil, err
	}
	conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
	if err != nil {
		return nil, nil, err
	}
	return c, conv, nil
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
// allows a second one. An outcome that resolves the pause also takes it
// out of the index, in the same write; after a failure the entry stays,
// and the recovery of claims finishes the record when it reads it. The
// error is returned for callers that report the record.
func (s *Server) finish(ctx context.Context, convID, pauseID string, outcome records.Outcome) error {
	err := s.cfg.Records.Finish(context.WithoutCancel(ctx), convID, pauseID, outcome)
	if outcome == records.OutcomeNone && errors.Is(err, records.ErrNotFound) {
		return nil // nothing to forget: the claim that would have written it did not commit
	}
	if err != nil {
		s.logger.ErrorContext(ctx, "server: recording a decision's outcome failed", "conversation", convID, "pause", pauseID, "outcome", outcome, "err", logcap.Error(err))
	}
	return err
}

// indexPause puts the open pause of conv, conversation c, in the index
// the inbox and the sweeper read, with the tools its calls await.
func (s *Server) indexPause(ctx context.Context, c *conversation, conv *toolgate.Conversation) error {
	pr := conv.Pause
	return s.cfg.Records.AddPending(context.WithoutCancel(ctx), &records.Pending{ConversationID: c.ID, Agent: c.Agent, PauseID: pr.ID,
		CreatedAt: pr.CreatedAt, Tools: awaitingTools(conv.Messages[pr.Index], pr.Awaiting)})
}

// awaitingTools returns the names of the tools of the calls of msg, a
// paused reply, that await a decision (awaiting are their keys); nil when
// msg is no reply with tool calls.
func awaitingTools(msg toolgate.Message, awaiting []string) []string {
	reply, ok := msg.(*toolgate.AssistantMessage)
	if !ok {
		return nil
	}
	keys := reply.CallKeys()
	var tools []string
	for i, call := range reply.ToolCalls {
		if slices.Contains(awaiting, keys[i]) {
			tools = append(tools, call.Name)
		}
	}
	return records.PendingTools(tools)
}

// inboxScopes returns the parts of the index whose pauses p may decide
// some call of: per agent, the tools of the approval rules where p holds
// a role, or that let requesters decide their own calls (the inbox then
// keeps only p's own conversations). nil: none.
func (s *Server) inboxScopes(p *toolgate.Principal) []records.Scope {
	var scopes []records.Scope
	for name, a := range s.cfg.Agents {
		var tools []string
		anyTool, some := false, false
		for _, rule := range a.Approvals {
			if !rule.RequesterMayDecide && !hasRole(p, rule.Roles) {
				continue
			}
			some = true
			if rule.Tools == nil {
				anyTool = true
			}
			tools = append(tools, rule.Tools...)
		}
		switch {
		case anyTool:
			scopes = append(scopes, records.Scope{Agent: name})
		case some && len(tools) > 0:
			scopes = append(scopes, records.Scope{Agent: name, Tools: records.PendingTools(tools)})
		}
	}
	return scopes
}

// unindexPause removes a resolved pause from the index, logging a failure:
// a stale entry is dropped by the next inbox or sweep that reads it.
func (s *Server) unindexPause(ctx context.Context, convID, pauseID string) {
	if err := s.cfg.Records.RemovePending(context.WithoutCancel(ctx), convID, pauseID); err != nil {
		s.logger.ErrorContext(ctx, "server: removing a pause from the index failed", "conversation", convID, "pause", pauseID, "err", logcap.Error(err))
	}
}

// now returns the current time in UTC.
func now() time.Time { return time.Now().UTC() }
