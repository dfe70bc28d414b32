package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate"
)

// Hints says which tool annotations of a server add confirmation.
// Annotations are hints from a server that may not be trusted: under every
// rule they can only add confirmation, never remove it.
type Hints int

const (
	// HintDestructive: a tool annotated destructiveHint: true needs
	// confirmation. It is the default.
	HintDestructive Hints = iota
	// HintNotReadOnly: a tool needs confirmation unless it is annotated
	// readOnlyHint: true, and always when it is annotated
	// destructiveHint: true (a tool claiming both is gated). A missing
	// readOnlyHint counts as false, as the MCP specification says.
	HintNotReadOnly
	// HintNone: annotations add no confirmation; only
	// [Options.ConfirmTools] does.
	HintNone
)

// Options configure a [Server]. A nil *Options means all defaults. The
// options are copied by [Connect].
type Options struct {
	// Prefix is put before every tool name of the server, so the model
	// sees Prefix+name. Use it to tell servers apart and keep names unique
	// across them. "": none.
	Prefix string
	// ConfirmTools lists tool names, or glob patterns in the syntax of
	// [path.Match], whose calls need confirmation whatever the server's
	// annotations say. Names and patterns are matched against the names the
	// model sees, prefix included. A malformed pattern makes [Connect]
	// fail. nil: none.
	ConfirmTools []string
	// Hints says which annotations add confirmation. Zero:
	// [HintDestructive].
	Hints Hints
	// MinBackoff is the wait before the first reconnection attempt after
	// the connection to the server is lost; each failed attempt doubles
	// the wait, up to MaxBackoff. 0: 100ms.
	MinBackoff time.Duration
	// MaxBackoff caps the wait between reconnection attempts. 0: 30s.
	MaxBackoff time.Duration
	// OnToolsChanged, when not nil, is called with the new tool set after
	// each listing that follows [Connect]'s own: on a list-changed
	// notification and after each reconnection. Calls are serialised and
	// come from a goroutine of the Server; a slow callback delays the next
	// listing. nil: none.
	OnToolsChanged func(tools []*toolgate.Tool)
	// Implementation names this client to the server. nil:
	// {Name: "toolgate", Version: "v0"}.
	Implementation *mcp.Implementation
	// Logger receives warnings: skipped tools, lost connections, failed
	// listings. nil: [slog.Default].
	Logger *slog.Logger
}

// Errors a call of a server's tool can end with, wrapped with details.
// Like every tool error they reach the model as the call's error result;
// the turn goes on.
var (
	// ErrNotConnected: the connection to the server is lost and not yet
	// restored. The Server keeps trying to reconnect.
	ErrNotConnected = errors.New("mcptool: the server is not connected")
	// ErrClosed: the Server was closed.
	ErrClosed = errors.New("mcptool: closed")
)

// Issue describes a tool of a server that is not exposed, and why.
type Issue struct {
	// Name is the tool's name as the server gave it.
	Name string
	// Err wraps [ErrInvalidName], [ErrDuplicateName] or [ErrInvalidSchema].
	Err error
}

// maxPages bounds the pages of one tool listing, against a server whose
// cursors never end.
const maxPages = 1000

// Server is a connection to one MCP server whose tools it exposes as
// [toolgate.Tool] values. It lists the server's tools when it connects and
// again when the server says its list changed, and reconnects with bounded
// exponential backoff when the connection is lost.
//
// A Server is safe for concurrent use. Close it when done.
type Server struct {
	// fixed at creation
	dial       Dialer
	prefix     string
	confirm    []string
	hints      Hints
	minBackoff time.Duration
	maxBackoff time.Duration
	onChange   func([]*toolgate.Tool)
	logger     *slog.Logger
	client     *mcp.Client
	relist     chan struct{} // capacity 1: a listing is wanted
	done       chan struct{} // closed by Close
	stopped    chan struct{} // closed when the run goroutine returns
	life       context.Context
	cancel     context.CancelFunc

	set atomic.Pointer[toolSet] // the exposed tools

	mu      sync.Mutex
	session *mcp.ClientSession // guarded by mu; nil while disconnected
	closed  bool               // guarded by mu
}

// toolSet is one listing's outcome; it is never modified once stored.
type toolSet struct {
	tools  []*toolgate.Tool
	issues []Issue
}

