package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// Decision records, first approvals and the bodies of 409 answers are
// views like the conversation: with the agent's privacy guard on, what an
// approver typed — deny messages and edited arguments — is shown through
// the guard (personal data as tokens) to everyone, the approver included,
// except with ?reveal=true to the holders of a reveal role, whose reveal
// of the conversation is audited first (see reveal.go). The model's own
// arguments in an edit record are shown as stored, as the paused reply
// is: they hold the tokens the model saw.
//
// A 409 for a pause carries the first decision's record only for a
// principal who may read the conversation, who took part in that
// decision, or who may decide the pause; others learn only that it was
// decided.

// errPrivacyChangedCalls: the privacy guard did not return the calls it
// was given.
var errPrivacyChangedCalls = errors.New("server: the privacy guard changed the calls of a view")

// viewDecisions returns the decisions as p may see them (see above); nil
// when ds is. ds is not changed.
func (s *Server) viewDecisions(ctx context.Context, c *conversation, p *toolgate.Principal, ds []toolgate.Decision, reveal bool) ([]toolgate.Decision, error) {
	g := s.cfg.Agents[c.Agent].Privacy
	if g == nil || reveal || len(ds) == 0 {
		return ds, nil
	}
	out := slices.Clone(ds)
	var texts []string
	for _, d := range ds {
		texts = append(texts, d.Message, string(d.Arguments))
	}
	shown, err := s.tokenize(ctx, c, p, texts)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Message = shown[2*i]
		if len(out[i].Arguments) > 0 {
			out[i].Arguments = json.RawMessage(shown[2*i+1])
		}
	}
	return out, nil
}

// viewRecord returns rec as p may see it (see above): a copy, or rec
// itself when nothing is hidden. nil for nil.
func (s *Server) viewRecord(ctx context.Context, c *conversation, p *toolgate.Principal, rec *DecisionRecord, reveal bool) (*DecisionRecord, error) {
	if rec == nil || s.cfg.Agents[c.Agent].Privacy == nil || reveal {
		return rec, nil
	}
	out := rec.Clone()
	var err error
	if out.Decisions, err = s.viewDecisions(ctx, c, p, rec.Decisions, false); err != nil {
		return nil, err
	}
	if len(out.Edits) > 0 {
		texts := make([]string, len(out.Edits))
		for i, e := range out.Edits {
			texts[i] = string(e.Edited)
		}
		shown, err := s.tokenize(ctx, c, p, texts)
		if err != nil {
			return nil, err
		}
		for i := range out.Edits {
			out.Edits[i].Edited = json.RawMessage(shown[i])
		}
	}
	return out, nil
}

// viewRecords is viewRecord of each of recs.
func (s *Server) viewRecords(ctx context.Context, c *conversation, p *toolgate.Principal, recs []DecisionRecord, reveal bool) ([]DecisionRecord, error) {
	if s.cfg.Agents[c.Agent].Privacy == nil || reveal {
		return recs, nil
	}
	out := make([]DecisionRecord, len(recs))
	for i := range recs {
		v, err := s.viewRecord(ctx, c, p, &recs[i], false)
		if err != nil {
			return nil, err
		}
		out[i] = *v
	}
	return out, nil
}

// viewApproval sets the decisions of a first approval as p may see them.
func (s *Server) viewApproval(ctx context.Context, c *conversation, p *toolgate.Principal, a *approvalJSON, reveal bool) error {
	if a == nil {
		return nil
	}
	ds, err := s.viewDecisions(ctx, c, p, a.Decisions, reveal)
	a.Decisions = ds
	return err
}

