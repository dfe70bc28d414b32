package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// The audit log. With [Config.Audit] set, the server writes:
//
//   - requested: one record per awaiting call when a turn pauses; the
//     actor is the conversation's owner, who asked;
//   - decided: one record per call a person decided (every awaiting call,
//     and a call needing no decision that the person denied), written
//     before the resumption runs; a decision whose records cannot be
//     written is refused with 500 and nothing runs;
//   - edited: when a decision changes a call's arguments (see
//     [editedArguments]), with the digest of the new arguments;
//   - executed (reason "ok" or "error"), denied, refused, expired: one per
//     call of the paused reply, read from the tool message the store holds
//     once the pause is resolved, whether or not the request that
//     resolved it is still there;
//   - refused: for the calls an authorizer refuses in a turn, written by
//     [AuditAuthorizer];
//   - revealed: when a person is shown the originals behind privacy
//     tokens (see reveal.go).
//
// Argument digests are of the arguments as the stored reply holds them:
// as the model wrote them, with privacy tokens when privacy is on. That is
// the form a call is shown, decided and matched in; requested, decided
// and executed records of one call carry one digest. A deny message is the
// approver's free text and may hold personal data: a denied record holds
// its digest, never the text.
//
// Records of events that already happened (a pause stored, a tool run)
// are written with context.WithoutCancel: a request that goes away does
// not lose them. A failure to write them is logged; it cannot undo the
// event.

// codeNoAudit answers a request for audit records of a service without an
// audit log (404).
const codeNoAudit = "no_audit"

// auditor writes a server's audit records. A nil *auditor writes nothing.
// It is safe for concurrent use.
type auditor struct {
	// fixed at creation
	log    audit.Log
	key    []byte // nil: plain digests
	logger *slog.Logger

	mu   sync.Mutex
	head audit.Anchor // guarded by mu: the last record appended here
}

func newAuditor(cfg *Config) *auditor {
	if cfg.Audit == nil {
		return nil
	}
	return &auditor{log: cfg.Audit, key: cfg.AuditDigestKey, logger: cfg.Logger}
}

// auditProblems returns the problems of the audit settings.
func (c *Config) auditProblems() []error {
	var errs []error
	if c.Audit == nil && c.AuditDigestKey != nil {
		errs = append(errs, errors.New("an audit digest key without an audit log"))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		a := c.Agents[name]
		if a == nil || a.RevealRoles == nil {
			continue
		}
		if a.Privacy == nil {
			errs = append(errs, fmt.Errorf("agent %q: reveal roles without a privacy guard: there is nothing to reveal", name))
		}
		if c.Audit == nil {
			errs = append(errs, fmt.Errorf("agent %q: reveal roles without an audit log: every reveal is audited", name))
		}
	}
	return errs
}

// digest returns the digest of a call's arguments.
func (a *auditor) digest(args string) string {
	if a.key != nil {
		return audit.KeyedDigest(a.key, []byte(args))
	}
	return audit.Digest([]byte(args))
}

// append writes records at once, even when ctx is canceled.
func (a *auditor) append(ctx context.Context, recs ...*audit.Record) error {
	if a == nil || len(recs) == 0 {
		return nil
	}
	if err := a.log.Append(context.WithoutCancel(ctx), recs...); err != nil {
		return fmt.Errorf("server: writing %d audit records: %w", len(recs), err)
	}
	last := recs[len(recs)-1].Anchor()
	a.mu.Lock()
	if last.Seq > a.head.Seq {
		a.head = last
	}
	a.mu.Unlock()
	return nil
}

// note writes the records of events that already happened: a failure is
// logged.
func (a *auditor) note(ctx context.Context, recs ...*audit.Record) {
	if err := a.append(ctx, recs...); err != nil {
		a.logger.ErrorContext(ctx, "server: audit records lost", "conversation", recs[0].ConversationID, "kind", recs[0].Kind, "records", len(recs), "err", logcap.Error(err))
	}
}

// anchor returns the last record appended here, or nil.
func (a *auditor) anchor() *audit.Anchor {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head.Seq == 0 {
		return nil
	}
	h := a.head
	return &h
}

// callRecord returns a record about a call.
func (a *auditor) callRecord(convID, pauseID, key string, call toolgate.ToolCall, kind audit.Kind, actor audit.Actor, reason string) *audit.Record {
	return &audit.Record{
		ConversationID: convID, PauseID: pauseID, CallKey: key, Tool: call.Name,
		Kind: kind, Actor: actor, Reason: reason, ArgsDigest: a.digest(call.Arguments),
	}
}

