package toolgate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/logcap"
)

// Client runs turns of a conversation: it sends the conversation to the
// model, runs the tool calls of its replies through a [Manager], and repeats
// until the model answers without tool calls, a tool returns directly, a
// call needs a person's decision (the turn pauses), a limit is reached, or
// the context is canceled.
//
// A paused turn is kept in the client's [ConversationStore] and resumed with
// [Client.Resume], in this process or another one, from the stored reply:
// the caller passes only the conversation id and the decisions.
//
// A Client is immutable and safe for concurrent use. Turns on the same
// conversation are serialised by the store: a second concurrent turn fails
// with [ErrConflict].
type Client struct {
	// fixed at creation
	model     Model
	tools     []*Tool // as given
	wrapped   []*Tool // tools wrapped by toolMW, offered when no authorizer
	toolMW    []func(ToolFunc) ToolFunc
	authz     Authorizer
	protector Protector
	search    ToolSearch
	names     map[string]bool // the tools' names
	manager   *Manager
	store     ConversationStore
	memory    MemoryPlacement
	system    string
	maxRounds int
	options   *ModelOptions
	modelMW   []func(ModelFunc) ModelFunc
	logger    *slog.Logger
}

// MemoryPlacement says which messages of a turn the client stores.
type MemoryPlacement int

const (
	// MemoryOutsideLoop stores the user message and the turn's final
	// response: the paused reply, the model's last answer, or (for turns
	// ended by return-direct or a limit) the last reply with its results.
	// Earlier rounds of a turn are not stored, so a resumed turn does not
	// show the model the tool results it based the paused call on. It is
	// the default: conversations stay short.
	MemoryOutsideLoop MemoryPlacement = iota
	// MemoryInsideLoop stores every round as it completes: the user
	// message, each reply and each tool message. Choose it when turns run
	// tools before a gated one, so that a resumed turn carries the whole
	// turn.
	MemoryInsideLoop
)

// ModelFunc is one model call in the form model middleware wraps:
// func(next ModelFunc) ModelFunc. In streaming turns the text has already
// reached the caller when the response is returned.
type ModelFunc func(ctx context.Context, p *Prompt) (*Response, error)

// ClientOptions configure a [Client]. A nil *ClientOptions means all
// defaults. The options are copied by [NewClient].
type ClientOptions struct {
	// Manager runs tool calls. nil: NewManager(nil), which asks for
	// confirmation of the tools whose metadata requires it.
	Manager *Manager
	// SystemPrompt is sent before the conversation in every model call. It
	// is not stored. "": none.
	SystemPrompt string
	// Store keeps conversations and pauses. nil: a new [MemoryStore]
	// private to the client.
	Store ConversationStore
	// Memory says which messages of a turn are stored. Zero:
	// [MemoryOutsideLoop].
	Memory MemoryPlacement
	// MaxRounds caps the model calls of one turn. 0: 16.
	MaxRounds int
	// ModelOptions are sent with every prompt. nil: the model's defaults.
	ModelOptions *ModelOptions
	// ModelMiddleware wraps every model call; the first is outermost.
	// Middleware sees the prompt and the complete response of each round.
	// The prompt is the conversation as the client holds it: a Protector
	// tokenizes it after every middleware, right before the model, so that
	// what a middleware adds is protected too.
	ModelMiddleware []func(next ModelFunc) ModelFunc
	// ToolMiddleware wraps every tool's function; the first is outermost.
	// It runs after the manager's checks (confirmation, decisions, limits)
	// and after argument normalisation, around the tool's own validation.
	ToolMiddleware []func(next ToolFunc) ToolFunc
	// Authorizer guards every request: which tools the model sees and
	// which calls may run (see package authz). nil: no authorization, every
	// tool is offered and every call may run.
	Authorizer Authorizer
	// Protector keeps personal data from the model: it sees tokens, each
	// tool gets the originals it is granted, and the caller sees what the
	// principal may see (see package privacy). nil: no protection.
	Protector Protector
	// ToolSearch lets the model find tools instead of seeing them all
	// (see package toolsearch): each model call is offered the search tool
	// and the tools the model found so far, chosen among the tools the
	// authorizer (if any) offers. nil: no tool search, every tool the
	// authorizer allows is offered.
	ToolSearch ToolSearch
	// Logger receives warnings. nil: [slog.Default].
	Logger *slog.Logger
}

// DefaultMaxRounds is the round limit when [ClientOptions.MaxRounds] is 0.
const DefaultMaxRounds = 16

