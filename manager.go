package toolgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/toolgate/toolgate/internal/logcap"
)

// manager runs the tool calls of model replies. It asks its confirmation
// policy about every call of a reply before any call runs, pauses the whole
// reply when one needs a person's decision, and resumes a paused reply with
// decisions. A manager holds no state between calls and is safe for
// concurrent use.
type manager struct {
	// fixed at creation
	policy      confirmationPolicy
	argPolicy   confirmationPolicy // managerOptions.Policy alone; nil when none
	confirm     []string
	limits      callLimits
	concurrency int
	onError     errorHandler
	logger      *slog.Logger
	maxFile     int // the limit of a file a tool attaches; negative: none
}

// managerOptions configure a [manager]. A nil *managerOptions means all
// defaults. Configuration can only add calls that need confirmation; the one
// way to stop honouring the metadata flag is DisableMetadataFlag.
type managerOptions struct {
	// Policy is asked in addition to the metadata flag and ConfirmTools: a
	// call needs confirmation when any of them says so. nil: none added.
	Policy confirmationPolicy
	// ConfirmTools names tools whose calls always need confirmation,
	// whatever their metadata says (for tools you cannot annotate, such as
	// MCP tools). Use the names the model sees. See
	// [manager.UnmatchedConfirmTools].
	ConfirmTools []string
	// DisableMetadataFlag stops honouring [ToolMetadata.RequiresConfirmation].
	// Only for tests and batch jobs where nobody can decide; a warning is
	// logged when a manager is built with it. ConfirmTools and Policy still
	// apply. false: the flag is honoured.
	DisableMetadataFlag bool
	// Limits caps the calls of a turn. Zero: no limits.
	Limits callLimits
	// Concurrency is how many allowed calls of one reply may run at once.
	// Results are in call order either way. 0 or 1: one at a time.
	Concurrency int
	// ErrorHandler turns a failed call into the result the model reads, or
	// aborts the run. nil: [defaultErrorHandler].
	ErrorHandler errorHandler
	// Logger receives warnings. nil: [slog.Default].
	Logger *slog.Logger
}

// callLimits caps how many calls of one turn may run. A turn is everything
// since the last user message. Only calls that were allowed to run count;
// denied and skipped calls do not. Zero values mean no limit.
type callLimits struct {
	// MaxCalls caps all calls of a turn.
	MaxCalls int
	// MaxCallsPerTool caps the calls of one tool in a turn.
	MaxCallsPerTool map[string]int
}

// errorHandler decides what a failed call answers the model with. err wraps
// [ErrUnknownTool], [ErrInvalidArguments], [ErrToolPanicked] or is the
// tool's own error. Returning a non-nil abort error ends the run with it;
// otherwise content becomes the call's error result.
type errorHandler func(ctx context.Context, call ToolCall, err error) (content string, abort error)

// defaultErrorHandler uses the error's text as the result and never aborts.
func defaultErrorHandler(_ context.Context, _ ToolCall, err error) (string, error) {
	return err.Error(), nil
}

// newManager returns a manager configured by opts (nil: defaults).
func newManager(opts *managerOptions) *manager {
	if opts == nil {
		opts = &managerOptions{}
	}
	m := &manager{
		confirm:     slices.Clone(opts.ConfirmTools),
		limits:      callLimits{MaxCalls: opts.Limits.MaxCalls},
		concurrency: max(opts.Concurrency, 1),
		onError:     opts.ErrorHandler,
		logger:      opts.Logger,
		maxFile:     defaultMaxFileSize,
	}
	if len(opts.Limits.MaxCallsPerTool) > 0 {
		m.limits.MaxCallsPerTool = make(map[string]int, len(opts.Limits.MaxCallsPerTool))
		for k, v := range opts.Limits.MaxCallsPerTool {
			m.limits.MaxCallsPerTool[k] = v
		}
	}
	if m.onError == nil {
		m.onError = defaultErrorHandler
	}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	var ps []confirmationPolicy
	if opts.DisableMetadataFlag {
		m.logger.Warn("toolgate: the requires-confirmation flag of tool metadata is disabled; flagged tools run without a person's decision")
	} else {
		ps = append(ps, fromMetadata())
	}
	if len(m.confirm) > 0 {
		ps = append(ps, forTools(m.confirm...))
	}
	if opts.Policy != nil {
		m.argPolicy = opts.Policy
		ps = append(ps, opts.Policy)
	}
	if len(ps) == 1 {
		m.policy = ps[0]
	} else {
		m.policy = or(ps...)
	}
	return m
}