// Connect connects to the server dial reaches and lists its tools. It
// fails when the first connection or listing fails (it does not retry
// them); after that, a lost connection is restored in the background.
// Invalid patterns in opts.ConfirmTools are an error.
func Connect(ctx context.Context, dial Dialer, opts *Options) (*Server, error) {
	if dial == nil {
		return nil, errors.New("mcptool: Connect: nil dialer")
	}
	if opts == nil {
		opts = &Options{}
	}
	for _, p := range opts.ConfirmTools {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("mcptool: ConfirmTools pattern %q: %w", p, err)
		}
	}
	s := &Server{
		dial:       dial,
		prefix:     opts.Prefix,
		confirm:    slices.Clone(opts.ConfirmTools),
		hints:      opts.Hints,
		minBackoff: opts.MinBackoff,
		maxBackoff: opts.MaxBackoff,
		onChange:   opts.OnToolsChanged,
		logger:     opts.Logger,
		relist:     make(chan struct{}, 1),
		done:       make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	if s.minBackoff <= 0 {
		s.minBackoff = 100 * time.Millisecond
	}
	if s.maxBackoff <= 0 {
		s.maxBackoff = 30 * time.Second
	}
	s.maxBackoff = max(s.maxBackoff, s.minBackoff)
	if s.logger == nil {
		s.logger = slog.Default()
	}
	impl := opts.Implementation
	if impl == nil {
		impl = &mcp.Implementation{Name: "toolgate", Version: "v0"}
	}
	s.client = mcp.NewClient(impl, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.relist <- struct{}{}:
			default: // a listing is already wanted
			}
		},
	})
	cs, set, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.session = cs
	s.set.Store(set)
	s.life, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go s.run(cs)
	return s, nil
}

// connect dials, connects and lists the tools.
func (s *Server) connect(ctx context.Context) (*mcp.ClientSession, *toolSet, error) {
	t, err := s.dial(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("mcptool: dialing the server: %w", err)
	}
	cs, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcptool: connecting to the server: %w", err)
	}
	set, err := s.list(ctx, cs)
	if err != nil {
		cs.Close()
		return nil, nil, err
	}
	return cs, set, nil
}

// run watches the session: it lists the tools again when asked, and
// reconnects when the session ends, until Close.
func (s *Server) run(cs *mcp.ClientSession) {
	defer close(s.stopped)
	for {
		ended := make(chan struct{})
		go func() {
			cs.Wait()
			close(ended)
		}()
	watch:
		for {
			select {
			case <-s.done:
				cs.Close()
				<-ended
				return
			case <-ended:
				break watch
			case <-s.relist:
				set, err := s.list(s.life, cs)
				if err != nil {
					if s.life.Err() != nil {
						continue // closing
					}
					s.logger.Warn("mcptool: listing the tools of the server failed; keeping the previous set", "prefix", s.prefix, "error", err)
					continue
				}
				s.publish(set)
			}
		}
		s.mu.Lock()
		if s.session == cs {
			s.session = nil
		}
		s.mu.Unlock()
		// The connection is gone, but the session still holds resources
		// (such as its subscription to notifications) until closed.
		cs.Close()
		s.logger.Warn("mcptool: the connection to the server was lost; reconnecting", "prefix", s.prefix)
		var ok bool
		if cs, ok = s.reconnect(); !ok {
			return
		}
	}
}

// reconnect tries to connect until it succeeds (true) or the Server is
// closed (false).
func (s *Server) reconnect() (*mcp.ClientSession, bool) {
	delay := s.minBackoff
	for {
		t := time.NewTimer(delay)
		select {
		case <-s.done:
			t.Stop()
			return nil, false
		case <-t.C:
		}
		// A listing requested before the connection was lost is covered by
		// the listing that follows the reconnection.
		select {
		case <-s.relist:
		default:
		}
		cs, set, err := s.connect(s.life)
		if err == nil {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				cs.Close()
				return nil, false
			}
			s.session = cs
			s.mu.Unlock()
			s.publish(set)
			return cs, true
		}
		s.logger.Warn("mcptool: reconnecting to the server failed", "prefix", s.prefix, "error", err, "retry_in", min(2*delay, s.maxBackoff))
		delay = min(2*delay, s.maxBackoff)
	}
}

func (s *Server) publish(set *toolSet) {
	s.set.Store(set)
	if s.onChange != nil {
		s.onChange(slices.Clone(set.tools))
	}
}

