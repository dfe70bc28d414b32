package authz

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
)

// DefaultRefusal is what the model reads for a refused call when
// [Options.RefuseNeutrally] is set and no message is configured.
const DefaultRefusal = "This tool call is not allowed."

// refusedSibling answers the other calls of a reply that had a refused call.
const refusedSibling = "This call did not run: another call of the same reply is not allowed."

// Options configure a [Guard]. A nil *Options means all defaults.
type Options struct {
	// RefuseNeutrally answers a refused call (not exposed, or denied in the
	// execution phase) to the model with a neutral result and lets the turn
	// go on; every call of that reply is answered and none runs. false:
	// the request ends with a [*DenialError].
	RefuseNeutrally bool
	// RefusalMessage is the neutral result. "": [DefaultRefusal].
	RefusalMessage string
	// OnDecision receives every decision and refusal, synchronously. It
	// must be fast and safe for concurrent use. nil: none.
	OnDecision func(Event)
	// SearchTool is the tool-search tool, recognised by identity: it is
	// always offered, needs no policy decision, and may be added to a
	// request's tools. A request's own search tool
	// ([toolgate.BeginParams.SearchTool], set by a client with
	// [toolgate.ClientOptions.SearchTools]) is recognised the same way and
	// offered instead. nil: none.
	SearchTool *toolgate.Tool
	// Logger receives policy errors. nil: [slog.Default].
	Logger *slog.Logger
}

// Guard is the authorization guard: it begins a [toolgate.Authorizer] that filters
// the tools shown to the model by the definition phase of its policy and
// authorizes every call in the execution phase, for the whole reply before
// any call runs and again right before each call runs. It is immutable and
// safe for concurrent use.
//
// Pass its Begin as [toolgate.ClientOptions.Authorize]. The client calls it at
// fixed stages; the only way around it is to call a tool's function
// directly, outside any client or manager.
type Guard struct {
	policy  Policy
	refuse  bool
	refusal string
	onEvent func(Event)
	search  *toolgate.Tool
	logger  *slog.Logger

	mu      sync.Mutex
	wrapped map[*toolgate.Tool]*toolgate.Tool // guarded by mu: original -> rechecking wrapper
}

// maxWrapped bounds the guard's cache of wrapped tools; programs that make
// new tool values all the time (re-listed MCP tools) start it afresh.
const maxWrapped = 4096

// NewGuard returns a guard deciding with policy. It panics when policy is
// nil: there is no implicit allow (use [AllowAll] deliberately).
func NewGuard(policy Policy, opts *Options) *Guard {
	if policy == nil {
		panic("authz: NewGuard: nil policy")
	}
	if opts == nil {
		opts = &Options{}
	}
	g := &Guard{policy: policy, refuse: opts.RefuseNeutrally, refusal: opts.RefusalMessage,
		onEvent: opts.OnDecision, search: opts.SearchTool, logger: opts.Logger}
	if g.refusal == "" {
		g.refusal = DefaultRefusal
	}
	if g.logger == nil {
		g.logger = slog.Default()
	}
	return g
}

// Begin begins the authorization of one request (it is a
// [toolgate.ClientOptions.Authorize]). A request that carries tools but
// no principal (nil, or one with an empty ID) is refused with
// [CodeAuthenticationRequired]; the set of tools it starts with is
// snapshotted.
func (g *Guard) Begin(ctx context.Context, r *toolgate.BeginParams) (toolgate.Authorizer, error) {
	if r == nil {
		r = &toolgate.BeginParams{}
	}
	if len(r.Tools) > 0 && !known(r.Principal) {
		g.emit(Event{Code: CodeAuthenticationRequired, ConversationID: r.ConversationID})
		return nil, &DenialError{Code: CodeAuthenticationRequired, Reason: "the request carries tools but no principal"}
	}
	rg := &requestGuard{g: g, principal: r.Principal, convID: r.ConversationID, search: r.SearchTool,
		snapshot: make(map[string]*toolgate.Tool, len(r.Tools)), order: make([]*toolgate.Tool, 0, len(r.Tools))}
	for _, t := range r.Tools {
		if t == nil || t == r.SearchTool || t == g.search {
			continue
		}
		rg.snapshot[t.Name()] = t
		rg.order = append(rg.order, t)
	}
	if rg.search == nil {
		rg.search = g.search
	}
	return rg, nil
}