// person is the actor of a principal's deed.
func person(p *toolgate.Principal) audit.Actor {
	if p == nil {
		return audit.Actor{Source: audit.SourceSystem}
	}
	return audit.Actor{ID: p.ID, Source: audit.SourcePerson}
}

// stickyActor is the actor of a decision that sticky grants made: the
// grants' ids and who granted them.
func stickyActor(used []records.GrantRef) audit.Actor {
	ids := make([]string, len(used))
	for i, g := range used {
		ids[i] = g.ID + " by " + g.GrantedBy
	}
	return audit.Actor{ID: strings.Join(ids, ", "), Source: audit.SourceStickyGrant}
}

// pausedReply returns the open pause of conv and its reply, or nils.
func pausedReply(conv *toolgate.Conversation) (*toolgate.PauseRecord, *toolgate.AssistantMessage) {
	if conv == nil || conv.Pause == nil || conv.Pause.Index < 0 || conv.Pause.Index >= len(conv.Messages) {
		return nil, nil
	}
	reply, ok := conv.Messages[conv.Pause.Index].(*toolgate.AssistantMessage)
	if !ok || !reply.HasToolCalls() {
		return nil, nil
	}
	return conv.Pause, reply
}

// auditPaused writes a requested record for every call the open pause of
// conversation c awaits. It reads the pause from the store itself, so that
// a request gone away does not lose the records.
func (s *Server) auditPaused(ctx context.Context, c *conversation) {
	a := s.audit
	if a == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
	if err != nil {
		a.logger.ErrorContext(ctx, "server: audit records lost: cannot read the pause", "conversation", c.ID, "err", logcap.Error(err))
		return
	}
	pr, reply := pausedReply(conv)
	if pr == nil || pr.Claimed {
		return
	}
	keys := reply.CallKeys()
	var recs []*audit.Record
	for i, call := range reply.ToolCalls {
		if slices.Contains(pr.Awaiting, keys[i]) {
			recs = append(recs, a.callRecord(c.ID, pr.ID, keys[i], call, audit.KindRequested, person(&c.Owner), "awaiting a decision"))
		}
	}
	a.note(ctx, recs...)
}

// editedArguments returns the arguments a decision replaces its call's
// with, and whether it does: [Server.auditDecided] then writes an edited
// record with their digest, and the executed record of the call carries
// that digest.
func editedArguments(d toolgate.Decision) (string, bool) {
	if d.Verdict != toolgate.VerdictAllow || len(d.Arguments) == 0 {
		return "", false
	}
	return string(d.Arguments), true
}

// decidedCalls returns the indexes of the calls of reply that decisions
// decide: every call the pause pr awaits, and the others a decision denies.
func decidedCalls(pr *toolgate.PauseRecord, reply *toolgate.AssistantMessage, decisions []toolgate.Decision) (idx []int, keys []string, byKey map[string]toolgate.Decision) {
	byKey = make(map[string]toolgate.Decision, len(decisions))
	for _, d := range decisions {
		byKey[d.Key] = d
	}
	keys = reply.CallKeys()
	for i := range reply.ToolCalls {
		d, ok := byKey[keys[i]]
		if ok && (d.Verdict == toolgate.VerdictDeny || slices.Contains(pr.Awaiting, keys[i])) {
			idx = append(idx, i)
		}
	}
	return idx, keys, byKey
}

// auditDecided writes the decided records of p's decisions on the open
// pause of conv (the pause as the decision saw it), and an edited record
// for every call whose arguments a decision changes. It runs before the
// resumption: an error means nothing was written, and the decision must
// not run.
func (s *Server) auditDecided(ctx context.Context, c *conversation, conv *toolgate.Conversation, actor audit.Actor, decisions []toolgate.Decision) error {
	if s.audit == nil {
		return nil
	}
	return s.audit.append(ctx, s.decidedRecords(c, conv, actor, decisions)...)
}