// NewClient returns a client for model with tools. It panics when model is
// nil, a tool is nil, or two tools share a name: these are programming
// errors. Names in the manager's ConfirmTools that match no tool are logged
// as warnings.
func NewClient(model Model, tools []*Tool, opts *ClientOptions) *Client {
	if model == nil {
		panic("toolgate: NewClient: nil model")
	}
	if opts == nil {
		opts = &ClientOptions{}
	}
	c := &Client{
		model:     model,
		manager:   opts.Manager,
		store:     opts.Store,
		memory:    opts.Memory,
		system:    opts.SystemPrompt,
		maxRounds: opts.MaxRounds,
		options:   opts.ModelOptions,
		modelMW:   slices.Clone(opts.ModelMiddleware),
		toolMW:    slices.Clone(opts.ToolMiddleware),
		authz:     opts.Authorizer,
		protector: opts.Protector,
		search:    opts.ToolSearch,
		logger:    opts.Logger,
	}
	if c.manager == nil {
		c.manager = NewManager(nil)
	}
	if c.store == nil {
		c.store = NewMemoryStore()
	}
	if c.maxRounds <= 0 {
		c.maxRounds = DefaultMaxRounds
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	c.names = make(map[string]bool, len(tools))
	for i, t := range tools {
		if t == nil {
			panic(fmt.Sprintf("toolgate: NewClient: tool %d is nil", i))
		}
		if c.names[t.def.Name] {
			panic(fmt.Sprintf("toolgate: NewClient: two tools named %q", t.def.Name))
		}
		c.names[t.def.Name] = true
		c.tools = append(c.tools, t)
		c.wrapped = append(c.wrapped, t.Wrap(c.toolMW...))
	}
	for _, name := range c.manager.UnmatchedConfirmTools(tools) {
		c.logger.Warn("toolgate: a tool named for confirmation matches no tool of the client", "tool", logcap.String(name))
	}
	return c
}

// Tools returns the client's tools, as given to [NewClient].
func (c *Client) Tools() []*Tool { return slices.Clone(c.tools) }

// Store returns the client's conversation store.
func (c *Client) Store() ConversationStore { return c.store }

// CallParams are the inputs of [Client.Call] and [Client.Stream].
type CallParams struct {
	// ConversationID names the conversation; "" starts a new one with a
	// random id, returned in [Response.ConversationID].
	ConversationID string
	// Principal is who the turn runs for, as the caller knows them now;
	// tools and guards receive it. nil, or a principal with an empty ID:
	// nobody.
	Principal *Principal
	// Input is the user's message.
	Input string
}

// ResumeTurnParams are the inputs of [Client.Resume] and
// [Client.ResumeStream].
type ResumeTurnParams struct {
	// ConversationID names the paused conversation.
	ConversationID string
	// PauseID names the pause the decisions were made for
	// ([Response.PauseID] of the paused turn). Required: the resumption
	// fails with [ErrNoOpenPause] when it is empty or the conversation's
	// open pause is another one, so that decisions taken on one pause are
	// never applied to a later pause whose calls happen to have the same
	// keys.
	PauseID string
	// Principal is who the resumed turn runs for, as the caller knows them
	// now (not as they were when the turn paused): the guards judge the
	// allowed calls for this principal again. Tools receive it. nil, or a
	// principal with an empty ID: nobody.
	Principal *Principal
	// Decisions holds one decision per call of the paused reply. A call
	// that awaited no decision ([PauseRecord.Awaiting]) runs as the model
	// wrote it: its decision must be a plain [Allow].
	Decisions []Decision
	// MayDecide, when not nil, reports whether whoever made Decisions may
	// decide call: it is asked about every call that awaited a decision
	// (and about an edited call that the policy says needs one) before
	// anything runs or the pause is claimed, and false refuses the
	// resumption with [ProblemNotDecider] (see [ResumeParams.MayDecide]).
	// nil: the caller checked who decided.
	MayDecide func(call ToolCall) bool
	// Conversation, when not nil, is the conversation ConversationID as
	// the caller has just loaded it from the client's store; the
	// resumption uses it instead of loading it again. It is not modified.
	// A stale copy is safe: the claim checks in the store that the pause
	// is still open and unclaimed, and the resumption fails with
	// [ErrNoOpenPause] otherwise.
	Conversation *Conversation
	// Resolved, when not nil, is called with the tool message that
	// resolves the pause as soon as it is stored, before the turn goes on
	// (the model answers the results after). It is called at most once,
	// on the resuming goroutine, and must not modify the message or keep
	// the turn waiting.
	Resolved func(*ToolMessage)
}

// Call runs one turn for the user's input and returns its response. When
// the turn paused, the response is the paused reply with
// [Response.Paused] true and the awaiting keys in [Response.Awaiting]; the
// pause is stored and can be resumed with [Client.Resume].
//
// Errors are infrastructure failures (model, store, canceled context) and
// [ErrPauseOpen] when the conversation has an unresolved pause: resolve it
// first, for example with [Client.DenyOpenPause] or
// [Client.ExpireOpenPause].
func (c *Client) Call(ctx context.Context, p *CallParams) (*Response, error) {
	t, err := c.startTurn(ctx, p)
	if err != nil {
		return nil, err
	}
	return t.finish(ctx, t.loop)
}

// Stream runs one turn like [Client.Call] and yields it as it happens: the
// text deltas of every round, a chunk with the results of each round's tool
// calls, and a last chunk with the finish reason and the usage of the turn.
// The last chunk of a paused turn also carries the paused reply's tool calls
// and the awaiting keys. No tool runs before its reply is complete. Breaking
// out of the loop cancels the turn; nothing of an unfinished round is
// stored.
func (c *Client) Stream(ctx context.Context, p *CallParams) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		t, err := c.startTurn(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		c.streamTurn(ctx, t, yield, t.loop)
	}
}

// Resume continues a paused turn with decisions, one per call of the
// paused reply. The reply and the prompt it answered are read from the
// store (or taken from [ResumeTurnParams.Conversation]). The decisions are
// checked ([CheckDecisions] and the limits) before anything runs; then the
// pause is claimed, with the decisions, so that it is consumed once: a
// second resumption, concurrent or later, fails with [ErrNoOpenPause] and
// runs nothing. The claim is written together with the start records of
// the first calls to run (or, when no call runs, before the results are
// stored). Each allowed call is recorded in the store as started before it
// runs, and gets its
// [ToolRequest.IdempotencyKey]; a resumption that dies before storing the
// results is finished by [Client.RecoverPause], which never runs a started
// call again. A resumption whose claim was taken over by a recovery starts
// no more calls and fails with [ErrClaimLost]. The turn then continues and
// may pause again.
func (c *Client) Resume(ctx context.Context, p *ResumeTurnParams) (*Response, error) {
	t, err := c.resumeTurn(ctx, p)
	if err != nil {
		return nil, err
	}
	return t.finish(ctx, t.resume)
}

// ResumeStream is [Client.Resume] yielding the continued turn like
// [Client.Stream].
func (c *Client) ResumeStream(ctx context.Context, p *ResumeTurnParams) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		t, err := c.resumeTurn(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		c.streamTurn(ctx, t, yield, t.resume)
	}
}

