package toolgate

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/toolgate/toolgate/internal/logcap"
)

// Client runs turns of a conversation: it sends the conversation to the
// model, runs the tool calls of its replies, and repeats until the model
// answers without tool calls, a tool returns directly, a call needs a
// person's decision (the turn pauses), a limit is reached, or the context
// is canceled.
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
	model      Model
	tools      []*Tool // as given
	wrapped    []*Tool // tools wrapped by toolMW, offered when no authorizer
	toolMW     []func(ToolFunc) ToolFunc
	authz      func(ctx context.Context, r *BeginParams) (Authorizer, error)
	protector  func(ctx context.Context, r *BeginParams) (Protector, error)
	search     func(ctx context.Context, r *BeginParams) (ToolSearch, error)
	names      map[string]bool // the tools' names
	manager    *manager
	store      ConversationStore
	everyRound bool // ClientOptions.StoreEveryRound
	system     string
	maxRounds  int
	options    *ModelOptions
	modelMW    []func(ModelFunc) ModelFunc
	logger     *slog.Logger
	maxFile    int  // MaxFileSize, defaulted
	reasoning  bool // ShowReasoning
}

// ModelFunc is one model call in the form model middleware wraps:
// func(next ModelFunc) ModelFunc. In streaming turns the text has already
// reached the caller when the response is returned.
type ModelFunc func(ctx context.Context, p *Prompt) (*Response, error)

// ClientOptions configure a [Client]. A nil *ClientOptions means all
// defaults. The options are copied by [NewClient].
type ClientOptions struct {
	// SystemPrompt is sent before the conversation in every model call. It
	// is not stored. "": none.
	SystemPrompt string
	// Store keeps conversations and pauses (see packages store/memory,
	// store/sqlite and store/postgres). nil: a new in-memory store private
	// to the client.
	Store ConversationStore
	// StoreEveryRound says which messages of a turn are stored. true:
	// every round as it completes (the user message, each reply and each
	// tool message); choose it when turns run tools before a gated one, so
	// that a resumed turn carries the whole turn. false, the default: the
	// user message and the turn's final response (the paused reply, the
	// model's last answer, or, for turns ended by return-direct or a
	// limit, the last reply with its results); earlier rounds are not
	// stored, so a resumed turn does not show the model the tool results
	// it based the paused call on, and conversations stay short.
	StoreEveryRound bool
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
	// It runs after the client's checks (confirmation, decisions, limits)
	// and after argument normalisation, around the tool's own validation.
	ToolMiddleware []func(next ToolFunc) ToolFunc
	// Authorize begins the authorization of every request: which tools
	// the model sees and which calls may run (package authz: pass
	// guard.Begin). It may refuse the request (for example, tools but no
	// principal). nil: no authorization, every tool is offered and every
	// call may run. The client calls it at fixed stages; a client built
	// with it has no way to skip it. It must be safe for concurrent use.
	Authorize func(ctx context.Context, r *BeginParams) (Authorizer, error)
	// Protect begins the protection of personal data in every request:
	// the model sees tokens, each tool gets the originals it is granted,
	// and the caller sees what the principal may see (package privacy:
	// pass guard.Begin). The client calls the returned Protector's End
	// when the request ends, however it ends. nil: no protection. It must
	// be safe for concurrent use.
	Protect func(ctx context.Context, r *BeginParams) (Protector, error)
	// SearchTools begins the tool search of every request, letting the
	// model find tools instead of seeing them all (package toolsearch:
	// pass searcher.Begin): each model call is offered the search tool
	// and the tools the model found so far, chosen among the tools the
	// authorizer (if any) offers. The client calls it inside the guards:
	// the privacy guard wraps the search tool like any other tool (so its
	// query is tokenized), and the authorizer receives it in
	// [BeginParams.SearchTool] and chooses the tools a search may see.
	// nil: no tool search, every tool the authorizer allows is offered.
	// It must be safe for concurrent use.
	SearchTools func(ctx context.Context, r *BeginParams) (ToolSearch, error)
	// ConfirmTools names tools whose calls always need a person's
	// decision, whatever their metadata says (for tools you cannot
	// annotate, such as MCP tools). Use the names the model sees; a name
	// that matches none of the client's tools is logged as a warning when
	// the client is built. Calls of tools whose metadata sets
	// [ToolMetadata.RequiresConfirmation] need one anyway.
	ConfirmTools []string
	// Policy is asked in addition to the metadata flag and ConfirmTools: a
	// call needs a decision when any of them says so. nil: none added.
	// It says whether one call needs a person's decision before it runs;
	// meta is the metadata of the tool the call would run with (zero when
	// the prompt carries no such tool). A policy may inspect the
	// arguments; one that cannot parse them should answer true (fail
	// closed). A policy that panics is taken to answer true, and the panic
	// is logged. It must be safe for concurrent use and must not block.
	Policy func(call ToolCall, meta ToolMetadata) bool
	// DisableMetadataFlag stops honouring [ToolMetadata.RequiresConfirmation].
	// Only for tests and batch jobs where nobody can decide; a warning is
	// logged when a client is built with it. ConfirmTools and Policy still
	// apply, so configuration can only add calls that need a decision.
	DisableMetadataFlag bool
	// MaxCalls caps the calls of one turn, MaxCallsPerTool the calls of
	// each named tool in one turn. A turn is everything since the last
	// user message; only calls that were allowed to run count. When a
	// reply's calls would pass a cap, none of them runs and the turn ends
	// ([FinishToolLimit]); a resumption whose allowed calls would pass one
	// fails with [ErrLimitExceeded]. Zero, or a tool not in the map: no
	// limit.
	MaxCalls        int
	MaxCallsPerTool map[string]int
	// Concurrency is how many allowed calls of one reply may run at once.
	// Results are in call order either way. 0 or 1: one at a time.
	Concurrency int
	// ErrorHandler turns a failed call into the result the model reads, or
	// ends the turn: err wraps [ErrUnknownTool], [ErrInvalidArguments],
	// [ErrToolPanicked] or is the tool's own error; a non-nil abort ends
	// the turn with it, otherwise content becomes the call's error result.
	// nil: the error's text is the result and the turn goes on.
	ErrorHandler func(ctx context.Context, call ToolCall, err error) (content string, abort error)
	// Logger receives warnings. nil: [slog.Default].
	Logger *slog.Logger
	// MaxFileSize caps the bytes of each [FilePart] of a user's input
	// ([CallParams.Parts]); a larger file refuses the turn with a
	// [*FileTooLargeError] before anything is stored. 0:
	// 20 MiB; negative: no limit.
	MaxFileSize int
	// ShowReasoning lets the caller of a client with a Protector see the
	// model's reasoning: the [Chunk.Reasoning] deltas of a stream and the
	// [ReasoningPart] texts of the replies it is given, rewritten by the
	// Protector like any output. false: with a Protector, the caller never
	// sees the reasoning (the model still gets it back, unchanged). Without
	// a Protector the caller always gets the replies as the model gave
	// them, reasoning included.
	ShowReasoning bool
}