// decidedRecords returns the records [Server.auditDecided] writes; nil
// without an audit log.
func (s *Server) decidedRecords(c *conversation, conv *toolgate.Conversation, actor audit.Actor, decisions []toolgate.Decision) []*audit.Record {
	a := s.audit
	if a == nil {
		return nil
	}
	pr, reply := pausedReply(conv)
	if pr == nil {
		return nil
	}
	idx, keys, byKey := decidedCalls(pr, reply, decisions)
	var recs []*audit.Record
	for _, i := range idx {
		call, d := reply.ToolCalls[i], byKey[keys[i]]
		reason := "allow"
		if d.Verdict == toolgate.VerdictDeny {
			reason = "deny"
		}
		recs = append(recs, a.callRecord(c.ID, pr.ID, keys[i], call, audit.KindDecided, actor, reason))
		if args, ok := editedArguments(d); ok {
			edited := call
			edited.Arguments = args
			recs = append(recs, a.callRecord(c.ID, pr.ID, keys[i], edited, audit.KindEdited, actor, "arguments edited by the approver"))
		}
	}
	return recs
}

// auditResolution prepares the audit of the resumption p of the pause of
// conv: it sets p.Resolved so that the records of what became of the calls
// are written as soon as the resolution is stored, while the turn goes on
// (the model answers the results meanwhile), and returns the function to
// call with the resumption's error once it returns. That function returns
// once the records are written, so that they precede the decision's
// outcome; when the resumption stored no resolution it writes what
// [Server.auditResolved] writes.
func (s *Server) auditResolution(ctx context.Context, c *conversation, conv *toolgate.Conversation, actor audit.Actor, p *toolgate.ResumeTurnParams) func(error) {
	a := s.audit
	if a == nil {
		return func(error) {}
	}
	pr, reply := pausedReply(conv)
	if pr == nil {
		return func(error) {}
	}
	ctx = context.WithoutCancel(ctx)
	// set by the hook, which runs inside the resumption; the returned
	// function reads it once the resumption has returned
	var written chan struct{}
	p.Resolved = func(m *toolgate.ToolMessage) {
		if resolvedInTx(ctx, pr.ID) {
			// Written with the resolution (txaudit.go).
			return
		}
		recs := a.resolution(c.ID, pr.ID, reply, m, actor, p.Decisions)
		written = make(chan struct{})
		go func() {
			defer close(written)
			a.note(ctx, recs...)
		}()
	}
	return func(err error) {
		if written != nil {
			<-written
			return
		}
		if resolvedInTx(ctx, pr.ID) {
			return
		}
		s.auditResolved(ctx, c, conv, actor, p.Decisions, err)
	}
}

// auditResolved writes what became of the calls of the pause of conv (the
// conversation as it was before the pause was decided) once p's decisions
// were run, err being the resumption's error: executed, denied, refused,
// read from the tool message the store now holds after the paused reply.
// When the store holds none and the pause was not claimed, the decision
// did not run: its decided calls get a refused record saying why (another
// decision took the pause first, or the resumption failed before running
// them; with the records in the store, whose claim would have written the
// decided records, such a failure leaves none).
func (s *Server) auditResolved(ctx context.Context, c *conversation, conv *toolgate.Conversation, actor audit.Actor, decisions []toolgate.Decision, err error) {
	a := s.audit
	if a == nil {
		return
	}
	pr, reply := pausedReply(conv)
	if pr == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	why := "the decision did not run: the resumption failed before running the calls"
	if errors.Is(err, toolgate.ErrNoOpenPause) || errors.As(err, new(*decidedElsewhere)) {
		// Another decision or expiry took the pause: the resolution in
		// the store is theirs, and so are its records.
		why = "the decision came too late: the pause was already taken"
	} else {
		now, lerr := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
		if lerr != nil {
			a.logger.ErrorContext(ctx, "server: audit records lost: cannot read the resolution", "conversation", c.ID, "pause", pr.ID, "err", logcap.Error(lerr))
			return
		}
		if pr.Index+1 < len(now.Messages) {
			if msg, ok := now.Messages[pr.Index+1].(*toolgate.ToolMessage); ok {
				a.note(ctx, a.resolution(c.ID, pr.ID, reply, msg, actor, decisions)...)
				return
			}
		}
		if err == nil {
			return
		}
		if now.Pause != nil && now.Pause.ID == pr.ID && now.Pause.Claimed {
			// Claimed but not resolved: some calls may have run. What ran
			// is recorded when the resolution is stored.
			a.logger.ErrorContext(ctx, "server: a resumption failed after claiming its pause; no audit records of its calls yet", "conversation", c.ID, "pause", pr.ID)
			return
		}
		var de *toolgate.DecisionError
		switch {
		case errors.As(err, &de):
			why = "the decision did not run: " + string(de.Problem)
		case s.tx[c.Agent]:
			// A claim that never committed, its decided records with
			// it: the attempt left nothing to answer for, and the
			// pause's one outcome per call comes with its resolution.
			a.logger.WarnContext(ctx, "server: a decision failed before its claim committed; the pause stays open", "conversation", c.ID, "pause", pr.ID, "err", logcap.Error(err))
			return
		}
	}
	idx, keys, _ := decidedCalls(pr, reply, decisions)
	var recs []*audit.Record
	for _, i := range idx {
		recs = append(recs, a.callRecord(c.ID, pr.ID, keys[i], reply.ToolCalls[i], audit.KindRefused, audit.Actor{Source: audit.SourceSystem}, why))
	}
	a.note(ctx, recs...)
}