// ClosePauseParams are the inputs of [Client.DenyOpenPause] and
// [Client.ExpireOpenPause].
type ClosePauseParams struct {
	// ConversationID names the conversation.
	ConversationID string
	// PauseID names the pause to close; the call fails with
	// [ErrNoOpenPause] when the conversation's open pause is another one.
	// "": the open pause, whichever it is.
	PauseID string
	// Message is the result every call answers the model with. "":
	// [DefaultDenyMessage] for a denial, [ExpiredMessage] for an expiry.
	Message string
}

// DenyOpenPause resolves the conversation's open pause by denying every
// call with p.Message, without calling the model, so that new input is
// accepted and the stored conversation stays valid for providers (every
// tool call has a result). It fails with [ErrNoOpenPause] when there is no
// such open pause.
func (c *Client) DenyOpenPause(ctx context.Context, p *ClosePauseParams) error {
	if p == nil {
		p = &ClosePauseParams{}
	}
	message := cmp.Or(p.Message, DefaultDenyMessage)
	deny := func(reply *AssistantMessage) []Decision { return DenyAll(reply, message) }
	// Not a person's decision: the pause is abandoned and nothing of the
	// reply runs, including the calls that awaited no decision.
	return c.resolveOpenPause(ctx, p.ConversationID, p.PauseID, deny, func(_ *Prompt, reply *AssistantMessage) (*ToolMessage, error) {
		return answerAll(reply, ResultDenied, message), nil
	})
}

// ExpireOpenPause resolves the conversation's open pause because nobody
// decided it in time: every call answers p.Message ([ExpiredMessage] when
// "") with status [ResultExpired], nothing runs and the model is not
// called, so that new input is accepted and the stored conversation stays
// valid for providers. The pause is claimed like a resumption claims it,
// so a pause is either expired or resumed, never both. It fails with
// [ErrNoOpenPause] when the conversation has no such open pause (none,
// another one, or one already claimed by a resumption).
func (c *Client) ExpireOpenPause(ctx context.Context, p *ClosePauseParams) error {
	if p == nil {
		p = &ClosePauseParams{}
	}
	message := cmp.Or(p.Message, ExpiredMessage)
	return c.resolveOpenPause(ctx, p.ConversationID, p.PauseID, nil, func(_ *Prompt, reply *AssistantMessage) (*ToolMessage, error) {
		return answerAll(reply, ResultExpired, message), nil
	})
}

// resolveOpenPause claims the conversation's open pause (pauseID "": the
// open one, whichever it is) with decisions (nil: none, for an expiry) and
// stores the tool message answer returns for its reply as the pause's
// resolution, without calling the model. answer gets the prompt the reply
// answered.
func (c *Client) resolveOpenPause(ctx context.Context, conversationID, pauseID string, decisions func(*AssistantMessage) []Decision, answer func(*Prompt, *AssistantMessage) (*ToolMessage, error)) error {
	conv, err := c.store.Load(ctx, conversationID)
	if err != nil {
		return err
	}
	reply, err := pausedReply(conv)
	if err != nil {
		return err
	}
	if pauseID != "" && conv.Pause.ID != pauseID {
		return fmt.Errorf("%w: conversation %q, pause %q: the open pause is %q", ErrNoOpenPause, conversationID, pauseID, conv.Pause.ID)
	}
	t := &turn{c: c, convID: conversationID, stored: len(conv.Messages)}
	prompt := c.prompt(conv.Messages[:conv.Pause.Index], nil)
	claim := &Claim{Token: newClaimToken(), At: time.Now()}
	if decisions != nil {
		claim.Decisions = decisions(reply)
	}
	if err := c.store.ClaimPause(ctx, conversationID, conv.Pause.ID, claim); err != nil {
		return err
	}
	msg, err := answer(prompt, reply)
	if err != nil {
		return err
	}
	return t.save(ctx, []Message{msg}, nil, conv.Pause.ID)
}

// streamTurn runs a turn with a streaming model stage and yields its
// chunks, ending with the turn's last chunk.
func (c *Client) streamTurn(ctx context.Context, t *turn, yield func(*Chunk, error) bool, run func(context.Context) (*Response, error)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.prot != nil {
		t.outStream = t.prot.OutputStream()
	}
	stopped := false
	t.emit = func(ch *Chunk) bool {
		if stopped {
			return false
		}
		// inBody stays set when the caller's loop body panics.
		t.inBody = true
		ok := yield(ch, nil)
		t.inBody = false
		if !ok {
			stopped = true
			cancel()
			return false
		}
		return true
	}
	resp, err := run(ctx)
	if err == nil && t.outStream != nil {
		var rest string
		if rest, err = t.outStream(ctx, "", true); err == nil && rest != "" {
			t.emit(&Chunk{Text: rest})
		}
	}
	if err == nil {
		err = t.end(ctx)
	} else {
		t.end(ctx)
	}
	if stopped {
		return
	}
	if err != nil {
		yield(nil, err)
		return
	}
	last := &Chunk{FinishReason: resp.FinishReason(), Awaiting: resp.Awaiting, PauseID: resp.PauseID, MisleadingIDs: resp.MisleadingIDs, ID: resp.ID, Model: resp.Model}
	u := resp.Usage
	last.Usage = &u
	if resp.Paused() {
		if last.ToolCalls, err = t.outCalls(ctx, resp.Message().ToolCalls); err != nil {
			yield(nil, err)
			return
		}
	}
	yield(last, nil)
}

// errStreamStopped ends a turn whose consumer stopped reading.
var errStreamStopped = errors.New("toolgate: stream consumer stopped")

