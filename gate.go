package toolgate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/toolgate/toolgate/internal/logcap"
)

// The seams a [*PanicError] names. Their values are stable: they cross the
// wire in the service's errors.
const (
	// SeamPolicy: the confirmation policy ([ClientOptions.Policy]).
	SeamPolicy = "confirmation_policy"
	// SeamDecider: the check of who decided ([ResumeTurnParams.MayDecide]).
	SeamDecider = "decider"
	// SeamAuthorizer: [ClientOptions.Authorize] or the [Authorizer] it began.
	SeamAuthorizer = "authorizer"
	// SeamProtector: [ClientOptions.Protect] or the [Protector] it began, recognizers
	// and validators included.
	SeamProtector = "protector"
	// SeamToolSearch: [ClientOptions.SearchTools] or the [ToolSearch] it began.
	SeamToolSearch = "tool_search"
	// SeamToolMiddleware: code wrapped around a tool's function
	// ([ClientOptions.ToolMiddleware], [Tool.Wrap], the guards' per-call
	// checks). A panic of the tool's own function is not one: it becomes
	// an error result wrapping [ErrToolPanicked].
	SeamToolMiddleware = "tool_middleware"
	// SeamModel: the model or model middleware.
	SeamModel = "model"
	// SeamErrorHandler: the [ClientOptions.ErrorHandler].
	SeamErrorHandler = "error_handler"
)

// PanicError reports that code the gate calls panicked, and that the gate
// failed closed: nothing of the reply being decided, checked or run ran
// after the panic, and the turn ended with this error (a confirmation
// policy that panics instead makes its call await a decision). It carries
// no panic value, which may hold arguments or personal data; the value's
// type and the stack are logged. It matches [ErrPanicked] and
// [ErrAbortTurn].
type PanicError struct {
	// Seam names the code that panicked: one of the Seam constants.
	Seam string
}

func (e *PanicError) Error() string {
	return "toolgate: the " + e.Seam + " panicked; the gate failed closed"
}

// Is reports whether target is [ErrPanicked] or [ErrAbortTurn].
func (e *PanicError) Is(target error) bool { return target == ErrPanicked || target == ErrAbortTurn }

// panicked logs the recovered panic value v of seam and returns the error
// that replaces it. The value itself is logged only when it is a runtime
// error (an index out of range, a nil dereference), which holds no data.
func panicked(logger *slog.Logger, seam string, v any) *PanicError {
	if logger == nil {
		logger = slog.Default()
	}
	logger.Error("toolgate: code called by the gate panicked; failing closed", "seam", seam, "panic", describePanic(v), "stack", string(debug.Stack()))
	return &PanicError{Seam: seam}
}

// describePanic describes a panic value for a log line: a runtime error's
// text, cut to a bounded length (a value of the caller's own type may
// implement runtime.Error and quote anything), or the value's type.
func describePanic(v any) string {
	if re, ok := v.(runtime.Error); ok {
		return logcap.Error(re)
	}
	return logcap.String(fmt.Sprintf("%T", v))
}

// catch, deferred, turns a panic into *err = a [*PanicError] for seam.
func catch(logger *slog.Logger, seam string, err *error) {
	if v := recover(); v != nil {
		*err = panicked(logger, seam, v)
	}
}

// known returns p, or nil when p has an empty id: a principal without an
// id is no principal, whatever roles it claims.
func known(p *Principal) *Principal {
	if p == nil || p.ID == "" {
		return nil
	}
	return p
}

// MisleadingCallIDs returns, in call order, the keys of the reply's calls
// whose id is the key of another call of the reply ("#1" on the call at
// position 0, say), or nil when there are none. A program that decides by
// call id instead of key would decide the wrong call of such a reply:
// pages should show each call's key and warn. Decisions name keys, which
// stay distinct and unambiguous.
func (m *AssistantMessage) MisleadingCallIDs() []string {
	reply := m
	if reply == nil {
		return nil
	}
	// A misleading id starts with '#': an id that does not is either its
	// call's key, or shared with another call (so that neither uses it).
	if !slices.ContainsFunc(reply.ToolCalls, func(c ToolCall) bool { return c.ID != "" && c.ID[0] == '#' }) {
		return nil
	}
	keys := reply.CallKeys()
	var out []string
	for i, c := range reply.ToolCalls {
		if c.ID != "" && c.ID != keys[i] && slices.Contains(keys, c.ID) {
			out = append(out, keys[i])
		}
	}
	return out
}

