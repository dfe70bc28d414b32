package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// Two-person rule and sticky approvals (see [ApprovalRule.Approvers] and
// [ApprovalRule.StickyMax]).
//
// Under a two-person rule, a decision request that allows a call the rule
// covers records a first approval ([records.Store.Approve]) and is
// answered 202 "awaiting_second_approval"; nothing runs. A second, distinct
// principal who may decide must send the same decisions; their request
// then decides the pause, and the record names both approvers. A request
// that allows none of those calls (it denies them) decides at once: a
// denial needs one person.
//
// A sticky approval is asked for with "sticky" on a request that allows
// calls; it grants, for each allowed awaiting call, its tool in the
// conversation (optionally only with the same arguments) until the grant
// ends. When a later pause of the conversation has every awaiting call
// covered by a live grant, the server resumes it at once with allow
// decisions whose source is "sticky".

// More error codes of the API (see errors.go). Their values never change.
const (
	codeSameApprover     = "same_approver"      // 409: the first approver approved again
	codeDecisionsDiffer  = "decisions_differ"   // 409: the second approver's decisions are not the first's
	codeStickyNotAllowed = "sticky_not_allowed" // 422: no rule lets the caller grant this sticky approval
	codeInvalidSticky    = "invalid_sticky"     // 422: minutes not positive, or nothing allowed to make sticky
)

// statusAwaitingSecond is the status of a first approval's 202 response.
const statusAwaitingSecond = "awaiting_second_approval"

// approvalJSON is the first approval of a pause under a two-person rule.
type approvalJSON struct {
	By        string              `json:"by"`
	At        time.Time           `json:"at"`
	Decisions []toolgate.Decision `json:"decisions"`
}

func approvalOut(a *records.Approval) *approvalJSON {
	return &approvalJSON{By: a.By, At: a.At, Decisions: a.Decisions}
}

// stickyIn is the "sticky" member of a decision request.
type stickyIn struct {
	// Minutes is how long the grant lasts; at least 1 and at most the
	// rule's StickyMax.
	Minutes int `json:"minutes"`
	// SameArguments limits the grant to calls with the same arguments.
	SameArguments bool `json:"same_arguments,omitempty"`
}

// grantJSON is a sticky grant, in a decision's response.
type grantJSON struct {
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	SameArgs  bool      `json:"same_arguments"`
	GrantedBy string    `json:"granted_by"`
	ExpiresAt time.Time `json:"expires_at"`
}

func grantOut(g *records.Grant) grantJSON {
	return grantJSON{ID: g.ID, Tool: g.Tool, SameArgs: g.ArgumentsDigest != "", GrantedBy: g.GrantedBy, ExpiresAt: g.ExpiresAt}
}

// authorizing returns the rules of c's agent that let p decide calls of
// tool.
func (s *Server) authorizing(p *toolgate.Principal, c *conversation, tool string) []*ApprovalRule {
	rules := s.cfg.Agents[c.Agent].Approvals
	self := s.sameIdentity(c.Owner.ID, p.ID)
	var out []*ApprovalRule
	for i := range rules {
		r := &rules[i]
		if r.covers(tool) && ((self && r.RequesterMayDecide) || (!self && hasRole(p, r.Roles))) {
			out = append(out, r)
		}
	}
	return out
}

// approversFor returns how many distinct approvers a call of tool needs:
// the largest Approvers of the rules covering it, at least 1.
func (s *Server) approversFor(agent, tool string) int {
	n := 1
	for _, r := range s.cfg.Agents[agent].Approvals {
		if r.covers(tool) {
			n = max(n, r.Approvers)
		}
	}
	return n
}

// twoPerson reports whether some rule of agent asks for two approvers.
func (s *Server) twoPerson(agent string) bool {
	return slices.ContainsFunc(s.cfg.Agents[agent].Approvals, func(r ApprovalRule) bool { return r.Approvers >= 2 })
}

