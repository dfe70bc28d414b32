package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/privacy"
)

// Privacy in the views. The conversation of an agent with a privacy guard
// ([Agent.Privacy]) holds personal data: the user's messages and the tool
// results as they were, the model's replies with the tokens it saw and
// wrote. The conversation view and the inbox show it as the model saw it:
// every message through the guard, so personal data appears as the
// conversation's tokens ([EMAIL_ADDRESS_1]). A principal holding one of
// the agent's [Agent.RevealRoles] may ask for the originals with
// ?reveal=true: the messages as stored, with the tokens of the model's
// replies (text and call arguments) restored from the conversation's
// vault. Every reveal is audited first (kind revealed: one record per call
// of an inbox pause, one per conversation view); when the record cannot be
// written nothing is revealed. Asking without such a role is answered 403.

// revealParam returns the value of the request's ?reveal parameter: false
// when absent. It answers 400 itself, and returns ok false, for a value
// that is not a boolean.
func revealParam(w http.ResponseWriter, r *http.Request) (reveal, ok bool) {
	v := r.URL.Query().Get("reveal")
	if v == "" {
		return false, true
	}
	reveal, err := strconv.ParseBool(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "reveal must be true or false")
		return false, false
	}
	return reveal, true
}

// mayReveal reports whether p may see the originals of the conversations
// of agent.
func (s *Server) mayReveal(p *toolgate.Principal, agent string) bool {
	a := s.cfg.Agents[agent]
	return a != nil && a.Privacy != nil && hasRole(p, a.RevealRoles)
}

// mayRevealAny reports whether p may see the originals of some agent's
// conversations.
func (s *Server) mayRevealAny(p *toolgate.Principal) bool {
	for name := range s.cfg.Agents {
		if s.mayReveal(p, name) {
			return true
		}
	}
	return false
}

// forbidReveal answers 403 to a request for originals p may not see.
func forbidReveal(w http.ResponseWriter) {
	writeError(w, http.StatusForbidden, codeForbidden, "your roles may not reveal personal data")
}

// viewMessages returns msgs of conversation c as p may see them: through
// the agent's privacy guard (tokens), or, with reveal, as stored with the
// tokens of the model's replies restored. Without a guard they are shown
// as stored. msgs is not changed.
func (s *Server) viewMessages(ctx context.Context, c *conversation, p *toolgate.Principal, msgs []toolgate.Message, reveal bool) ([]toolgate.Message, error) {
	g := s.cfg.Agents[c.Agent].Privacy
	if g == nil || len(msgs) == 0 {
		return msgs, nil
	}
	if !reveal {
		// The request protector is never ended: nothing it tokenizes is
		// saved.
		rp, err := g.Begin(ctx, &toolgate.BeginParams{Principal: p, ConversationID: c.ID})
		if err != nil {
			return nil, err
		}
		return rp.Messages(ctx, msgs)
	}
	rw, err := g.ConversationRewriter(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(msgs)
	for i, m := range msgs {
		am, ok := m.(*toolgate.AssistantMessage)
		if !ok {
			continue
		}
		shown := am.Clone()
		if shown.Parts == nil {
			shown.Text = rw.Restore(am.Text, privacy.AllTypes())
		} else {
			// The text is its text parts', each restored.
			var text strings.Builder
			for j, part := range shown.Parts {
				if tp, ok := part.(toolgate.TextPart); ok {
					tp.Text = rw.Restore(tp.Text, privacy.AllTypes())
					text.WriteString(tp.Text)
					shown.Parts[j] = tp
				}
			}
			shown.Text = text.String()
		}
		for j := range shown.ToolCalls {
			call := &shown.ToolCalls[j]
			if args, err := rw.RestoreJSON([]byte(call.Arguments), privacy.AllTypes()); err == nil {
				call.Arguments = string(args)
			} else {
				call.Arguments = rw.Restore(call.Arguments, privacy.AllTypes())
			}
		}
		out[i] = shown
	}
	return out, nil
}

// viewPause sets the arguments of the calls of pause (whose reply is
// reply) as p may see them; see [Server.viewMessages].
func (s *Server) viewPause(ctx context.Context, c *conversation, p *toolgate.Principal, pause *pauseJSON, reply *toolgate.AssistantMessage, reveal bool) error {
	if pause == nil || reply == nil || s.cfg.Agents[c.Agent].Privacy == nil {
		return nil
	}
	shown, err := s.viewMessages(ctx, c, p, []toolgate.Message{reply}, reveal)
	if err != nil {
		return err
	}
	am, ok := shown[0].(*toolgate.AssistantMessage)
	if !ok || len(am.ToolCalls) != len(pause.Calls) {
		return errors.New("server: the privacy guard changed the paused reply's calls")
	}
	for i := range pause.Calls {
		pause.Calls[i].Arguments = am.ToolCalls[i].Arguments
	}
	return nil
}

// auditReveal writes the revealed records of p's reveal of conversation c:
// one per call of reply when the pause pauseID is revealed in the inbox,
// one for the conversation (where is "conversation") otherwise. An error
// means nothing may be revealed.
func (s *Server) auditReveal(ctx context.Context, c *conversation, p *toolgate.Principal, pauseID string, reply *toolgate.AssistantMessage, where string) error {
	a := s.audit
	if a == nil {
		return errors.New("server: a reveal without an audit log")
	}
	if reply == nil {
		return a.append(ctx, &audit.Record{ConversationID: c.ID, PauseID: pauseID, Kind: audit.KindRevealed, Actor: person(p), Reason: "originals shown in the " + where})
	}
	keys := reply.CallKeys()
	recs := make([]*audit.Record, len(reply.ToolCalls))
	for i, call := range reply.ToolCalls {
		recs[i] = a.callRecord(c.ID, pauseID, keys[i], call, audit.KindRevealed, person(p), "originals shown in the "+where)
	}
	return a.append(ctx, recs...)
}

// showConversation returns the messages of conversation c, and sets the
// calls of its open pause (of reply), as p may see them; a reveal is
// audited first.
func (s *Server) showConversation(ctx context.Context, c *conversation, p *toolgate.Principal, msgs []toolgate.Message, pause *pauseJSON, reply *toolgate.AssistantMessage, reveal bool) ([]toolgate.Message, error) {
	if reveal {
		if err := s.auditReveal(ctx, c, p, "", nil, "conversation view"); err != nil {
			return nil, err
		}
	}
	if err := s.viewPause(ctx, c, p, pause, reply, reveal); err != nil {
		return nil, err
	}
	return s.viewMessages(ctx, c, p, msgs, reveal)
}

// showInboxPause sets the calls of pause (of reply, in conversation c) as
// p may see them in the inbox; with reveal, and when p may reveal them, the
// originals, audited first. It reports whether they are revealed.
func (s *Server) showInboxPause(ctx context.Context, c *conversation, p *toolgate.Principal, pause *pauseJSON, reply *toolgate.AssistantMessage, reveal bool) (bool, error) {
	reveal = reveal && s.mayReveal(p, c.Agent)
	if reveal {
		if err := s.auditReveal(ctx, c, p, pause.ID, reply, "inbox"); err != nil {
			return false, err
		}
	}
	return reveal, s.viewPause(ctx, c, p, pause, reply, reveal)
}