// auditExpired writes an expired record for every call of the pause
// pauseID of conversation c, which was just expired: the last tool message
// of the conversation whose results all expired answers it.
func (s *Server) auditExpired(ctx context.Context, c *conversation, pauseID string) {
	a := s.audit
	if a == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
	if err != nil {
		a.logger.ErrorContext(ctx, "server: audit records lost: cannot read the expiry", "conversation", c.ID, "pause", pauseID, "err", logcap.Error(err))
		return
	}
	for i := len(conv.Messages) - 1; i > 0; i-- {
		msg, ok := conv.Messages[i].(*toolgate.ToolMessage)
		if !ok || len(msg.Results) == 0 || slices.ContainsFunc(msg.Results, func(r toolgate.ToolResult) bool { return r.Status != toolgate.ResultExpired }) {
			continue
		}
		if reply, ok := conv.Messages[i-1].(*toolgate.AssistantMessage); ok {
			a.note(ctx, a.resolution(c.ID, pauseID, reply, msg, audit.Actor{Source: audit.SourceSystem}, nil)...)
		}
		return
	}
}

// resolution returns the records of the results msg gives the calls of
// reply, decided by actor with decisions (nil for an expiry).
func (a *auditor) resolution(convID, pauseID string, reply *toolgate.AssistantMessage, msg *toolgate.ToolMessage, actor audit.Actor, decisions []toolgate.Decision) []*audit.Record {
	return a.resolutionDigested(convID, pauseID, reply, msg, actor, decisions, nil)
}

// argDigests returns the argument digests of the calls of reply as
// decisions run them (edited arguments where a decision edits them),
// keyed by the arguments, for [auditor.resolutionDigested]: computed
// before the write whose records use them, they are not computed inside
// its transaction.
func (a *auditor) argDigests(reply *toolgate.AssistantMessage, decisions []toolgate.Decision) map[string]string {
	keys := reply.CallKeys()
	byKey := make(map[string]toolgate.Decision, len(decisions))
	for _, d := range decisions {
		byKey[d.Key] = d
	}
	out := make(map[string]string, len(reply.ToolCalls))
	for i, call := range reply.ToolCalls {
		args := call.Arguments
		if edited, ok := editedArguments(byKey[keys[i]]); ok {
			args = edited
		}
		if _, ok := out[args]; !ok {
			out[args] = a.digest(args)
		}
	}
	return out
}