func (g *Guard) emit(e Event) {
	if g.onEvent != nil {
		g.onEvent(e)
	}
}

// requestGuard guards one request.
type requestGuard struct {
	// fixed at Begin
	g         *Guard
	principal *toolgate.Principal
	convID    string
	search    *toolgate.Tool            // the request's search tool, or the guard's, or nil
	snapshot  map[string]*toolgate.Tool // name -> tool the request started with
	order     []*toolgate.Tool

	mu      sync.Mutex
	exposed map[string]*toolgate.Tool // guarded by mu: name -> offered (wrapped) tool
}

func (rg *requestGuard) principalID() string {
	if rg.principal == nil {
		return ""
	}
	return rg.principal.ID
}

// decide asks the policy and reports the decision. req may be nil, or a
// request to reuse (its fields are overwritten).
func (rg *requestGuard) decide(ctx context.Context, req *Request, t *toolgate.Tool, phase Phase, call *toolgate.ToolCall) (Decision, error) {
	if req == nil || req.Principal != rg.principal || req.ConversationID != rg.convID {
		req = &Request{Principal: rg.principal, ConversationID: rg.convID}
	}
	// Only the per-tool fields change between decisions of one request.
	req.Tool, req.Metadata, req.Phase, req.Call = t.Definition(), t.Metadata(), phase, call
	d, err := rg.g.policy.Authorize(ctx, req)
	if err != nil {
		rg.g.logger.Error("authz: the policy failed", "tool", logcap.String(t.Name()), "phase", string(phase), "principal", logcap.String(rg.principalID()), "error", logcap.Error(err))
		return Decision{}, fmt.Errorf("authz: policy for tool %q in %s: %w", t.Name(), phase, err)
	}
	rg.g.emit(Event{Phase: phase, Tool: t.Name(), Allowed: d.Allowed, Reason: d.Reason, PrincipalID: rg.principalID(), ConversationID: rg.convID})
	return d, nil
}

// Tools implements [toolgate.Authorizer]: the definition phase, for
// every tool of the snapshot, in order. The returned tools re-check the
// execution phase right before they run. An empty result stays empty.
func (rg *requestGuard) Tools(ctx context.Context) ([]*toolgate.Tool, error) {
	out := make([]*toolgate.Tool, 0, len(rg.order)+1)
	exposed := make(map[string]*toolgate.Tool, len(rg.order)+1)
	if s := rg.search; s != nil {
		out = append(out, s)
		exposed[s.Name()] = s
	}
	req := &Request{Principal: rg.principal, ConversationID: rg.convID}
	for _, t := range rg.order {
		d, err := rg.decide(ctx, req, t, PhaseDefinition, nil)
		if err != nil {
			return nil, err
		}
		if d.Allowed {
			out = append(out, t)
		}
	}
	g := rg.g
	g.mu.Lock()
	if g.wrapped == nil || len(g.wrapped) > maxWrapped {
		g.wrapped = make(map[*toolgate.Tool]*toolgate.Tool, len(out))
	}
	for i, t := range out {
		if t == rg.search {
			continue
		}
		w, ok := g.wrapped[t]
		if !ok {
			w = g.wrap(t)
			g.wrapped[t] = w
		}
		out[i] = w
		exposed[t.Name()] = w
	}
	g.mu.Unlock()
	rg.mu.Lock()
	rg.exposed = exposed
	rg.mu.Unlock()
	return out, nil
}

// wrap returns t wrapped with the per-call recheck. The wrapper decides for
// the principal and conversation of the call it runs, so one wrapper serves
// every request and is made once per tool.
func (g *Guard) wrap(t *toolgate.Tool) *toolgate.Tool {
	return t.Wrap(func(next toolgate.ToolFunc) toolgate.ToolFunc {
		return func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
			call := req.Call
			if !known(req.Principal) {
				g.emit(Event{Phase: PhaseExecution, Tool: t.Name(), Code: CodeAuthenticationRequired, ConversationID: req.ConversationID})
				return "", &DenialError{Code: CodeAuthenticationRequired, Tool: t.Name(), Reason: "the call has no principal"}
			}
			rg := &requestGuard{g: g, principal: req.Principal, convID: req.ConversationID}
			d, err := rg.decide(ctx, nil, t, PhaseExecution, &call)
			if err != nil {
				return "", fmt.Errorf("%w: %w", toolgate.ErrAbortTurn, err)
			}
			if !d.Allowed {
				return "", &DenialError{Code: CodeExecutionDenied, Phase: PhaseExecution, Tool: t.Name(), Reason: d.Reason}
			}
			return next(ctx, req)
		}
	})
}