// turn is the state of one running turn.
type turn struct {
	c         *Client
	convID    string
	principal *Principal
	stored    int       // messages in the store
	history   []Message // the conversation as the model sees it, without the system prompt
	pending   []Message // messages of the turn not yet stored
	usage     Usage
	results   []ToolResult // results of the turn's rounds
	emit      func(*Chunk) bool
	inBody    bool           // a streaming caller's loop body is running (see callModel)
	guard     TurnAuthorizer // nil without an authorizer
	prot      TurnProtector  // nil without a protector
	protTools []*Tool        // the client's tools wrapped by prot
	search    TurnToolSearch // nil without tool search
	searchT   *Tool          // the request's search tool, wrapped by prot
	outStream func(context.Context, string, bool) (string, error)
	wrapped   map[*Tool]*Tool // guard's tools wrapped by tool middleware
	// for resumption
	pause     *PauseRecord
	reply     *AssistantMessage
	decisions []Decision
	mayDecide func(ToolCall) bool
	claim     string // the token of the claim held on pause; "" until claimed
	resolved  func(*ToolMessage)
	// for recovery (see recover.go)
	recovering  bool
	interrupted []string     // keys recorded as started by the claim taken over
	resolution  []ToolResult // the results stored for the pause
}

func (c *Client) startTurn(ctx context.Context, p *CallParams) (*turn, error) {
	if p == nil {
		p = &CallParams{}
	}
	id := p.ConversationID
	if id == "" {
		id = randomID("conv_")
	}
	conv, err := c.store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	if conv.Pause != nil {
		return nil, fmt.Errorf("%w: conversation %q, pause %q: resume it or deny it first", ErrPauseOpen, id, conv.Pause.ID)
	}
	user := &UserMessage{Text: p.Input}
	t := &turn{c: c, convID: id, principal: known(p.Principal), stored: len(conv.Messages)}
	if err := t.begin(ctx, false); err != nil {
		return nil, err
	}
	t.history = append(slices.Clip(conv.Messages), user)
	t.pending = []Message{user}
	return t, nil
}

// begin starts the guards of the request, if any: the privacy guard first,
// so that the authorization guard wraps the privacy guard's tools and a
// call is authorized (on tokenized arguments) before any original is
// restored into it.
func (t *turn) begin(ctx context.Context, resume bool) error {
	log := t.c.logger
	tools := t.c.tools
	if p := t.c.protector; p != nil {
		err := guarded(log, SeamProtector, func() error {
			rp, err := p.Begin(ctx, &ProtectParams{Principal: t.principal, ConversationID: t.convID, Resume: resume})
			if err != nil {
				return err
			}
			if rp == nil {
				return errors.New("toolgate: the protector returned no request protector")
			}
			tools = make([]*Tool, len(t.c.tools))
			for i, tool := range t.c.tools {
				tools[i] = rp.Tool(tool)
			}
			t.prot = safeProtector{rp: rp, logger: log}
			return nil
		})
		if err != nil {
			return err
		}
		t.protTools = tools
	}
	if s := t.c.search; s != nil {
		err := guarded(log, SeamToolSearch, func() error {
			rs, err := s.Begin(ctx, &ToolSearchParams{Principal: t.principal, ConversationID: t.convID})
			if err != nil {
				return err
			}
			if rs == nil || rs.Tool() == nil {
				return errors.New("toolgate: the tool search returned no search tool")
			}
			st := rs.Tool()
			if t.c.names[st.Name()] {
				return fmt.Errorf("toolgate: the search tool is named %q like a tool of the client", st.Name())
			}
			t.search, t.searchT = safeSearch{rs: rs, logger: log}, st
			return nil
		})
		if err != nil {
			return err
		}
		if t.prot != nil {
			err := guarded(log, SeamProtector, func() error { t.searchT = t.prot.Tool(t.searchT); return nil })
			if err != nil {
				return err
			}
		}
	}
	if t.c.authz == nil {
		return nil
	}
	return guarded(log, SeamAuthorizer, func() error {
		g, err := t.c.authz.Begin(ctx, &AuthorizeParams{Principal: t.principal, Tools: tools, ConversationID: t.convID, Resume: resume, SearchTool: t.searchT})
		if err != nil {
			return err
		}
		if g == nil {
			return errors.New("toolgate: the authorizer returned no guard")
		}
		t.guard = safeAuthorizer{ra: g, logger: log}
		return nil
	})
}

// offer returns the tools to offer the model this round: the authorizer's
// choice (each wrapped by tool middleware once per request), or all tools;
// with tool search, the search tool and the tools it chooses among them, or
// (all true, for a resumption) the search tool and all of them.
func (t *turn) offer(ctx context.Context, all bool) ([]*Tool, error) {
	var tools []*Tool
	switch {
	case t.guard != nil:
		var err error
		if tools, err = t.guard.Tools(ctx); err != nil {
			return nil, err
		}
	case t.prot != nil:
		tools = t.protTools
	case t.search == nil:
		return t.c.wrapped, nil
	default:
		tools = t.c.tools
	}
	if t.search != nil {
		var err error
		if tools, err = t.searchOffer(ctx, tools, all); err != nil {
			return nil, err
		}
	}
	if len(t.c.toolMW) == 0 {
		return tools, nil
	}
	if t.wrapped == nil {
		t.wrapped = make(map[*Tool]*Tool, len(tools))
	}
	out := make([]*Tool, len(tools))
	for i, tool := range tools {
		w, ok := t.wrapped[tool]
		if !ok {
			w = tool.Wrap(t.c.toolMW...)
			t.wrapped[tool] = w
		}
		out[i] = w
	}
	return out, nil
}

// searchOffer returns the search tool and the tools the request's tool
// search chooses among tools (all of them when all is true). Without an
// authorizer, the search tool is added; with one, it is offered only when
// the authorizer offered it.
func (t *turn) searchOffer(ctx context.Context, tools []*Tool, all bool) ([]*Tool, error) {
	offered := t.guard == nil
	rest := make([]*Tool, 0, len(tools))
	for _, tool := range tools {
		if tool == t.searchT {
			offered = true
			continue
		}
		rest = append(rest, tool)
	}
	found, err := t.search.Offer(ctx, t.history, rest)
	if err != nil {
		return nil, err
	}
	if len(found) > 0 {
		in := make(map[*Tool]bool, len(rest))
		for _, tool := range rest {
			in[tool] = true
		}
		for _, tool := range found {
			if !in[tool] {
				return nil, errors.New("toolgate: the tool search offered a tool it was not given")
			}
		}
	}
	if all {
		found = rest
	}
	out := make([]*Tool, 0, len(found)+1)
	if offered {
		out = append(out, t.searchT)
	}
	return append(out, found...), nil
}

