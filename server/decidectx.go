package server

import (
	"context"
	"slices"
	"strings"

	"github.com/toolgate/toolgate"
)

// What an approver needs to decide a pause, besides its calls: the user's
// request the paused reply answers, the words the model wrote with its
// calls, each tool's description, why each awaiting call needs a decision,
// and the approval rules that say who decides it. The texts are views like
// the conversation's (reveal.go): through the agent's privacy guard, as
// the model saw them, unless revealed.
//
// Why a call awaits a decision is derived when the pause is shown, from
// the agent's tools and rules as they are then: a tool marked as
// requiring confirmation, or else the agent's confirmation policy (a list
// of tools or a function of the call, which the client holds). The rules
// are those covering the call's tool.

// The reasons a call awaits a decision ([callContextJSON.Reason]). Their
// values are sent over the API; they never change.
const (
	// reasonToolRequiresConfirmation: the tool's metadata says that its
	// calls require a person's confirmation.
	reasonToolRequiresConfirmation = "tool_requires_confirmation"
	// reasonConfirmationPolicy: the agent's confirmation policy asked
	// for a decision on this call.
	reasonConfirmationPolicy = "confirmation_policy"
)

// pauseContextJSON is the context of a pause in the inbox.
type pauseContextJSON struct {
	// Request is the user's message the paused reply answers; "" when
	// the conversation holds none before it.
	Request string `json:"request"`
	// RequestFiles are the metadata of the files the request carries
	// (their type, name and size, never their bytes); omitted for none.
	RequestFiles []partView `json:"request_files,omitempty"`
	// Said is the text the model wrote with its calls; "" for none.
	Said string `json:"said"`
	// Reasoning is the readable reasoning of the paused reply, for an
	// agent that shows it ([Agent.ShowReasoning]); omitted otherwise.
	// Signatures and other provider data are never shown.
	Reasoning string `json:"reasoning,omitempty"`
	// Calls describe the reply's calls, in the reply's order.
	Calls []callContextJSON `json:"calls"`
}

// callContextJSON describes one call of a paused reply.
type callContextJSON struct {
	Key  string `json:"key"`
	Tool string `json:"tool"`
	// Description is the tool's description, as the model got it; "" for
	// a tool the agent no longer has.
	Description string `json:"description"`
	// Reason says why the call awaits a decision (the reason* constants);
	// "" for a call that awaits none.
	Reason string `json:"reason,omitempty"`
	// Rules are the agent's approval rules that cover the call's tool.
	Rules []ruleJSON `json:"rules,omitempty"`
}

// ruleJSON is an approval rule as the views show it.
type ruleJSON struct {
	// Index is the rule's position in the agent's approvals, from 1.
	Index int `json:"index"`
	// Tools are the tools the rule names; empty: every tool.
	Tools              []string `json:"tools,omitempty"`
	Roles              []string `json:"roles,omitempty"`
	RequesterMayDecide bool     `json:"requester_may_decide,omitempty"`
	// Approvers is how many people must allow a call: 1 or 2.
	Approvers        int   `json:"approvers"`
	StickyMaxMinutes int64 `json:"sticky_max_minutes,omitempty"`
}

// decidersJSON says who decides an open pause: the roles of the rules that
// cover its awaiting calls (a holder of them may decide when, for every
// awaiting call, a rule allows them), and whether the caller may.
type decidersJSON struct {
	Roles []string `json:"roles"`
	// RequesterMayDecide is true when a rule covering an awaiting call
	// lets the conversation's owner decide it.
	RequesterMayDecide bool `json:"requester_may_decide,omitempty"`
	// MayDecide is true when the caller may decide the pause.
	MayDecide bool `json:"may_decide"`
}

// rulesFor returns the rules of agent covering tool.
func (s *Server) rulesFor(agent, tool string) []ruleJSON {
	var out []ruleJSON
	for i, r := range s.cfg.Agents[agent].Approvals {
		if !r.covers(tool) {
			continue
		}
		out = append(out, ruleJSON{Index: i + 1, Tools: slices.Clone(r.Tools), Roles: slices.Clone(r.Roles),
			RequesterMayDecide: r.RequesterMayDecide, Approvers: max(r.Approvers, 1), StickyMaxMinutes: int64(r.StickyMax.Minutes())})
	}
	return out
}

// deciders returns who decides pause (of reply, in c), for p.
func (s *Server) deciders(p *toolgate.Principal, c *conversation, pause *pauseJSON, reply *toolgate.AssistantMessage) *decidersJSON {
	if pause == nil || reply == nil {
		return nil
	}
	out := &decidersJSON{Roles: []string{}}
	for _, call := range pause.Calls {
		if !call.Awaiting {
			continue
		}
		for _, r := range s.cfg.Agents[c.Agent].Approvals {
			if !r.covers(call.Tool) {
				continue
			}
			for _, role := range r.Roles {
				if !slices.Contains(out.Roles, role) {
					out.Roles = append(out.Roles, role)
				}
			}
			out.RequesterMayDecide = out.RequesterMayDecide || r.RequesterMayDecide
		}
	}
	slices.Sort(out.Roles)
	code, _ := s.mayDecide(p, c, reply, pause.Awaiting)
	out.MayDecide = code == "" && !pause.Claimed
	return out
}