// tokenize returns texts through the privacy guard of c's agent: each as
// the model would see it. "" stays "".
func (s *Server) tokenize(ctx context.Context, c *conversation, p *toolgate.Principal, texts []string) ([]string, error) {
	g := s.cfg.Agents[c.Agent].Privacy
	rp, err := g.Begin(ctx, &toolgate.BeginParams{Principal: p, ConversationID: c.ID})
	if err != nil {
		return nil, err
	}
	// The values ride as the arguments of a call: the guard tokenizes
	// JSON values inside JSON and text as text. The request protector is
	// never ended: nothing it tokenizes is saved.
	msg := &toolgate.AssistantMessage{ToolCalls: make([]toolgate.ToolCall, len(texts))}
	for i, t := range texts {
		msg.ToolCalls[i] = toolgate.ToolCall{Name: "view", Arguments: t}
	}
	shown, err := rp.Messages(ctx, []toolgate.Message{msg})
	if err != nil {
		return nil, err
	}
	am, ok := shown[0].(*toolgate.AssistantMessage)
	if !ok || len(am.ToolCalls) != len(texts) {
		return nil, errPrivacyChangedCalls
	}
	out := make([]string, len(texts))
	for i := range texts {
		if texts[i] != "" {
			out[i] = am.ToolCalls[i].Arguments
		}
	}
	return out, nil
}

// mayKnowDecision reports whether p may see the record of the decision rec
// on a pause of c in a 409 (see above); conv is the conversation as
// loaded.
func (s *Server) mayKnowDecision(p *toolgate.Principal, c *conversation, rec *DecisionRecord, conv *toolgate.Conversation) bool {
	switch {
	case rec == nil:
		return false
	case s.canRead(p, c), rec.DecidedBy != "" && s.sameIdentity(rec.DecidedBy, p.ID),
		slices.ContainsFunc(rec.Approvers, func(id string) bool { return s.sameIdentity(id, p.ID) }):
		return true
	}
	if pause, reply := openPause(conv); pause != nil && pause.ID == rec.PauseID {
		code, _ := s.mayDecide(p, c, reply, pause.Awaiting)
		return code == ""
	}
	if rec.Source == records.SourceExpiry {
		// Nobody decided: the record holds no person and nothing typed;
		// an approver of the agent learns that the pause expired.
		return s.approver(p, c.Agent)
	}
	// The pause is resolved: its reply is the one whose calls the
	// record decides, every call of it. Which of them awaited a decision
	// is not kept; p may know when they may decide every call an approval
	// rule covers.
	reply := decidedReply(conv, rec)
	if reply == nil {
		return false
	}
	var awaiting []string
	keys := reply.CallKeys()
	for i, call := range reply.ToolCalls {
		if slices.ContainsFunc(s.cfg.Agents[c.Agent].Approvals, func(r ApprovalRule) bool { return r.covers(call.Name) }) {
			awaiting = append(awaiting, keys[i])
		}
	}
	code, _ := s.mayDecide(p, c, reply, awaiting)
	return len(awaiting) > 0 && code == ""
}

// decidedReply returns the last reply of conv whose calls' keys are those
// rec decides, or nil.
func decidedReply(conv *toolgate.Conversation, rec *DecisionRecord) *toolgate.AssistantMessage {
	if conv == nil || len(rec.Decisions) == 0 {
		return nil
	}
	for i := len(conv.Messages) - 1; i >= 0; i-- {
		am, ok := conv.Messages[i].(*toolgate.AssistantMessage)
		if !ok || len(am.ToolCalls) != len(rec.Decisions) {
			continue
		}
		keys := am.CallKeys()
		if !slices.ContainsFunc(rec.Decisions, func(d toolgate.Decision) bool { return !slices.Contains(keys, d.Key) }) {
			return am
		}
	}
	return nil
}

// conflict answers a decision request of p on a pause of c that somebody
// else decided (or that expired), rec being the first decision's record
// if known: 409, with the record as p may see it.
func (s *Server) conflict(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, c *conversation, rec *DecisionRecord, conv *toolgate.Conversation) {
	shown := rec
	if !s.mayKnowDecision(p, c, rec, conv) {
		shown = nil
	} else {
		var err error
		if shown, err = s.viewRecord(r.Context(), c, p, rec, false); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	if rec != nil && rec.Outcome == outcomeExpired {
		writeExpired(w, shown)
		return
	}
	s.alreadyDecided(w, shown)
}