// resolutionDigested is resolution with the argument digests of
// [auditor.argDigests] (nil, or a missing entry: computed here).
func (a *auditor) resolutionDigested(convID, pauseID string, reply *toolgate.AssistantMessage, msg *toolgate.ToolMessage, actor audit.Actor, decisions []toolgate.Decision, digests map[string]string) []*audit.Record {
	keys := reply.CallKeys()
	byKey := make(map[string]toolgate.Decision, len(decisions))
	for _, d := range decisions {
		byKey[d.Key] = d
	}
	system := audit.Actor{Source: audit.SourceSystem}
	var recs []*audit.Record
	for i, call := range reply.ToolCalls {
		if i >= len(msg.Results) || msg.Results[i].CallID != call.ID {
			continue
		}
		res := msg.Results[i]
		if args, ok := editedArguments(byKey[keys[i]]); ok {
			call.Arguments = args
		}
		digest, ok := digests[call.Arguments]
		if !ok {
			digest = a.digest(call.Arguments)
		}
		record := func(kind audit.Kind, actor audit.Actor, reason string) *audit.Record {
			return &audit.Record{
				ConversationID: convID, PauseID: pauseID, CallKey: keys[i], Tool: call.Name,
				Kind: kind, Actor: actor, Reason: reason, ArgsDigest: digest,
			}
		}
		var r *audit.Record
		switch res.Status {
		case toolgate.ResultOK, toolgate.ResultError:
			r = record(audit.KindExecuted, actor, res.Status.String())
		case toolgate.ResultInterrupted:
			// Recorded as started before it ran: the tool was called at most
			// once and its outcome is unknown. It is never run again.
			r = record(audit.KindExecuted, system, "interrupted: started, its outcome unknown; not run again")
		case toolgate.ResultDenied:
			r = record(audit.KindDenied, actor, "denied; message "+a.digest(res.Content))
		case toolgate.ResultExpired:
			r = record(audit.KindExpired, system, "expired before a decision")
		case toolgate.ResultRefused:
			r = record(audit.KindRefused, audit.Actor{ID: "authorization", Source: audit.SourceRule}, "refused by the authorizer when the pause resumed")
		case toolgate.ResultSkipped:
			r = record(audit.KindRefused, system, "skipped: a tool call limit was reached")
		default:
			continue
		}
		recs = append(recs, r)
	}
	return recs
}

// AuditAuthorizer returns next (a [toolgate.ClientOptions.Authorize]) wrapped so that the calls it refuses in a
// turn are written to log as [audit.KindRefused] records (the actor is
// the rule "authorization"): calls refused neutrally, and the calls of a
// reply whose denial ([*authz.DenialError]) ends the turn. Calls refused
// again when a paused reply resumes are recorded by the server from the
// stored resolution instead, so they are not recorded twice. digestKey is
// [Config.AuditDigestKey] (nil: plain digests). A record that cannot be
// written ends the request with an error; the refused calls do not run
// either way.
//
// [Build] installs it for the agents with authorization; wrap the
// authorizer of a client built by hand with it to audit its refusals. It
// panics when next or log is nil.
func AuditAuthorizer(next func(context.Context, *toolgate.BeginParams) (toolgate.Authorizer, error), log audit.Log, digestKey []byte) func(context.Context, *toolgate.BeginParams) (toolgate.Authorizer, error) {
	if next == nil || log == nil {
		panic("server: AuditAuthorizer: nil authorizer or log")
	}
	x := &auditAuthorizer{next: next, a: &auditor{log: log, key: slices.Clone(digestKey), logger: slog.Default()}}
	return x.begin
}

type auditAuthorizer struct {
	next func(context.Context, *toolgate.BeginParams) (toolgate.Authorizer, error)
	a    *auditor
}

// begin begins the request's authorization with next and audits it.
func (x *auditAuthorizer) begin(ctx context.Context, r *toolgate.BeginParams) (toolgate.Authorizer, error) {
	ra, err := x.next(ctx, r)
	if err != nil {
		return nil, err
	}
	req := &auditRequest{next: ra, a: x.a}
	if r != nil {
		req.convID, req.resume = r.ConversationID, r.Resume
	}
	return req, nil
}

// auditRequest audits the refusals of one request.
type auditRequest struct {
	// fixed at Begin
	next   toolgate.Authorizer
	a      *auditor
	convID string
	resume bool

	// prompted is set once the model was called: in a resumption, the
	// check of the paused reply comes before, those of new replies after.
	prompted atomic.Bool
}

func (r *auditRequest) Tools(ctx context.Context) ([]*toolgate.Tool, error) { return r.next.Tools(ctx) }

func (r *auditRequest) CheckPrompt(ctx context.Context, offered []*toolgate.Tool, p *toolgate.Prompt) error {
	r.prompted.Store(true)
	return r.next.CheckPrompt(ctx, offered, p)
}

func (r *auditRequest) CheckReply(ctx context.Context, p *toolgate.Prompt, reply *toolgate.AssistantMessage) ([]toolgate.ToolResult, error) {
	refusals, err := r.next.CheckReply(ctx, p, reply)
	if r.resume && !r.prompted.Load() {
		return refusals, err
	}
	var reason string
	var de *authz.DenialError
	switch {
	case errors.As(err, &de):
		reason = "denied by authorization: " + string(de.Code)
		if de.Reason != "" {
			reason += ": " + de.Reason
		}
	case err == nil && refusals != nil:
		reason = "refused by the authorizer"
	default:
		return refusals, err
	}
	keys := reply.CallKeys()
	recs := make([]*audit.Record, len(reply.ToolCalls))
	for i, call := range reply.ToolCalls {
		recs[i] = r.a.callRecord(r.convID, "", keys[i], call, audit.KindRefused, audit.Actor{ID: "authorization", Source: audit.SourceRule}, reason)
	}
	if aerr := r.a.append(ctx, recs...); aerr != nil {
		return nil, errors.Join(aerr, err)
	}
	return refusals, err
}