func (c *Client) resumeTurn(ctx context.Context, p *ResumeTurnParams) (*turn, error) {
	if p == nil || p.PauseID == "" {
		return nil, fmt.Errorf("%w: resume: ResumeTurnParams.PauseID is empty; pass the Response.PauseID of the paused turn", ErrNoOpenPause)
	}
	conv := p.Conversation
	if conv == nil {
		var err error
		if conv, err = c.store.Load(ctx, p.ConversationID); err != nil {
			return nil, err
		}
	} else if conv.ID != p.ConversationID {
		return nil, fmt.Errorf("toolgate: resume: the conversation given is %q, not %q", conv.ID, p.ConversationID)
	}
	reply, err := pausedReply(conv)
	if err != nil {
		return nil, err
	}
	if conv.Pause.ID != p.PauseID {
		return nil, fmt.Errorf("%w: conversation %q, pause %q: the open pause is %q", ErrNoOpenPause, p.ConversationID, p.PauseID, conv.Pause.ID)
	}
	t := &turn{
		c: c, convID: p.ConversationID, principal: known(p.Principal), stored: len(conv.Messages),
		history: slices.Clip(conv.Messages[:conv.Pause.Index]), pause: conv.Pause, reply: reply,
		decisions: p.Decisions, resolved: p.Resolved, mayDecide: p.MayDecide,
	}
	if err := t.begin(ctx, true); err != nil {
		return nil, err
	}
	return t, nil
}

// pausedReply returns the reply of the conversation's open, unclaimed
// pause.
func pausedReply(conv *Conversation) (*AssistantMessage, error) {
	if pr := conv.Pause; pr == nil || pr.Claimed {
		return nil, fmt.Errorf("%w: conversation %q", ErrNoOpenPause, conv.ID)
	}
	return pauseReply(conv)
}

// pauseReply returns the reply of the conversation's pause, which must be
// non-nil.
func pauseReply(conv *Conversation) (*AssistantMessage, error) {
	pr := conv.Pause
	if pr.Index < 0 || pr.Index != len(conv.Messages)-1 {
		return nil, fmt.Errorf("%w: conversation %q: pause at message %d of %d", ErrCorrupt, conv.ID, pr.Index, len(conv.Messages))
	}
	reply, ok := conv.Messages[pr.Index].(*AssistantMessage)
	if !ok || !reply.HasToolCalls() {
		return nil, fmt.Errorf("%w: conversation %q: the paused message is not a reply with tool calls", ErrCorrupt, conv.ID)
	}
	return reply, nil
}

// prompt builds the prompt for the conversation messages and tools.
func (c *Client) prompt(msgs []Message, tools []*Tool) *Prompt {
	all := msgs
	if c.system != "" {
		all = make([]Message, 0, len(msgs)+1)
		all = append(all, &SystemMessage{Text: c.system})
		all = append(all, msgs...)
	}
	return &Prompt{Messages: all, Tools: tools, Options: c.options}
}

// save stores msgs (and opens or resolves a pause) and counts them.
func (t *turn) save(ctx context.Context, msgs []Message, pause *PauseRecord, resolves string) error {
	if len(msgs) == 0 {
		return nil
	}
	// Stored records outlive the turn: keep writing after a cancellation
	// that arrived once the round's work was done. (A context without a
	// Done channel is never canceled and needs no wrapper.)
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	err := t.c.store.Append(ctx, t.convID, &AppendParams{At: t.stored, Messages: msgs, Pause: pause, Resolves: resolves})
	if err != nil {
		return err
	}
	t.stored += len(msgs)
	return nil
}

// flush stores the pending messages plus more.
func (t *turn) flush(ctx context.Context, pause *PauseRecord, more ...Message) error {
	msgs := append(t.pending, more...)
	t.pending = nil
	return t.save(ctx, msgs, pause, "")
}