// CheckPrompt implements [toolgate.Authorizer]: the prompt about to
// reach the model may carry only the offered tools, the same instances.
func (rg *requestGuard) CheckPrompt(_ context.Context, offered []*toolgate.Tool, p *toolgate.Prompt) error {
	if p == nil {
		return nil
	}
	for _, t := range p.Tools {
		if t == nil {
			return rg.refuse(CodeCallbackAdded, "", "a nil tool reached the model")
		}
		if containsTool(offered, t) {
			continue
		}
		name := t.Name()
		switch {
		case rg.search != nil && name == rg.search.Name():
			return rg.refuse(CodeToolSearchChanged, name, "the tool-search tool was replaced")
		case hasName(offered, name):
			return rg.refuse(CodeCallbackReplaced, name, "a different tool with an exposed name reached the model")
		default:
			return rg.refuse(CodeCallbackAdded, name, "a tool outside the request's tool set reached the model")
		}
	}
	return nil
}

func (rg *requestGuard) refuse(code Code, tool, reason string) error {
	rg.g.emit(Event{Code: code, Tool: tool, Reason: reason, PrincipalID: rg.principalID(), ConversationID: rg.convID})
	return &DenialError{Code: code, Tool: tool, Reason: reason}
}

func containsTool(ts []*toolgate.Tool, t *toolgate.Tool) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func hasName(ts []*toolgate.Tool, name string) bool {
	for _, x := range ts {
		if x != nil && x.Name() == name {
			return true
		}
	}
	return false
}

// CheckReply implements [toolgate.Authorizer]: every call must name
// an exposed tool that the prompt p carries (with tool search, the model is
// shown only some of the exposed tools), and every call is authorized in
// the execution phase before any runs. One refusal refuses the whole reply.
func (rg *requestGuard) CheckReply(ctx context.Context, p *toolgate.Prompt, reply *toolgate.AssistantMessage) ([]toolgate.ToolResult, error) {
	if !reply.HasToolCalls() {
		return nil, nil
	}
	rg.mu.Lock()
	exposed := rg.exposed
	rg.mu.Unlock()
	calls := reply.ToolCalls
	req := &Request{Principal: rg.principal, ConversationID: rg.convID}
	refused := -1
	var denial *DenialError
	for i := range calls {
		call := &calls[i]
		if rg.search != nil && exposed[call.Name] == rg.search {
			continue
		}
		if _, ok := exposed[call.Name]; !ok || (p != nil && p.Tool(call.Name) == nil) {
			rg.g.emit(Event{Phase: PhaseExecution, Tool: call.Name, Code: CodeToolNotExposed, PrincipalID: rg.principalID(), ConversationID: rg.convID})
			refused, denial = i, &DenialError{Code: CodeToolNotExposed, Phase: PhaseExecution, Tool: call.Name, Reason: "the model called a tool it was not shown"}
			break
		}
		d, err := rg.decide(ctx, req, rg.snapshot[call.Name], PhaseExecution, call)
		if err != nil {
			return nil, err
		}
		if !d.Allowed {
			refused, denial = i, &DenialError{Code: CodeExecutionDenied, Phase: PhaseExecution, Tool: call.Name, Reason: d.Reason}
			break
		}
	}
	if denial == nil {
		return nil, nil
	}
	if !rg.g.refuse {
		return nil, denial
	}
	results := make([]toolgate.ToolResult, len(calls))
	for i, c := range calls {
		msg := refusedSibling
		if i == refused {
			msg = rg.g.refusal
		}
		results[i] = toolgate.ToolResult{CallID: c.ID, Name: c.Name, Content: msg, Status: toolgate.ResultRefused}
	}
	return results, nil
}