// needsSecondApprover reports whether decisions allow an awaiting call of
// reply that a two-person rule covers.
func (s *Server) needsSecondApprover(c *conversation, reply *toolgate.AssistantMessage, awaiting []string, decisions []toolgate.Decision) bool {
	if !s.twoPerson(c.Agent) {
		return false
	}
	keys := reply.CallKeys()
	for i, call := range reply.ToolCalls {
		if slices.Contains(awaiting, keys[i]) && verdictOf(decisions, keys[i]) == toolgate.VerdictAllow && s.approversFor(c.Agent, call.Name) >= 2 {
			return true
		}
	}
	return false
}

// decisionOf returns the decision of decisions for the call with key, or
// the zero decision.
func decisionOf(decisions []toolgate.Decision, key string) toolgate.Decision {
	for _, d := range decisions {
		if d.Key == key {
			return d
		}
	}
	return toolgate.Decision{}
}

// verdictOf returns the verdict decisions give the call with key.
func verdictOf(decisions []toolgate.Decision, key string) toolgate.Verdict {
	for _, d := range decisions {
		if d.Key == key {
			return d.Verdict
		}
	}
	return ""
}

// sameDecisions reports whether a and b decide every call alike, in any
// order.
func sameDecisions(a, b []toolgate.Decision) bool {
	if len(a) != len(b) {
		return false
	}
	for _, d := range a {
		if !slices.ContainsFunc(b, func(e toolgate.Decision) bool {
			return d.Key == e.Key && d.Verdict == e.Verdict && d.Message == e.Message && bytes.Equal(d.Arguments, e.Arguments)
		}) {
			return false
		}
	}
	return true
}

// approve records p's approval of a pause under a two-person rule. It
// answers the request itself, and returns done, unless p is the second
// approver, sending the first's decisions: it then returns the first
// approver's id.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, c *conversation, pauseID string, decisions []toolgate.Decision) (first string, done bool) {
	a := &records.Approval{ConversationID: c.ID, PauseID: pauseID, By: p.ID, At: now(), Decisions: decisions}
	prior, err := s.cfg.Records.Approve(r.Context(), a)
	type body struct {
		errorJSON
		Approval *approvalJSON `json:"approval"`
	}
	shown := func(a *records.Approval) *approvalJSON {
		out := approvalOut(a)
		if err := s.viewApproval(r.Context(), c, p, out, false); err != nil {
			out.Decisions = nil
		}
		return out
	}
	switch {
	case err != nil:
		s.internal(w, r, err)
	case prior == nil:
		writeJSON(w, http.StatusAccepted, struct {
			ConversationID string        `json:"conversation_id"`
			PauseID        string        `json:"pause_id"`
			Status         string        `json:"status"`
			Approval       *approvalJSON `json:"approval"`
		}{c.ID, pauseID, statusAwaitingSecond, shown(a)})
	case s.sameIdentity(prior.By, p.ID):
		writeJSON(w, http.StatusConflict, body{errorJSON{Error: codeSameApprover,
			Message: "you already approved this pause; a second, different approver must decide it"}, shown(prior)})
	case !sameDecisions(prior.Decisions, decisions):
		writeJSON(w, http.StatusConflict, body{errorJSON{Error: codeDecisionsDiffer,
			Message: "the first approver decided otherwise; send the same decisions to approve, or deny"}, shown(prior)})
	default:
		return prior.By, false
	}
	return "", true
}