// defaultMaxRounds is the round limit when [ClientOptions.MaxRounds] is 0.
const defaultMaxRounds = 16

// defaultMaxFileSize is the size limit of a file in a user's input when
// [ClientOptions.MaxFileSize] is 0: 20 MiB, the largest image or document
// the providers' APIs accept inline.
const defaultMaxFileSize = 20 << 20

// NewClient returns a client for model with tools. It panics when model is
// nil, a tool is nil, or two tools share a name: these are programming
// errors. Names in ConfirmTools that match no tool are logged as warnings.
func NewClient(model Model, tools []*Tool, opts *ClientOptions) *Client {
	if model == nil {
		panic("toolgate: NewClient: nil model")
	}
	if opts == nil {
		opts = &ClientOptions{}
	}
	c := &Client{
		model:      model,
		store:      opts.Store,
		everyRound: opts.StoreEveryRound,
		system:     opts.SystemPrompt,
		maxRounds:  opts.MaxRounds,
		options:    opts.ModelOptions,
		modelMW:    slices.Clone(opts.ModelMiddleware),
		toolMW:     slices.Clone(opts.ToolMiddleware),
		authz:      opts.Authorize,
		protector:  opts.Protect,
		search:     opts.SearchTools,
		logger:     opts.Logger,
		maxFile:    opts.MaxFileSize,
		reasoning:  opts.ShowReasoning,
	}
	if c.maxFile == 0 {
		c.maxFile = defaultMaxFileSize
	}
	c.manager = newManager(&managerOptions{
		Policy:              opts.Policy,
		ConfirmTools:        opts.ConfirmTools,
		DisableMetadataFlag: opts.DisableMetadataFlag,
		Limits:              callLimits{MaxCalls: opts.MaxCalls, MaxCallsPerTool: opts.MaxCallsPerTool},
		Concurrency:         opts.Concurrency,
		ErrorHandler:        opts.ErrorHandler,
		Logger:              opts.Logger,
	})
	c.manager.maxFile = c.maxFile
	if c.store == nil {
		c.store = newMemoryStore()
	}
	if c.maxRounds <= 0 {
		c.maxRounds = defaultMaxRounds
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