// auditJSON is the answer of GET /v1/conversations/{id}/audit.
type auditJSON struct {
	ConversationID string         `json:"conversation_id"`
	Records        []audit.Record `json:"records"`
	// Verified is true when the whole log verified (from the anchor, when
	// there is one) and holds every record returned, unchanged.
	Verified     bool             `json:"verified"`
	Verification verificationJSON `json:"verification"`
}

// verificationJSON is what the verification of the log found.
type verificationJSON struct {
	// Records is the number of records found intact.
	Records uint64 `json:"records"`
	// Head is the last intact record, "SEQ:HASH"; "" for none.
	Head string `json:"head"`
	// Anchor is the record the log had to hold, "SEQ:HASH": the last
	// this server appended; "" for none.
	Anchor string `json:"anchor,omitempty"`
	// CallerAnchor is the record the caller's ?anchor= named, which the
	// log had to hold too; "" for none.
	CallerAnchor string `json:"caller_anchor,omitempty"`
	// Unsealed is the number of records the log holds that are not
	// sealed into the chain yet (PostgreSQL seals records shortly after
	// they commit): they follow Head, with seq 0 and no hashes, and no
	// hash covers them until they are sealed.
	Unsealed uint64 `json:"unsealed,omitempty"`
	// Problem, Seq and Detail describe the first broken record.
	Problem audit.Problem `json:"problem,omitempty"`
	Seq     uint64        `json:"seq,omitempty"`
	Detail  string        `json:"detail,omitempty"`
}

// conversationAudit serves GET /v1/conversations/{id}/audit: the records
// of a conversation and whether the log verifies.
func (s *Server) conversationAudit(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	ctx := r.Context()
	c := s.pathConversation(w, r, p, func(*conversation) bool { return hasRole(p, s.cfg.AuditRoles) })
	if c == nil {
		return
	}
	a := s.audit
	if a == nil {
		writeError(w, http.StatusNotFound, codeNoAudit, "this service keeps no audit log")
		return
	}
	// The log must hold the server's own anchor and, besides, the
	// caller's: a caller's anchor adds a check, never replaces one.
	anchor := a.anchor()
	var callers *audit.Anchor
	if q := r.URL.Query().Get("anchor"); q != "" {
		an, err := audit.ParseAnchor(q)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, "anchor: "+err.Error())
			return
		}
		callers = &an
	}
	out := auditJSON{ConversationID: c.ID, Records: []audit.Record{}, Verified: true}
	var re *audit.RecordError
	for rec, err := range a.log.Records(ctx, &audit.Query{ConversationID: c.ID}) {
		if errors.As(err, &re) {
			// A stored record that does not decode: the verification
			// below names it.
			out.Verified = false
			break
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		out.Records = append(out.Records, *rec)
	}
	if anchor != nil {
		out.Verification.Anchor = anchor.String()
	}
	rep, err := audit.Verify(ctx, a.log, &audit.VerifyOptions{Anchor: anchor})
	if callers != nil {
		out.Verification.CallerAnchor = callers.String()
		if err == nil {
			rep, err = audit.Verify(ctx, a.log, &audit.VerifyOptions{Anchor: callers})
		}
	}
	switch {
	case errors.As(err, &re):
		out.Verified = false
		out.Verification.Problem, out.Verification.Seq, out.Verification.Detail = re.Problem, re.Seq, re.Detail
	case err != nil:
		s.internal(w, r, err)
		return
	}
	out.Verification.Records, out.Verification.Unsealed = rep.Records, rep.Unsealed
	if rep.Head.Seq > 0 {
		out.Verification.Head = rep.Head.String()
	}
	for i := range out.Records {
		rec := &out.Records[i]
		if rec.Unsealed() {
			// Counted in verification.unsealed; not part of the chain yet.
			continue
		}
		if rec.Seq > rep.Records || rec.ComputeHash() != rec.Hash {
			out.Verified = false
		}
	}
	writeJSON(w, http.StatusOK, out)
}