// setApproval fills in the first approval of pause p, if it waits for a
// second approver.
func (s *Server) setApproval(ctx context.Context, c *conversation, p *pauseJSON) error {
	if p == nil || !s.twoPerson(c.Agent) {
		return nil
	}
	a, err := s.cfg.Records.Approval(ctx, c.ID, p.ID)
	switch {
	case errors.Is(err, records.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	p.Approval = approvalOut(a)
	return nil
}

// stickyGrants returns the grants a decision request's sticky asks for:
// one per awaiting call the decisions allow. It returns an error code and
// message when the request may not have them.
func (s *Server) stickyGrants(p *toolgate.Principal, c *conversation, reply *toolgate.AssistantMessage, awaiting []string, decisions []toolgate.Decision, in *stickyIn) ([]*records.Grant, string, string) {
	if in == nil {
		return nil, "", ""
	}
	if in.Minutes <= 0 {
		return nil, codeInvalidSticky, fmt.Sprintf("sticky minutes must be at least 1, not %d", in.Minutes)
	}
	t := now()
	var grants []*records.Grant
	keys := reply.CallKeys()
	for i, call := range reply.ToolCalls {
		if !slices.Contains(awaiting, keys[i]) || verdictOf(decisions, keys[i]) != toolgate.VerdictAllow {
			continue
		}
		if s.approversFor(c.Agent, call.Name) >= 2 {
			return nil, codeStickyNotAllowed, fmt.Sprintf("calls of tool %s need two approvers: they cannot be made sticky", call.Name)
		}
		var limit time.Duration
		for _, r := range s.authorizing(p, c, call.Name) {
			limit = max(limit, r.StickyMax)
		}
		if limit <= 0 {
			return nil, codeStickyNotAllowed, fmt.Sprintf("no approval rule lets you make calls of tool %s sticky", call.Name)
		}
		if int64(in.Minutes) > int64(limit/time.Minute) {
			return nil, codeStickyNotAllowed, fmt.Sprintf("calls of tool %s may be sticky for at most %d minutes", call.Name, int64(limit/time.Minute))
		}
		g := &records.Grant{ConversationID: c.ID, Tool: call.Name, GrantedBy: p.ID, GrantedAt: t,
			ExpiresAt: t.Add(time.Duration(in.Minutes) * time.Minute)}
		if in.SameArguments {
			// The arguments that run: the approver's edit, if any.
			args := call.Arguments
			if edited, ok := editedArguments(decisionOf(decisions, keys[i])); ok {
				args = edited
			}
			g.ArgumentsDigest = records.ArgumentsDigest(args)
		}
		if !slices.ContainsFunc(grants, func(x *records.Grant) bool { return x.Tool == g.Tool && x.ArgumentsDigest == g.ArgumentsDigest }) {
			g.ID = "grant_" + rand.Text()
			grants = append(grants, g)
		}
	}
	if len(grants) == 0 {
		return nil, codeInvalidSticky, "sticky needs a decision that allows an awaiting call"
	}
	return grants, "", ""
}

// addGrants stores grants.
func (s *Server) addGrants(ctx context.Context, grants []*records.Grant) error {
	for _, g := range grants {
		if err := s.cfg.Records.AddGrant(context.WithoutCancel(ctx), g); err != nil {
			return err
		}
	}
	return nil
}

// sticky reports whether some rule of agent allows sticky approvals.
func (s *Server) sticky(agent string) bool {
	return slices.ContainsFunc(s.cfg.Agents[agent].Approvals, func(r ApprovalRule) bool { return r.StickyMax > 0 })
}

// resumeSticky resumes the open pause of c when live sticky grants cover
// every awaiting call, allowing every call. It returns the resumed turn
// and the decision record, or nils when the pause waits for a person.
func (s *Server) resumeSticky(ctx context.Context, c *conversation, conv *toolgate.Conversation, pause *pauseJSON, reply *toolgate.AssistantMessage) (*toolgate.Response, *DecisionRecord, error) {
	if !s.sticky(c.Agent) {
		return nil, nil, nil
	}
	owner := s.runnableOwner(c)
	if owner == nil {
		return nil, nil, nil // the pause waits for a person
	}
	t := now()
	grants, err := s.cfg.Records.Grants(ctx, c.ID, t)
	if err != nil || len(grants) == 0 {
		return nil, nil, err
	}
	var used []records.GrantRef
	decisions := make([]toolgate.Decision, 0, len(pause.Calls))
	for _, call := range pause.Calls {
		decisions = append(decisions, toolgate.Allow(call.Key))
		if !call.Awaiting {
			continue
		}
		i := slices.IndexFunc(grants, func(g records.Grant) bool { return g.Covers(call.Tool, call.Arguments, t) && s.honoured(c, &g) })
		if i < 0 {
			return nil, nil, nil
		}
		if ref := (records.GrantRef{ID: grants[i].ID, GrantedBy: grants[i].GrantedBy}); !slices.Contains(used, ref) {
			used = append(used, ref)
		}
	}
	rec := &DecisionRecord{ConversationID: c.ID, PauseID: pause.ID, Source: records.SourceSticky, Grants: used, DecidedAt: t,
		Decisions: decisions, Outcome: outcomeDeciding}
	actor := stickyActor(used)
	ctx, old, err := s.beginDecision(ctx, c, conv, rec, actor, &resumption{pauseID: pause.ID, reply: reply, actor: actor, decisions: decisions})
	if err != nil || old != nil {
		return nil, nil, err // taken by a person or an expiry
	}
	params := &toolgate.ResumeTurnParams{ConversationID: c.ID, PauseID: pause.ID, Principal: owner, Decisions: decisions, Conversation: conv,
		MayDecide: s.grantDecider(c, used)}
	audited := s.auditResolution(ctx, c, conv, actor, params)
	resp, err := s.cfg.Agents[c.Agent].Client.Resume(ctx, params)
	audited(err)
	if err != nil {
		if taken, _ := s.resumeFailed(ctx, c, pause.ID, err); taken {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if !finishedInTx(ctx) {
		s.finish(ctx, c.ID, pause.ID, outcomeDecided) // and out of the index
	}
	rec.Outcome = outcomeDecided
	return resp, rec, nil
}

// grantDecider is the check of who decides ([Server.decider]) for a
// resumption decided by the sticky grants used: a call's tool is one that
// the granter of one of them may decide now.
func (s *Server) grantDecider(c *conversation, used []records.GrantRef) func(toolgate.ToolCall) bool {
	return func(call toolgate.ToolCall) bool {
		return slices.ContainsFunc(used, func(g records.GrantRef) bool {
			ok, _ := s.mayDecideTool(s.principalNow(g.GrantedBy), c, call.Name)
			return ok
		})
	}
}

// stickyMinutes returns the most minutes p may ask for in a sticky grant
// with decisions that allow every awaiting call of reply in c: for each
// awaiting call, the largest StickyMax of the rules that let p decide it,
// in whole minutes; the smallest of those over the calls. It is 0 when
// some awaiting call allows no sticky grant (no such rule has StickyMax,
// or its tool needs two approvers). [Server.stickyGrants] accepts a
// sticky of that many minutes with such decisions.
func (s *Server) stickyMinutes(p *toolgate.Principal, c *conversation, reply *toolgate.AssistantMessage, awaiting []string) int64 {
	if !s.sticky(c.Agent) {
		return 0
	}
	out := int64(-1)
	keys := reply.CallKeys()
	for i, call := range reply.ToolCalls {
		if !slices.Contains(awaiting, keys[i]) {
			continue
		}
		if s.approversFor(c.Agent, call.Name) >= 2 {
			return 0
		}
		var limit time.Duration
		for _, r := range s.authorizing(p, c, call.Name) {
			limit = max(limit, r.StickyMax)
		}
		if m := int64(limit / time.Minute); out < 0 || m < out {
			out = m
		}
	}
	return max(out, 0)
}

// honoured reports whether grant g of conversation c may still stand in
// for a person: the rules in force now would let its granter, with the
// roles they hold now, grant it — a rule covering the tool lets them
// decide it, its sticky_max is at least the grant's length, and no rule
// asks two approvers for the tool. A granter the server cannot resolve now
// (see identity.go) honours nothing.
func (s *Server) honoured(c *conversation, g *records.Grant) bool {
	granter := s.principalNow(g.GrantedBy)
	if granter == nil || s.approversFor(c.Agent, g.Tool) >= 2 {
		return false
	}
	var limit time.Duration
	for _, r := range s.authorizing(granter, c, g.Tool) {
		limit = max(limit, r.StickyMax)
	}
	return limit > 0 && g.ExpiresAt.Sub(g.GrantedAt) <= limit
}