// resume runs the decisions on the paused reply and continues the turn.
func (t *turn) resume(ctx context.Context) (*Response, error) {
	c := t.c
	tools, err := t.offer(ctx, true)
	if err != nil {
		return nil, err
	}
	prompt, err := t.modelPrompt(ctx, t.history, tools)
	if err != nil {
		return nil, err
	}
	// The decisions are checked once, into the plan the manager executes:
	// their own rules (one per call, known keys) and who may decide what,
	// the edits, then the authorizer, then the rules that need the tools
	// and the limits.
	pl, err := newPlan(&ResumeParams{Prompt: prompt, Reply: t.reply, Decisions: t.decisions, Awaiting: t.awaiting(),
		MayDecide: t.mayDecide, ConversationID: t.convID, Principal: t.principal}, false)
	if err != nil {
		return nil, err
	}
	m := c.manager
	var res *RunResult
	if err := m.checkDeciding(pl); err != nil {
		if !t.recovering {
			return nil, err
		}
		// Decisions stored by a claim that no longer pass (recorded by an
		// older version): the recovery resolves the pause, running nothing
		// the decisions allowed.
		res = &RunResult{Message: t.unrunnable(err)}
	}
	// Edited arguments are checked (their schema, then the policy and who
	// may decide the edited call) before the authorizer judges them.
	if err := checkEdits(pl); err != nil {
		return nil, err
	}
	// A recovery does not fail on the policy's view of an edit: the pause
	// is resolved as unrunnable below, unless the authorizer refuses first.
	var editErr error
	if res == nil {
		if editErr = m.checkEditedPolicy(pl); editErr != nil && !t.recovering {
			return nil, editErr
		}
	}
	if err := t.protectReply(ctx, t.reply); err != nil {
		return nil, err
	}
	var refused *ToolMessage
	if t.guard != nil && res == nil {
		// Access may have been revoked while the pause waited: authorize the
		// calls the person allowed again, before anything is claimed.
		if refused, err = t.recheckAllowed(ctx, prompt); err != nil {
			if !t.recovering || !errors.Is(err, ErrAbortTurn) {
				return nil, err
			}
			// Refused now (access revoked since the claim, say): the
			// recovery resolves the pause without running what was allowed,
			// instead of failing again after every lease.
			res = &RunResult{Message: t.unrunnable(err)}
		}
	}
	if refused == nil && res == nil {
		err := pl.checkTools()
		if err == nil {
			err = editErr
		}
		if err == nil {
			err = m.checkLimits(pl)
		}
		if err != nil {
			if !t.recovering {
				return nil, err
			}
			// The stored decisions cannot run any more (a tool was removed,
			// a limit lowered): the recovery still resolves the pause.
			res = &RunResult{Message: t.unrunnable(err)}
		}
	}
	// A recovery holds its claim already. Otherwise, when calls may run,
	// the first of them to start claims the pause, in the same write that
	// records it as started; when none starts, just before the results
	// are stored.
	var claim *Claim
	if t.claim == "" {
		claim = &Claim{Token: newClaimToken(), At: time.Now(), Decisions: t.decisions}
	}
	switch {
	case res != nil:
	case refused != nil:
		res = &RunResult{Message: refused}
	default:
		mk := t.newMarker(claim)
		pl.start = t.marking(mk)
		res, err = m.execute(ctx, pl)
		if mk.claimed() {
			t.claim = claim.Token
		}
		switch {
		case err != nil && t.claim == "":
			return nil, fmt.Errorf("toolgate: conversation %q: resuming pause %q: %w", t.convID, t.pause.ID, err)
		case err != nil:
			return nil, fmt.Errorf("toolgate: conversation %q: pause %q was claimed but its calls did not complete (recover it with RecoverPause): %w", t.convID, t.pause.ID, err)
		}
	}
	if t.claim == "" {
		// No call started (all denied, refused or unrunnable): claim
		// before storing the results.
		if err := t.claimPause(ctx, claim); err != nil {
			return nil, err
		}
	}
	t.markInterrupted(res.Message)
	if err := t.save(ctx, []Message{res.Message}, nil, t.pause.ID); err != nil {
		return nil, err
	}
	if t.resolved != nil {
		t.resolved(res.Message)
	}
	t.resolution = res.Message.Results
	t.history = append(t.history, t.reply, res.Message)
	t.results = append(t.results, res.Message.Results...)
	if err := t.emitResults(ctx, res.Message.Results); err != nil {
		return nil, err
	}
	if res.ReturnDirect {
		return t.returnDirect(res), nil
	}
	return t.loop(ctx)
}

// loop runs rounds until the turn ends.
func (t *turn) loop(ctx context.Context) (*Response, error) {
	c := t.c
	var last *Response
	for round := 0; round < c.maxRounds; round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tools, err := t.offer(ctx, false)
		if err != nil {
			return nil, err
		}
		prompt, err := t.modelPrompt(ctx, t.history, tools)
		if err != nil {
			return nil, err
		}
		resp, err := t.callModel(ctx, prompt)
		if err != nil {
			return nil, err
		}
		t.usage = t.usage.Add(resp.Usage)
		last = resp
		reply := resp.Message()
		if reply == nil {
			return nil, fmt.Errorf("toolgate: the model returned no message")
		}
		if !reply.HasToolCalls() {
			if err := t.flush(ctx, nil, reply); err != nil {
				return nil, err
			}
			return t.response(resp, resp.FinishReason()), nil
		}
		if err := t.protectReply(ctx, reply); err != nil {
			return nil, err
		}
		var res *RunResult
		if t.guard != nil {
			refusals, err := t.guard.CheckReply(ctx, prompt, reply)
			if err != nil {
				return nil, err
			}
			if refusals != nil {
				if len(refusals) != len(reply.ToolCalls) {
					return nil, fmt.Errorf("toolgate: the authorizer refused %d calls with %d results", len(reply.ToolCalls), len(refusals))
				}
				res = &RunResult{Message: &ToolMessage{Results: refusals}}
			}
		}
		if res == nil {
			res, err = c.manager.Run(ctx, &RunParams{Prompt: prompt, Reply: reply, ConversationID: t.convID, Principal: t.principal})
		}
		if err != nil {
			// A pause, a limit or a failure ends the turn (declared here,
			// pe and le cost an allocation only when a round ends so).
			var pe *PauseError
			var le *LimitError
			switch {
			case errors.As(err, &pe):
				pr := &PauseRecord{ID: randomID("pause_"), Awaiting: pe.Awaiting}
				if err := t.flush(ctx, pr, reply); err != nil {
					return nil, err
				}
				out := t.response(resp, FinishToolCalls)
				out.Awaiting, out.MisleadingIDs, out.PauseID = pe.Awaiting, pe.MisleadingIDs, pr.ID
				return out, nil
			case errors.As(err, &le):
				return t.endWithSkipped(ctx, resp, reply, le)
			default:
				return nil, err
			}
		}
		t.history = append(t.history, reply, res.Message)
		t.results = append(t.results, res.Message.Results...)
		if c.memory == MemoryInsideLoop || res.ReturnDirect {
			if err := t.flush(ctx, nil, reply, res.Message); err != nil {
				return nil, err
			}
		}
		if err := t.emitResults(ctx, res.Message.Results); err != nil {
			return nil, err
		}
		if res.ReturnDirect {
			return t.returnDirect(res), nil
		}
	}
	// The round limit: the last round ran tools and the model has not
	// answered them.
	if c.memory == MemoryOutsideLoop {
		n := len(t.history)
		if err := t.flush(ctx, nil, t.history[n-2], t.history[n-1]); err != nil {
			return nil, err
		}
	}
	out := t.response(last, FinishRoundLimit)
	out.Results = t.results
	out.Metadata = maps.Clone(out.Metadata)
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.Metadata["limit"] = fmt.Sprintf("the turn reached its limit of %d model calls", c.maxRounds)
	return out, nil
}