// checkDeciding applies the rules of who may decide what to decisions
// matched to the calls of p.Reply (keys and which from matchDecisions):
// a call that awaited no decision gets a plain allow, so that it runs as
// the model wrote it ([ProblemNotAwaited]), and every call that awaited one
// is one the decider may decide ([ProblemNotDecider]).
func (m *manager) checkDeciding(pl *plan) error {
	keys := pl.keys
	for i, c := range pl.reply.ToolCalls {
		d := pl.decision(i)
		var awaited bool
		if pl.awaiting != nil {
			awaited = slices.Contains(pl.awaiting, keys[i])
		} else {
			// The policy answers as it did when the reply paused; one that
			// fails makes the call await a decision (and the decider check
			// then applies to it).
			needs, err := m.needs(pl.prompt, c)
			awaited = needs || err != nil
		}
		if !awaited {
			if d.Verdict != VerdictAllow || len(d.Arguments) > 0 {
				return &DecisionError{Problem: ProblemNotAwaited, Key: keys[i], Tool: c.Name}
			}
			continue
		}
		if !m.mayDecide(pl.mayDecide, c) {
			return &DecisionError{Problem: ProblemNotDecider, Key: keys[i], Tool: c.Name}
		}
	}
	return nil
}

// mayDecide asks the caller's check (nil: the caller checked) whether the
// decider may decide call. A check that panics answers no.
func (m *manager) mayDecide(check func(ToolCall) bool, call ToolCall) (ok bool) {
	if check == nil {
		return true
	}
	defer func() {
		if v := recover(); v != nil {
			panicked(m.logger, SeamDecider, v)
			ok = false
		}
	}()
	return check(call)
}

// needs asks the policy about call, judged with the metadata of the
// prompt's tool of that name. A panic becomes a [*PanicError].
func (m *manager) needs(p *Prompt, call ToolCall) (bool, error) {
	return m.ask(m.policy, p, call)
}

// ask asks policy about call, judged with the metadata of the prompt's tool
// of that name. A panic becomes a [*PanicError].
func (m *manager) ask(policy confirmationPolicy, p *Prompt, call ToolCall) (needs bool, err error) {
	var meta ToolMetadata
	if t := p.Tool(call.Name); t != nil {
		meta = t.meta
	}
	defer catch(m.logger, SeamPolicy, &err)
	return policy(call, meta), nil
}

// guarded runs f, turning a panic into a [*PanicError] for seam.
func guarded(logger *slog.Logger, seam string, f func() error) (err error) {
	defer catch(logger, seam, &err)
	return f()
}

// safeAuthorizer is a [Authorizer] whose panics fail closed.
type safeAuthorizer struct {
	ra     Authorizer
	logger *slog.Logger
}

func (s safeAuthorizer) Tools(ctx context.Context) (_ []*Tool, err error) {
	defer catch(s.logger, SeamAuthorizer, &err)
	return s.ra.Tools(ctx)
}

func (s safeAuthorizer) CheckPrompt(ctx context.Context, offered []*Tool, p *Prompt) (err error) {
	defer catch(s.logger, SeamAuthorizer, &err)
	return s.ra.CheckPrompt(ctx, offered, p)
}

func (s safeAuthorizer) CheckReply(ctx context.Context, p *Prompt, reply *AssistantMessage) (_ []ToolResult, err error) {
	defer catch(s.logger, SeamAuthorizer, &err)
	return s.ra.CheckReply(ctx, p, reply)
}

// safeProtector is a [Protector] whose panics fail closed. Its Tool
// is called only within [guarded].
type safeProtector struct {
	rp     Protector
	logger *slog.Logger
}

func (s safeProtector) Messages(ctx context.Context, msgs []Message) (_ []Message, err error) {
	defer catch(s.logger, SeamProtector, &err)
	return s.rp.Messages(ctx, msgs)
}

func (s safeProtector) Tool(t *Tool) *Tool { return s.rp.Tool(t) }

func (s safeProtector) Output(ctx context.Context, text string) (_ string, err error) {
	defer catch(s.logger, SeamProtector, &err)
	return s.rp.Output(ctx, text)
}

func (s safeProtector) OutputStream() func(ctx context.Context, piece string, final bool) (string, error) {
	var f func(context.Context, string, bool) (string, error)
	if err := guarded(s.logger, SeamProtector, func() error { f = s.rp.OutputStream(); return nil }); err != nil || f == nil {
		return func(context.Context, string, bool) (string, error) {
			return "", cmp.Or(err, errors.New("toolgate: the protector returned no output stream"))
		}
	}
	return func(ctx context.Context, piece string, final bool) (_ string, err error) {
		defer catch(s.logger, SeamProtector, &err)
		return f(ctx, piece, final)
	}
}

func (s safeProtector) End(ctx context.Context) (err error) {
	defer catch(s.logger, SeamProtector, &err)
	return s.rp.End(ctx)
}

// safeSearch is a [ToolSearch] whose panics fail closed. Its Tool
// is called only within [guarded].
type safeSearch struct {
	rs     ToolSearch
	logger *slog.Logger
}

func (s safeSearch) Tool() *Tool { return s.rs.Tool() }

func (s safeSearch) Offer(ctx context.Context, history []Message, tools []*Tool) (_ []*Tool, err error) {
	defer catch(s.logger, SeamToolSearch, &err)
	return s.rs.Offer(ctx, history, tools)
}