// pauseContext returns the context of pause (of reply, at conv.Pause.Index
// in conv) as p may see it; revealed says whether the pause's calls are
// shown with their originals.
func (s *Server) pauseContext(ctx context.Context, c *conversation, p *toolgate.Principal, conv *toolgate.Conversation, pause *pauseJSON, reply *toolgate.AssistantMessage, revealed bool) (*pauseContextJSON, error) {
	out := &pauseContextJSON{Calls: []callContextJSON{}}
	var request *toolgate.UserMessage
	if conv.Pause != nil {
		for i := min(conv.Pause.Index, len(conv.Messages)) - 1; i >= 0; i-- {
			if um, ok := conv.Messages[i].(*toolgate.UserMessage); ok {
				request = um
				break
			}
		}
	}
	msgs := []toolgate.Message{&toolgate.AssistantMessage{Text: reply.Text}}
	if request != nil {
		msgs = append(msgs, request)
	}
	shown, err := s.viewMessages(ctx, c, p, msgs, revealed)
	if err != nil {
		return nil, err
	}
	if am, ok := shown[0].(*toolgate.AssistantMessage); ok {
		out.Said = am.Text
	}
	if len(shown) > 1 {
		if um, ok := shown[1].(*toolgate.UserMessage); ok {
			out.Request = um.Text
		}
	}
	if request != nil {
		for _, pv := range viewParts(request.Parts, false) {
			if pv.Type == "file" {
				out.RequestFiles = append(out.RequestFiles, pv)
			}
		}
	}
	if s.cfg.Agents[c.Agent].ShowReasoning && reply.Parts != nil {
		msgs, err := s.viewReasoning(ctx, c, p, []toolgate.Message{reply}, revealed)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, part := range msgs[0].(*toolgate.AssistantMessage).Parts {
			if rp, ok := part.(toolgate.ReasoningPart); ok && rp.Text != "" {
				if b.Len() > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(rp.Text)
			}
		}
		out.Reasoning = b.String()
	}
	tools := s.cfg.Agents[c.Agent].Client.Tools()
	for _, call := range pause.Calls {
		cc := callContextJSON{Key: call.Key, Tool: call.Tool}
		i := slices.IndexFunc(tools, func(t *toolgate.Tool) bool { return t.Name() == call.Tool })
		if i >= 0 {
			cc.Description = strings.TrimSpace(tools[i].Definition().Description)
		}
		if call.Awaiting {
			cc.Reason = reasonConfirmationPolicy
			if i >= 0 && tools[i].Metadata().RequiresConfirmation {
				cc.Reason = reasonToolRequiresConfirmation
			}
			cc.Rules = s.rulesFor(c.Agent, call.Tool)
		}
		out.Calls = append(out.Calls, cc)
	}
	return out, nil
}

// decidesOpenPause returns the check that p may decide the open pause of
// a conversation: the approvers of a pause may read its conversation while
// it waits for them. A store failure answers no.
func (s *Server) decidesOpenPause(ctx context.Context, p *toolgate.Principal) func(*conversation) bool {
	return func(c *conversation) bool {
		if !s.mayDecideSome(p, c) {
			return false
		}
		conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
		if err != nil {
			return false
		}
		pause, reply := openPause(conv)
		if pause == nil || pause.Claimed {
			return false
		}
		code, _ := s.mayDecide(p, c, reply, pause.Awaiting)
		return code == ""
	}
}

// mayDecideSome reports whether some approval rule of c's agent could let
// p decide a call in c; it saves loading the conversation of a principal
// who decides nothing there.
func (s *Server) mayDecideSome(p *toolgate.Principal, c *conversation) bool {
	self := s.sameIdentity(c.Owner.ID, p.ID)
	return slices.ContainsFunc(s.cfg.Agents[c.Agent].Approvals, func(r ApprovalRule) bool {
		return self && r.RequesterMayDecide || !self && hasRole(p, r.Roles)
	})
}

// decidesAnything reports whether some approval rule of some agent names a
// role of p, or lets requesters decide their own calls: the pages then
// offer the inbox.
func (s *Server) decidesAnything(p *toolgate.Principal) bool {
	for _, a := range s.cfg.Agents {
		requester := a.RequesterRoles == nil || hasRole(p, a.RequesterRoles)
		if slices.ContainsFunc(a.Approvals, func(r ApprovalRule) bool { return requester && r.RequesterMayDecide || hasRole(p, r.Roles) }) {
			return true
		}
	}
	return false
}