// endWithSkipped ends a turn whose next reply would exceed a tool call
// limit: its calls answer "skipped" so that the stored conversation stays
// valid, and the response says which limit was hit.
func (t *turn) endWithSkipped(ctx context.Context, resp *Response, reply *AssistantMessage, le *LimitError) (*Response, error) {
	msg := &ToolMessage{Results: make([]ToolResult, len(reply.ToolCalls))}
	for i, call := range reply.ToolCalls {
		msg.Results[i] = ToolResult{CallID: call.ID, Name: call.Name, Status: ResultSkipped,
			Content: "This call did not run: the tool call limit of the turn was reached."}
	}
	if err := t.flush(ctx, nil, reply, msg); err != nil {
		return nil, err
	}
	t.results = append(t.results, msg.Results...)
	out := t.response(resp, FinishToolLimit)
	out.Results = t.results
	out.Metadata = map[string]string{"limit": le.Error()}
	return out, nil
}

func (t *turn) returnDirect(res *RunResult) *Response {
	return &Response{
		ConversationID: t.convID,
		Generations:    res.Generations(),
		Usage:          t.usage,
		Results:        res.Message.Results,
	}
}

// response is the turn's response ending with resp's reply.
func (t *turn) response(resp *Response, finish FinishReason) *Response {
	// The response and its one generation share an allocation.
	out := &struct {
		r Response
		g [1]Generation
	}{g: [1]Generation{{Message: resp.Message(), FinishReason: finish}}}
	out.r = Response{
		ID:             resp.ID,
		Model:          resp.Model,
		ConversationID: t.convID,
		Generations:    out.g[:],
		Usage:          t.usage,
		Metadata:       resp.Metadata,
	}
	return &out.r
}

