package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/internal/logcap"
)

// The rights a decision request needs, call by call.
//
// A principal who may decide a pause (every awaiting call is covered by a
// rule that lets them, see [Server.mayDecide]) may send, for each awaiting
// call, allow, allow with edited arguments, or deny with a message. For a
// call that awaited no decision, the request may only leave it out or
// allow it as the model wrote it — such a call runs exactly as written or
// not at all — or deny it, when some approval rule covering its tool lets
// the principal decide it. Anything else for such a call (a deny without
// such a rule, any edit) refuses the whole request with 403
// "not_decidable" naming the call, and nothing of the reply runs. Deny
// messages longer than [Config.MaxDenyMessage] characters and edited
// arguments larger than [Config.MaxEditedArguments] bytes are refused
// with 422. A refused request is audited: one refused record for the call
// it names (for every awaiting call when it names none), the decider as
// actor.

// More error codes of the API (see errors.go). Their values never change.
const (
	codeNotDecidable      = "not_decidable"       // 403: the request decides a call the caller may not decide
	codeMessageTooLong    = "message_too_long"    // 422: a deny message beyond Config.MaxDenyMessage
	codeArgumentsTooLarge = "arguments_too_large" // 422: edited arguments beyond Config.MaxEditedArguments
)

// refusal is a decision request's refusal before anything ran.
type refusal struct {
	status    int
	code, msg string
	// key names the call the refusal is about; "" for the whole pause.
	key string
}

// checkRights returns the refusal of the decisions in of principal p on
// pause (of reply, in c), or nil when p may send them. Decisions naming no
// call of the reply are left to [toolgate.Client.CheckDecisions].
func (s *Server) checkRights(p *toolgate.Principal, c *conversation, reply *toolgate.AssistantMessage, pause *pauseJSON, in []decisionIn) *refusal {
	for _, d := range in {
		i := slices.IndexFunc(pause.Calls, func(call callJSON) bool { return call.Key == d.Key })
		if i < 0 {
			continue
		}
		call := pause.Calls[i]
		edit := len(d.Arguments) > 0 && !bytes.Equal(bytes.TrimSpace(d.Arguments), []byte("null"))
		switch {
		case utf8.RuneCountInString(d.Message) > s.cfg.MaxDenyMessage:
			return &refusal{status: http.StatusUnprocessableEntity, code: codeMessageTooLong, key: d.Key,
				msg: fmt.Sprintf("the message for call %q is longer than %d characters", d.Key, s.cfg.MaxDenyMessage)}
		case len(d.Arguments) > s.cfg.MaxEditedArguments:
			return &refusal{status: http.StatusUnprocessableEntity, code: codeArgumentsTooLarge, key: d.Key,
				msg: fmt.Sprintf("the edited arguments of call %q are larger than %d bytes", d.Key, s.cfg.MaxEditedArguments)}
		case call.Awaiting:
		case edit:
			return &refusal{status: http.StatusForbidden, code: codeNotDecidable, key: d.Key,
				msg: fmt.Sprintf("call %q of tool %s awaited no decision: it runs as the model wrote it, or is denied; it cannot be edited", d.Key, capped(call.Tool))}
		case (d.Verdict != toolgate.VerdictAllow || d.Message != "") && len(s.authorizing(p, c, call.Tool)) == 0:
			return &refusal{status: http.StatusForbidden, code: codeNotDecidable, key: d.Key,
				msg: fmt.Sprintf("your roles may not decide calls of tool %s (call %q); leave it out to let it run", capped(call.Tool), d.Key)}
		}
	}
	return nil
}

// refuseDecision answers a decision request with ref, and audits it.
func (s *Server) refuseDecision(w http.ResponseWriter, r *http.Request, c *conversation, conv *toolgate.Conversation, p *toolgate.Principal, ref *refusal) {
	s.logger.WarnContext(r.Context(), "server: decision refused", "conversation", c.ID, "code", ref.code, "call", capped(ref.key), "principal", capped(p.ID))
	s.auditRefusal(r.Context(), c, conv, p, ref)
	writeJSON(w, ref.status, struct {
		errorJSON
		Key string `json:"key,omitempty"`
	}{errorJSON{Error: ref.code, Message: ref.msg}, ref.key})
}

// auditRefusal writes the refused records of a decision request refused
// with ref.
func (s *Server) auditRefusal(ctx context.Context, c *conversation, conv *toolgate.Conversation, p *toolgate.Principal, ref *refusal) {
	a := s.audit
	if a == nil {
		return
	}
	pr, reply := pausedReply(conv)
	if pr == nil {
		return
	}
	keys := reply.CallKeys()
	var recs []*audit.Record
	for i, call := range reply.ToolCalls {
		if keys[i] == ref.key || (ref.key == "" && slices.Contains(pr.Awaiting, keys[i])) {
			recs = append(recs, a.callRecord(c.ID, pr.ID, keys[i], call, audit.KindRefused, person(p), "decision request refused: "+ref.code))
		}
	}
	a.note(ctx, recs...)
}

// codeAuthorizationDenied answers a turn the authorizer ended (403 or 422,
// see [denialStatus]); "denial" carries the [authz.Code].
const codeAuthorizationDenied = "authorization_denied"

// denialStatus returns the status of a turn ended by a denial of code:
// 422 for a reply the model made that no principal could run (a tool it
// was not shown, a tool set changed under the guard), 403 for a principal
// the policy refuses.
func denialStatus(code authz.Code) int {
	switch code {
	case authz.CodeToolNotExposed, authz.CodeCallbackAdded, authz.CodeCallbackReplaced, authz.CodeToolSearchChanged:
		return http.StatusUnprocessableEntity
	}
	return http.StatusForbidden
}

// denialJSON is the body of a turn ended by an authorization denial. The
// reason is the policy's; no argument values are in it.
type denialJSON struct {
	errorJSON
	Denial authz.Code `json:"denial"`
	Tool   string     `json:"tool,omitempty"`
}

// denial returns the answer to a turn that err ended, when it is an
// authorization denial, and logs it at WARN.
func (s *Server) denial(r *http.Request, err error) (int, *denialJSON, bool) {
	var de *authz.DenialError
	if !errors.As(err, &de) {
		return 0, nil, false
	}
	s.logger.WarnContext(r.Context(), "server: turn refused by authorization", "method", r.Method, "path", capped(r.URL.Path),
		"denial", string(de.Code), "tool", capped(de.Tool))
	msg := "authorization refused the turn: " + string(de.Code)
	if de.Tool != "" {
		msg += " for tool " + capped(de.Tool)
	}
	if de.Reason != "" {
		msg += ": " + capped(de.Reason)
	}
	return denialStatus(de.Code), &denialJSON{errorJSON{Error: codeAuthorizationDenied, Message: msg}, de.Code, capped(de.Tool)}, true
}

// capped returns s cut for a log line or a message ([logcap.String]).
func capped(s string) string { return logcap.String(s) }