// flagged appends to awaiting the keys of calls[from:] that the policy
// asks a decision for. A policy that panics asks for one: the call waits
// for a person instead of running unjudged, and the calls after it are
// asked in turn. One deferred recovery serves the whole reply.
func (m *manager) flagged(p *Prompt, calls []ToolCall, keys, awaiting []string, from int) (out []string) {
	i := from
	defer func() {
		if v := recover(); v != nil {
			panicked(m.logger, SeamPolicy, v)
			out = m.flagged(p, calls, keys, append(awaiting, keys[i]), i+1)
		}
	}()
	for ; i < len(calls); i++ {
		var meta ToolMetadata
		if t := p.Tool(calls[i].Name); t != nil {
			meta = t.meta
		}
		if m.policy(calls[i], meta) {
			awaiting = append(awaiting, keys[i])
		}
	}
	return awaiting
}

// UnmatchedConfirmTools returns the names of [managerOptions.ConfirmTools]
// that match none of tools: a misspelt name protects nothing, so callers
// should report them. The [Client] logs them when it is built.
func (m *manager) UnmatchedConfirmTools(tools []*Tool) []string {
	var out []string
	for _, name := range m.confirm {
		if !slices.ContainsFunc(tools, func(t *Tool) bool { return t != nil && t.def.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}

// NeedsConfirmation reports whether the manager's policy asks for a
// decision on call, judged with the metadata of the prompt's tool of that
// name (zero metadata when there is none). A policy that panics asks for
// one (the panic is logged).
func (m *manager) NeedsConfirmation(p *Prompt, call ToolCall) bool {
	needs, err := m.needs(p, call)
	return needs || err != nil
}

// runParams are the inputs of [manager.Run].
type runParams struct {
	// Prompt is the prompt the model answered; its tools are the only tools
	// calls run with.
	Prompt *Prompt
	// Reply is the model's reply; it must hold at least one tool call.
	Reply *AssistantMessage
	// ConversationID and Principal are passed to tools in [ToolRequest].
	// A principal with an empty ID is none: tools get nil.
	ConversationID string
	Principal      *Principal
}

// resumeParams are the inputs of [manager.Resume]: a paused reply, the
// prompt it answered, and one decision per call.
type resumeParams struct {
	// Prompt is the prompt the model answered. It may end with Reply.
	Prompt *Prompt
	// Reply is the paused reply. Read it from storage the end user cannot
	// change, never from a client request.
	Reply *AssistantMessage
	// Decisions holds exactly one decision per call of Reply.
	Decisions []Decision
	// Awaiting are the keys of the calls that awaited a decision, as the
	// pause gave them ([pauseError.Awaiting], [PauseRecord.Awaiting]).
	// Every other call runs as the model wrote it: its decision must be a
	// plain [Allow] ([ProblemNotAwaited]). nil: the manager asks its policy
	// about the reply's calls, as [manager.Run] did.
	Awaiting []string
	// MayDecide, when not nil, reports whether whoever made Decisions may
	// decide call. It is asked before anything runs about every call that
	// awaited a decision, and about the edited call of an allow with
	// arguments when the policy says the edited call needs a decision;
	// false, or a panic, refuses the decisions ([ProblemNotDecider]). It
	// may be asked twice about an edited call (about the call, then about
	// the edit) and must answer the same way each time. nil: the caller
	// checked who decided (the manager does not know deciders).
	MayDecide func(call ToolCall) bool
	// ConversationID and Principal are passed to tools in [ToolRequest].
	// A principal with an empty ID is none: tools get nil.
	ConversationID string
	Principal      *Principal
}

// runResult is the outcome of running a reply.
type runResult struct {
	// History is the prompt's messages, the reply (once) and Message.
	History []Message
	// Message holds one result per call of the reply, in call order, each
	// with the call's original id and name.
	Message *ToolMessage
	// ReturnDirect is true when every call ran (none denied) and every
	// called tool returns directly: the results are the answer.
	ReturnDirect bool
}

// Generations turns the results of a return-direct run into generations for
// the caller, one per result.
func (r *runResult) Generations() []Generation {
	if r == nil || r.Message == nil {
		return nil
	}
	gs := make([]Generation, len(r.Message.Results))
	for i, res := range r.Message.Results {
		gs[i] = Generation{Message: &AssistantMessage{Text: res.Content}, FinishReason: FinishReturnDirect}
	}
	return gs
}

// The manager's own errors; the client turns them into a paused or ended
// turn.
var (
	// errNoToolCalls is returned when a reply with no tool calls is given to
	// [manager.Run].
	errNoToolCalls = errors.New("toolgate: the reply has no tool calls")
	// errPaused is matched (with [errors.Is]) by [*pauseError].
	errPaused = errors.New("toolgate: paused for confirmation")
)

// pauseError is returned by [manager.Run] when at least one call of the
// reply needs a person's decision. Nothing of the reply ran and no limit
// was counted. It matches [errPaused].
type pauseError struct {
	// Reply is the paused reply, unchanged.
	Reply *AssistantMessage
	// Keys are the keys of all calls of the reply, in call order.
	Keys []string
	// Awaiting are the keys of the calls that need a decision, in call
	// order. Decisions must still cover every call.
	Awaiting []string
	// MisleadingIDs are the keys of the calls whose id is the key of
	// another call (see [AssistantMessage.MisleadingCallIDs]), in call order; nil for most
	// replies.
	MisleadingIDs []string
}

func (e *pauseError) Error() string {
	return fmt.Sprintf("toolgate: paused for confirmation: %d of %d calls await a decision", len(e.Awaiting), len(e.Keys))
}

// Is reports whether target is [errPaused].
func (e *pauseError) Is(target error) bool { return target == errPaused }

// limitError reports that running a reply would exceed a tool call limit.
// Nothing of the reply ran. It matches [ErrLimitExceeded].
type limitError struct {
	// Tool is the tool whose limit was hit, or "" for the total limit.
	Tool string
	// Limit is the limit, Count the calls the turn would have made.
	Limit, Count int
}

func (e *limitError) Error() string {
	if e.Tool == "" {
		return fmt.Sprintf("toolgate: tool call limit exceeded: %d calls in this turn, limit %d", e.Count, e.Limit)
	}
	return fmt.Sprintf("toolgate: tool call limit exceeded: %d calls of %q in this turn, limit %d", e.Count, e.Tool, e.Limit)
}

// Is reports whether target is [ErrLimitExceeded].
func (e *limitError) Is(target error) bool { return target == ErrLimitExceeded }

// Run runs the calls of a reply. If the policy asks for confirmation of
// any call, nothing runs and Run returns a [*pauseError]. If the calls would
// exceed a limit, nothing runs and Run returns a [*limitError]. Otherwise
// the calls run (in call order, or concurrently when configured) and the
// result holds one result per call.
//
// A call of a tool the prompt does not carry, invalid arguments and tool
// errors become error results through the error handler; only an abort from
// the handler or ctx's cancellation make Run return an error.
func (m *manager) Run(ctx context.Context, p *runParams) (*runResult, error) {
	if p == nil || !p.Reply.HasToolCalls() {
		return nil, errNoToolCalls
	}
	reply := p.Reply
	n := len(reply.ToolCalls)
	// One allocation holds the keys and, after them, the awaiting keys.
	buf := appendToolCallKeys(make([]string, 0, 2*n), reply)
	keys, awaiting := buf[:n:n], buf[n:]
	awaiting = m.flagged(p.Prompt, reply.ToolCalls, keys, awaiting, 0)
	if len(awaiting) > 0 {
		return nil, &pauseError{Reply: reply, Keys: keys, Awaiting: awaiting, MisleadingIDs: reply.MisleadingCallIDs()}
	}
	pl := plan{prompt: p.Prompt, reply: reply, keys: keys, convID: p.ConversationID, principal: p.Principal}
	if err := m.checkLimits(&pl); err != nil {
		return nil, err
	}
	return m.execute(ctx, &pl)
}

// Resume runs a paused reply with decisions. All rules (see
// [Client.CheckDecisions]) and the limits are checked before anything runs; a
// broken rule gives a [*DecisionError], an exceeded limit a [*limitError],
// and nothing runs. The rules of who decides come with them: a call that
// awaited no decision (see [resumeParams.Awaiting]) runs as the model wrote
// it, so its decision must be a plain allow ([ProblemNotAwaited]), and a
// call that awaited one must be one the decider may decide
// ([resumeParams.MayDecide], [ProblemNotDecider]). A call allowed with
// edited arguments ([AllowWithArguments]) is judged again as the model's
// call would be: by its tool's schema, and by the policy, whose answer on
// the edited call decides whether the decider must also be allowed to
// decide that call; a policy that fails on the edit (panics) refuses the
// decisions with [ProblemInvalidArguments]. Then, in call order, allowed calls run (edited
// ones with their edited arguments, which their tools, guards included, see
// in [ToolRequest.Call]) and denied calls answer with their message, marked
// [ResultDenied]. The result of an edited call records the edit (see
// [ToolResult.EditedArguments]).
//
// Resume does not prevent replays: running the same decisions twice runs
// the tools twice. The [Client] and its stores consume a pause once.
func (m *manager) Resume(ctx context.Context, p *resumeParams) (*runResult, error) {
	if p == nil {
		return nil, &DecisionError{Problem: ProblemNoToolCalls}
	}
	pl, err := m.resumePlan(p)
	if err != nil {
		return nil, err
	}
	return m.execute(ctx, pl)
}

// CheckResume reports whether [manager.Resume] would accept p, without
// running anything: the rules of [Client.CheckDecisions], of who decides, of
// edits, and the limits.
func (m *manager) CheckResume(p *resumeParams) error {
	if p == nil {
		return &DecisionError{Problem: ProblemNoToolCalls}
	}
	_, err := m.resumePlan(p)
	return err
}

// checkLimits counts the calls that ran earlier in the turn (tool results
// in the prompt since its last user message) plus the calls of the plan's
// reply that would run (stage 6 of a [plan]).
func (m *manager) checkLimits(pl *plan) error {
	p, reply := pl.prompt, pl.reply
	if m.limits.MaxCalls <= 0 && len(m.limits.MaxCallsPerTool) == 0 {
		return nil
	}
	var turn []Message
	if p != nil {
		turn = p.Messages[lastUserIndex(p.Messages)+1:]
	}
	count := func(name string) int {
		n := 0
		for _, msg := range turn {
			if tm, ok := msg.(*ToolMessage); ok {
				for _, r := range tm.Results {
					if r.Status.Ran() && (name == "" || r.Name == name) {
						n++
					}
				}
			}
		}
		for i, c := range reply.ToolCalls {
			if pl.allowed(i) && (name == "" || c.Name == name) {
				n++
			}
		}
		return n
	}
	if m.limits.MaxCalls > 0 {
		if n := count(""); n > m.limits.MaxCalls {
			return &limitError{Limit: m.limits.MaxCalls, Count: n}
		}
	}
	for _, c := range reply.ToolCalls {
		limit, ok := m.limits.MaxCallsPerTool[c.Name]
		if !ok || limit <= 0 {
			continue
		}
		if n := count(c.Name); n > limit {
			return &limitError{Tool: c.Name, Limit: limit, Count: n}
		}
	}
	return nil
}

func lastUserIndex(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if _, ok := msgs[i].(*UserMessage); ok {
			return i
		}
	}
	return -1
}

// execute runs the calls of a checked plan: its rules are not judged again.
func (m *manager) execute(ctx context.Context, pl *plan) (*runResult, error) {
	p, reply, keys, decisions, which := pl.prompt, pl.reply, pl.keys, pl.decisions, pl.which
	principal := known(pl.principal)
	calls := runCalls(reply.ToolCalls, decisions, which)
	// The result, its tool message and the results share one allocation,
	// and the requests of all calls another.
	out := &struct {
		res runResult
		msg ToolMessage
	}{}
	results := make([]ToolResult, len(calls))
	b := batch{m: m, p: p, calls: calls, keys: keys, results: results, reqs: make([]ToolRequest, len(calls)), convID: pl.convID, principal: principal, start: pl.start}
	returnDirect := true
	allowed := 0
	for i, c := range calls {
		results[i] = ToolResult{CallID: c.ID, Name: c.Name}
		if decisions != nil {
			if d := &decisions[which[i]]; d.Verdict != VerdictAllow {
				results[i].Content = d.Message
				results[i].Status = ResultDenied
				returnDirect = false
				continue
			}
		}
		if t := p.Tool(c.Name); t == nil || !t.meta.ReturnDirect {
			returnDirect = false
		}
		results[i].Status = ResultSkipped // until it runs
		allowed++
	}
	var err error
	if m.concurrency <= 1 || allowed <= 1 {
		for i := range calls {
			if results[i].Status != ResultSkipped {
				continue
			}
			if err = b.run(ctx, i); err != nil {
				break
			}
		}
	} else {
		todo := make([]int, 0, allowed)
		for i := range calls {
			if results[i].Status == ResultSkipped {
				todo = append(todo, i)
			}
		}
		bc := b // only the concurrent path lets the batch escape
		if pl.together != nil && pl.start != nil {
			wave := make([]string, min(m.concurrency, len(todo)))
			for j := range wave {
				wave[j] = keys[todo[j]]
			}
			bc.ended = pl.together(wave)
		}
		err = runBounded(ctx, m.concurrency, todo, bc.run)
	}
	if err != nil {
		return nil, err
	}
	if len(decisions) > 0 && &calls[0] != &reply.ToolCalls[0] {
		for i := range results {
			if args := edited(decisions, which, i); args != "" {
				recordEdit(&results[i], args)
			}
		}
	}
	out.msg.Results = results
	out.res = runResult{History: historyWith(p, reply, &out.msg), Message: &out.msg, ReturnDirect: returnDirect}
	return &out.res, nil
}

// batch is the state of one execution that each call's run needs.
type batch struct {
	m         *manager
	p         *Prompt
	calls     []ToolCall
	keys      []string
	results   []ToolResult
	reqs      []ToolRequest
	convID    string
	principal *Principal
	start     func(context.Context, *ToolRequest) error // see [plan.start]
	ended     func(context.Context, string)             // see [plan.together]; nil: not told
}

// run runs the allowed call i and stores its result.
func (b *batch) run(ctx context.Context, i int) error {
	if b.ended != nil {
		defer b.ended(ctx, b.keys[i])
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	content, status, err := b.m.callOne(ctx, b.p, b.calls[i], b.keys[i], b.convID, b.principal, &b.reqs[i], b.start)
	if err != nil {
		return err
	}
	b.results[i].Content, b.results[i].Status = content, status
	if status == ResultOK {
		b.results[i].Parts = b.reqs[i].files
	}
	return nil
}

// callOne runs one allowed call and maps failures through the handler.
func (m *manager) callOne(ctx context.Context, p *Prompt, call ToolCall, key, convID string, principal *Principal, req *ToolRequest, start func(context.Context, *ToolRequest) error) (string, ResultStatus, error) {
	t := p.Tool(call.Name)
	var content string
	var err error
	if t == nil {
		err = fmt.Errorf("%w: no tool named %q is available", ErrUnknownTool, call.Name)
	} else {
		*req = ToolRequest{Call: call, Key: key, ConversationID: convID, Principal: principal, maxFile: m.maxFile}
		content, err = m.safeCall(ctx, t, req, start)
	}
	if err == nil {
		return content, ResultOK, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return "", 0, ctxErr
	}
	if errors.Is(err, ErrAbortTurn) {
		return "", 0, err
	}
	var tp *toolPanic
	if errors.As(err, &tp) {
		m.logger.Error("toolgate: tool panicked", "tool", logcap.String(tp.tool), "panic", describePanic(tp.value), "stack", string(tp.stack))
	}
	content, abort := m.handle(ctx, call, err)
	if abort != nil {
		return "", 0, abort
	}
	return content, ResultError, nil
}

// handle runs the error handler; a handler that panics aborts the run.
func (m *manager) handle(ctx context.Context, call ToolCall, err error) (content string, abort error) {
	defer catch(m.logger, SeamErrorHandler, &abort)
	return m.onError(ctx, call, err)
}

// safeCall runs t. A panic of the tool's own function becomes an error
// wrapping [ErrToolPanicked] (a failed call, for the model to read); a
// panic of code wrapped around it (tool middleware, the guards' per-call
// checks) aborts the run with a [*PanicError].
func (m *manager) safeCall(ctx context.Context, t *Tool, req *ToolRequest, start func(context.Context, *ToolRequest) error) (content string, err error) {
	defer func() {
		if v := recover(); v != nil {
			content = ""
			if t.wrapped {
				err = panicked(m.logger, SeamToolMiddleware, v)
				return
			}
			err = &toolPanic{tool: t.def.Name, value: v, stack: debug.Stack()}
		}
	}()
	return t.call(ctx, req, start)
}

// toolPanic is the error a panic of a tool's own function becomes; the
// manager logs its value's type and stack.
type toolPanic struct {
	tool  string
	value any
	stack []byte
}

func (e *toolPanic) Error() string { return e.tool + ": " + ErrToolPanicked.Error() }
func (e *toolPanic) Unwrap() error { return ErrToolPanicked }

// runBounded runs f for every index with at most n at once. The first
// error cancels the others' context and is returned.
func runBounded(ctx context.Context, n int, todo []int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	launched := 0
	for _, i := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		launched++
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if launched < len(todo) {
		return context.Cause(ctx)
	}
	return nil
}

// historyWith returns the prompt's messages, then reply unless the prompt
// already ends with it, then msg.
func historyWith(p *Prompt, reply *AssistantMessage, msg *ToolMessage) []Message {
	var msgs []Message
	if p != nil {
		msgs = p.Messages
	}
	if n := len(msgs); n > 0 && sameReply(msgs[n-1], reply) {
		msgs = msgs[:n-1]
	}
	h := make([]Message, 0, len(msgs)+2)
	h = append(h, msgs...)
	return append(h, reply, msg)
}

func sameReply(m Message, reply *AssistantMessage) bool {
	a, ok := m.(*AssistantMessage)
	if !ok || a == nil {
		return false
	}
	return a == reply || a.Text == reply.Text && slices.Equal(a.ToolCalls, reply.ToolCalls)
}