// callModel runs the model stage through the middleware. A panic of the
// model or of model middleware ends the turn with a [*PanicError]; a panic
// of a streaming caller's loop body is not the model's and goes on.
func (t *turn) callModel(ctx context.Context, p *Prompt) (_ *Response, err error) {
	c := t.c
	defer func() {
		if v := recover(); v != nil {
			if t.inBody {
				panic(v)
			}
			err = panicked(c.logger, SeamModel, v)
		}
	}()
	// call stays nil, and costs no method value, when nothing wraps the
	// model.
	var call ModelFunc
	switch {
	case t.emit != nil:
		call = t.streamModel
	case t.guard != nil || t.prot != nil || len(c.modelMW) > 0:
		call = c.model.Generate
	}
	if t.prot != nil {
		model := call
		call = func(ctx context.Context, p *Prompt) (*Response, error) {
			p, err := t.protect(ctx, p)
			if err != nil {
				return nil, err
			}
			return model(ctx, p)
		}
	}
	if t.guard != nil {
		offered, model := p.Tools, call
		call = func(ctx context.Context, p *Prompt) (*Response, error) {
			if err := t.guard.CheckPrompt(ctx, offered, p); err != nil {
				return nil, err
			}
			return model(ctx, p)
		}
	}
	if len(c.modelMW) > 0 {
		// Middleware gets its own copy of the prompt: nothing it changes
		// reaches the client's state.
		cp := *p
		cp.Messages = slices.Clone(p.Messages)
		cp.Tools = slices.Clone(p.Tools)
		p = &cp
		for i := len(c.modelMW) - 1; i >= 0; i-- {
			call = c.modelMW[i](call)
		}
	}
	var resp *Response
	if call == nil {
		resp, err = c.model.Generate(ctx, p)
	} else {
		resp, err = call(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("toolgate: the model returned a nil response")
	}
	return resp, nil
}

// streamModel is the streaming model stage: it forwards text as it
// arrives and returns the aggregated reply.
func (t *turn) streamModel(ctx context.Context, p *Prompt) (*Response, error) {
	var a accumulator
	for ch, err := range t.c.model.Stream(ctx, p) {
		if err != nil {
			return nil, err
		}
		if err := a.add(ch); err != nil {
			return nil, err
		}
		if ch != nil && ch.Text != "" {
			if err := t.emitText(ctx, ch.Text); err != nil {
				return nil, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return a.response(), nil
}

// recheckAllowed authorizes the calls a person allowed in a paused reply.
// When the authorizer refuses them neutrally, it returns the tool message
// that answers the reply: denied calls keep their decision's message and the
// allowed ones get the refusals.
func (t *turn) recheckAllowed(ctx context.Context, p *Prompt) (*ToolMessage, error) {
	keys := ToolCallKeys(t.reply)
	verdict := make(map[string]Decision, len(t.decisions))
	for _, d := range t.decisions {
		verdict[d.Key] = d
	}
	allowed := &AssistantMessage{Text: t.reply.Text}
	var index []int
	for i, call := range t.reply.ToolCalls {
		if d := verdict[keys[i]]; d.Verdict == VerdictAllow {
			if len(d.Arguments) > 0 {
				call.Arguments = string(d.Arguments) // the authorizer judges the edit
			}
			allowed.ToolCalls = append(allowed.ToolCalls, call)
			index = append(index, i)
		}
	}
	if len(index) == 0 {
		return nil, nil
	}
	refusals, err := t.guard.CheckReply(ctx, p, allowed)
	if err != nil || refusals == nil {
		return nil, err
	}
	if len(refusals) != len(index) {
		return nil, fmt.Errorf("toolgate: the authorizer refused %d calls with %d results", len(index), len(refusals))
	}
	msg := &ToolMessage{Results: make([]ToolResult, len(t.reply.ToolCalls))}
	for i, call := range t.reply.ToolCalls {
		msg.Results[i] = ToolResult{CallID: call.ID, Name: call.Name, Status: ResultDenied, Content: verdict[keys[i]].Message}
	}
	for j, i := range index {
		msg.Results[i] = refusals[j]
		if args := verdict[keys[i]].Arguments; len(args) > 0 {
			recordEdit(&msg.Results[i], string(args))
		}
	}
	return msg, nil
}

// awaiting returns the keys of the paused reply that may carry a decision
// other than a plain allow: those that awaited one and, for a recovery,
// those recorded as started (the recovery denies them itself). nil when the
// pause does not say (the policy is asked).
func (t *turn) awaiting() []string {
	if t.pause.Awaiting == nil || !t.recovering || len(t.interrupted) == 0 {
		return t.pause.Awaiting
	}
	return append(slices.Clip(t.pause.Awaiting), t.interrupted...)
}

// modelPrompt builds the prompt of a round: the conversation and the
// offered tools. The protector, if any, rewrites it last, right before the
// model (see protect).
func (t *turn) modelPrompt(_ context.Context, history []Message, tools []*Tool) (*Prompt, error) {
	return t.c.prompt(history, tools), nil
}

// protectReply shows the protector a reply with tool calls as a whole,
// before any of its calls runs.
func (t *turn) protectReply(ctx context.Context, reply *AssistantMessage) error {
	if t.prot == nil {
		return nil
	}
	_, err := t.prot.Messages(ctx, []Message{reply})
	return err
}

// protect returns p with its messages as the model may see them: tokenized
// by the protector. It is the last stage before the model, after every
// model middleware, so that what a middleware adds is tokenized too.
func (t *turn) protect(ctx context.Context, p *Prompt) (*Prompt, error) {
	msgs, err := t.prot.Messages(ctx, p.Messages)
	if err != nil {
		return nil, err
	}
	if len(msgs) != len(p.Messages) {
		return nil, fmt.Errorf("toolgate: the protector returned %d messages for %d", len(msgs), len(p.Messages))
	}
	cp := *p
	cp.Messages = msgs
	return &cp, nil
}

// emitText yields streamed text to the caller, rewritten by the protector.
func (t *turn) emitText(ctx context.Context, text string) error {
	if t.outStream != nil {
		var err error
		if text, err = t.outStream(ctx, text, false); err != nil {
			return err
		}
		if text == "" {
			return nil
		}
	}
	if !t.emit(&Chunk{Text: text}) {
		return errStreamStopped
	}
	return nil
}

// emitResults yields a round's results to a streaming caller.
func (t *turn) emitResults(ctx context.Context, rs []ToolResult) error {
	if t.emit == nil {
		return nil
	}
	rs, err := t.outResults(ctx, rs)
	if err != nil {
		return err
	}
	if !t.emit(&Chunk{Results: rs}) {
		return errStreamStopped
	}
	return nil
}

// outResults returns copies of rs with their content rewritten for the
// caller.
func (t *turn) outResults(ctx context.Context, rs []ToolResult) ([]ToolResult, error) {
	if t.prot == nil || len(rs) == 0 {
		return rs, nil
	}
	// Results are not the model's text: the caller sees them as the model
	// would (tokenized), in the output mode.
	msgs, err := t.prot.Messages(ctx, []Message{&ToolMessage{Results: rs}})
	if err != nil {
		return nil, err
	}
	var tm *ToolMessage
	if len(msgs) == 1 {
		tm, _ = msgs[0].(*ToolMessage)
	}
	if tm == nil || len(tm.Results) != len(rs) {
		return nil, errors.New("toolgate: the protector changed the shape of a tool message")
	}
	out := slices.Clone(rs)
	for i := range out {
		c, err := t.prot.Output(ctx, tm.Results[i].Content)
		if err != nil {
			return nil, err
		}
		out[i].Content = c
	}
	return out, nil
}

// outCalls returns copies of calls with their arguments rewritten for the
// caller.
func (t *turn) outCalls(ctx context.Context, calls []ToolCall) ([]ToolCall, error) {
	if t.prot == nil || len(calls) == 0 {
		return calls, nil
	}
	out := slices.Clone(calls)
	for i := range out {
		a, err := t.prot.Output(ctx, out[i].Arguments)
		if err != nil {
			return nil, err
		}
		out[i].Arguments = a
	}
	return out, nil
}

// finish runs a blocking turn, rewrites its response for the caller and
// ends the protector's request.
func (t *turn) finish(ctx context.Context, run func(context.Context) (*Response, error)) (*Response, error) {
	resp, err := run(ctx)
	if err == nil && t.prot != nil {
		resp, err = t.output(ctx, resp)
	}
	if endErr := t.end(ctx); err == nil {
		err = endErr
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// output returns resp with the texts the caller sees rewritten by the
// protector. Stored messages are not changed: the generations get copies.
func (t *turn) output(ctx context.Context, resp *Response) (*Response, error) {
	out := *resp
	out.Generations = slices.Clone(resp.Generations)
	for i, g := range out.Generations {
		if g.Message == nil {
			continue
		}
		m := *g.Message
		var err error
		if g.FinishReason == FinishReturnDirect {
			// The text is a tool's result, shown like one.
			var rs []ToolResult
			if rs, err = t.outResults(ctx, []ToolResult{{Content: m.Text}}); err == nil {
				m.Text = rs[0].Content
			}
		} else {
			m.Text, err = t.prot.Output(ctx, m.Text)
		}
		if err != nil {
			return nil, err
		}
		if m.ToolCalls, err = t.outCalls(ctx, m.ToolCalls); err != nil {
			return nil, err
		}
		out.Generations[i].Message = &m
	}
	var err error
	if out.Results, err = t.outResults(ctx, resp.Results); err != nil {
		return nil, err
	}
	if out.Metadata, err = t.outMetadata(ctx, resp.Metadata); err != nil {
		return nil, err
	}
	return &out, nil
}

// outMetadata returns a copy of md with its values rewritten for the
// caller.
func (t *turn) outMetadata(ctx context.Context, md map[string]string) (map[string]string, error) {
	if len(md) == 0 {
		return md, nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		s, err := t.prot.Output(ctx, v)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// end ends the protector's request, whatever happened to the turn.
func (t *turn) end(ctx context.Context) error {
	if t.prot == nil {
		return nil
	}
	return t.prot.End(context.WithoutCancel(ctx))
}