// list fetches every page of the server's tool list and builds the tools.
func (s *Server) list(ctx context.Context, cs *mcp.ClientSession) (*toolSet, error) {
	set := &toolSet{}
	seen := make(map[string]bool)
	cursors := make(map[string]bool)
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("mcptool: listing tools: more than %d pages", maxPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("mcptool: listing tools: %w", err)
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			tool, err := s.tool(t, seen)
			if err != nil {
				set.issues = append(set.issues, Issue{Name: t.Name, Err: err})
				s.logger.Warn("mcptool: a tool of the server is not exposed", "prefix", s.prefix, "tool", t.Name, "error", err)
				continue
			}
			set.tools = append(set.tools, tool)
		}
		if res.NextCursor == "" {
			return set, nil
		}
		if cursors[res.NextCursor] {
			return nil, fmt.Errorf("mcptool: listing tools: the server repeated cursor %q", res.NextCursor)
		}
		cursors[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// tool builds the toolgate tool for a server's tool.
func (s *Server) tool(t *mcp.Tool, seen map[string]bool) (*toolgate.Tool, error) {
	def := toolgate.ToolDefinition{Name: s.prefix + t.Name, Description: t.Description}
	if t.Name == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidName)
	}
	if !toolgate.ValidToolName(def.Name) {
		return nil, fmt.Errorf("%w: %q: want 1-64 of [A-Za-z0-9_.-]", ErrInvalidName, def.Name)
	}
	if seen[def.Name] {
		return nil, fmt.Errorf("%w: %q", ErrDuplicateName, def.Name)
	}
	schema, err := decodeSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	seen[def.Name] = true
	def.InputSchema = schema
	meta := toolgate.ToolMetadata{RequiresConfirmation: s.needsConfirmation(def.Name, t.Annotations)}
	remote, name := t.Name, def.Name
	return toolgate.NewTool(def, meta, func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
		return s.call(ctx, name, remote, req)
	}), nil
}

// needsConfirmation applies ConfirmTools and the hint rule. Nothing here
// can turn confirmation off: each clause only adds it.
func (s *Server) needsConfirmation(name string, a *mcp.ToolAnnotations) bool {
	if s.matches(name) {
		return true
	}
	if a == nil {
		return s.hints == HintNotReadOnly
	}
	destructive := a.DestructiveHint != nil && *a.DestructiveHint
	switch s.hints {
	case HintDestructive:
		return destructive
	case HintNotReadOnly:
		return destructive || !a.ReadOnlyHint
	}
	return false
}

func (s *Server) matches(name string) bool {
	for _, p := range s.confirm {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// call runs the server's tool remote for the model's tool name.
func (s *Server) call(ctx context.Context, name, remote string, req *toolgate.ToolRequest) (string, error) {
	args := req.Arguments
	s.mu.Lock()
	cs, closed := s.session, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return "", fmt.Errorf("calling %s: %w", name, ErrClosed)
	case cs == nil:
		return "", fmt.Errorf("calling %s: %w", name, ErrNotConnected)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("calling %s: %w", name, context.Cause(ctx))
		}
		return "", fmt.Errorf("calling %s: %w", name, err)
	}
	text := resultText(res)
	if res.IsError {
		return "", &ToolError{Tool: name, Content: text}
	}
	attachImages(req, res)
	return text, nil
}

// Tools returns the server's tools as of the latest listing, in the
// server's order. The slice is the caller's; the tools are shared and
// immutable. During an outage it still returns the last listed set (their
// calls fail with [ErrNotConnected]); after reconnection the set is listed
// again.
//
// A [toolgate.Client] keeps the tools it was built with, so a turn that
// started keeps its tools when the set changes. To offer a changed set,
// build a new Client from Tools with the same store. A tool of an older
// set still calls the server by its name over the current connection.
func (s *Server) Tools() []*toolgate.Tool {
	return slices.Clone(s.set.Load().tools)
}

// Issues returns the server's tools that the latest listing did not
// expose, and why.
func (s *Server) Issues() []Issue {
	return slices.Clone(s.set.Load().issues)
}

// Policy returns a confirmation policy that asks for a decision on every
// call whose tool name matches [Options.ConfirmTools]. Tools of the Server
// already carry the flag in their metadata; add this policy to
// [toolgate.ClientOptions.Policy] when the client does not honour the
// flag (DisableMetadataFlag), so that the named tools stay gated.
func (s *Server) Policy() func(call toolgate.ToolCall, meta toolgate.ToolMetadata) bool {
	return func(call toolgate.ToolCall, _ toolgate.ToolMetadata) bool {
		return s.matches(call.Name)
	}
}

// Close closes the connection, stops reconnecting and waits for the
// Server's goroutines. Calls of its tools then fail with [ErrClosed].
// Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return nil
	}
	s.closed = true
	s.session = nil
	s.mu.Unlock()
	close(s.done)
	s.cancel()
	<-s.stopped
	return nil
}
