package privacy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/toolgate/toolgate"
)

// VaultStore keeps the sealed vault of each conversation, for the
// conversation scope of a [Guard]. The bytes are sealed ([Vault.Seal]):
// the store never sees an original value in the clear. store/sqlite
// implements it.
type VaultStore interface {
	// LoadVault returns the sealed vault of a conversation, or nil and no
	// error when there is none.
	LoadVault(ctx context.Context, conversationID string) ([]byte, error)
	// SaveVault replaces the sealed vault of a conversation.
	SaveVault(ctx context.Context, conversationID string, sealed []byte) error
}

// GuardOptions configure a [Guard]. A nil *GuardOptions means all
// defaults: built-in recognizers, no original for any tool, tokens shown to
// the end user, a vault per conversation kept in memory.
type GuardOptions struct {
	// Scanner finds the values to protect. nil: NewScanner(nil), every
	// built-in recognizer.
	Scanner *Scanner
	// Disclosure grants, per tool name (as the model sees it), the entity
	// types the tool receives as original values. A tool not listed
	// receives tokens only.
	Disclosure map[string]Grant
	// PrincipalGrant, when set, limits disclosure per principal: a tool
	// receives originals of the types granted both to the tool and to the
	// principal of the request. nil: the tool's grant alone.
	PrincipalGrant func(*toolgate.Principal) Grant
	// Output is what the end user sees of the model's text and of tool
	// results. Zero: [ModeTokens].
	Output OutputMode
	// OutputGrant is what a principal may see restored in [ModeRestore].
	// nil: nothing (tokens stay).
	OutputGrant func(*toolgate.Principal) Grant
	// Vaults keeps the vault of each conversation, sealed with Key, so
	// that tokens keep naming the same values across turns, resumptions
	// and processes. nil: the guard keeps the sealed vaults in memory,
	// under a random key of its own, for as long as it lives; a
	// conversation continued by another process (or another guard) then
	// starts with an empty vault, and the tokens in its history stay
	// tokens.
	Vaults VaultStore
	// Key seals conversation vaults (AES-256-GCM): 32 bytes, required with
	// Vaults, ignored without.
	Key []byte
	// RefuseFiles refuses the files (images, documents) of user messages
	// and tool results: the guard cannot scan them, so a message holding
	// one fails with [ErrUnscannedFile] before the model sees it. false:
	// files reach the model as they are. Files of the model's own replies
	// always go back to it.
	RefuseFiles bool
}

// ErrUnscannedFile is returned (wrapped) when [GuardOptions.RefuseFiles] is
// set and a user message or a tool result holds a file.
var ErrUnscannedFile = errors.New("privacy: a file cannot be scanned for personal data")

// Guard is the privacy guard: its Begin is a
// [toolgate.ClientOptions.Protect]. The model sees tokens instead of the
// personal data in every message (user and system text, replies, tool-call
// arguments, tool results); a tool receives, in its arguments, the original
// values of the types its disclosure grants (after authorization allowed
// the call); the end user sees the output mode's rendering. A Guard is
// immutable and safe for concurrent use.
//
// Of the parts of messages ([toolgate.Part]), the guard tokenizes the
// text of text parts like any text (a reply's Text is then its tokenized
// text parts joined, so the two still agree). Reasoning, redacted
// reasoning, signatures and opaque provider fields go back to the model
// byte for byte: the provider checks them, and a rewritten one is refused.
// Files cannot be scanned: they pass unchanged, or are refused with
// [GuardOptions.RefuseFiles]. What the caller sees of the reasoning is the
// client's setting ([toolgate.ClientOptions.ShowReasoning]); shown
// reasoning is rewritten by the output mode like other text.
type Guard struct {
	scanner     *Scanner
	disclosure  map[string]Grant
	principal   func(*toolgate.Principal) Grant
	mode        OutputMode
	outputGrant func(*toolgate.Principal) Grant
	vaults      VaultStore
	key         []byte
	noFiles     bool
}

// NewGuard returns a guard configured by opts. It fails when Vaults is set
// without a 32-byte key.
func NewGuard(opts *GuardOptions) (*Guard, error) {
	if opts == nil {
		opts = &GuardOptions{}
	}
	g := &Guard{scanner: opts.Scanner, mode: opts.Output, principal: opts.PrincipalGrant,
		outputGrant: opts.OutputGrant, vaults: opts.Vaults, key: append([]byte(nil), opts.Key...),
		noFiles: opts.RefuseFiles}
	if g.scanner == nil {
		g.scanner = NewScanner(nil)
	}
	g.disclosure = make(map[string]Grant, len(opts.Disclosure))
	for k, v := range opts.Disclosure {
		g.disclosure[k] = v
	}
	if g.vaults != nil && len(g.key) != 32 {
		return nil, fmt.Errorf("privacy: conversation vaults need a 32-byte key, got %d bytes", len(g.key))
	}
	if g.vaults == nil {
		g.vaults = &memoryVaults{m: map[string][]byte{}}
		g.key = make([]byte, 32)
		if _, err := rand.Read(g.key); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// memoryVaults is the default [VaultStore]: sealed vaults in memory.
type memoryVaults struct {
	mu sync.Mutex
	m  map[string][]byte // guarded by mu
}

func (v *memoryVaults) LoadVault(_ context.Context, id string) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[id], nil
}

func (v *memoryVaults) SaveVault(_ context.Context, id string, sealed []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.m[id] = sealed
	return nil
}

// Begin begins the protection of one request (it is a
// [toolgate.ClientOptions.Protect]).
func (g *Guard) Begin(ctx context.Context, r *toolgate.BeginParams) (toolgate.Protector, error) {
	if r == nil {
		r = &toolgate.BeginParams{}
	}
	vault := NewVault()
	if g.vaults != nil && r.ConversationID != "" {
		sealed, err := g.vaults.LoadVault(ctx, r.ConversationID)
		if err != nil {
			return nil, fmt.Errorf("privacy: loading the conversation's vault: %w", err)
		}
		if sealed != nil {
			if vault, err = OpenVault(g.key, sealed); err != nil {
				return nil, fmt.Errorf("privacy: opening the conversation's vault: %w", err)
			}
		}
	}
	rp := &requestProtector{g: g, principal: r.Principal, convID: r.ConversationID,
		rw: NewRewriter(g.scanner, vault), seen: make(map[toolgate.Message]toolgate.Message),
		saved: vault.version(), horizon: vault.getMark()}
	rp.out = NoTypes()
	if g.outputGrant != nil {
		rp.out = g.outputGrant(r.Principal)
	}
	return rp, nil
}

// requestProtector protects one request.
type requestProtector struct {
	// fixed at Begin
	g         *Guard
	principal *toolgate.Principal
	convID    string
	rw        *Rewriter
	out       Grant

	mu      sync.Mutex
	seen    map[toolgate.Message]toolgate.Message // guarded by mu: message -> its tokenized form
	saved   int                                   // guarded by mu: vault version when last saved
	horizon int                                   // guarded by mu: the last binding the model could know
}

// grant returns what tool receives as originals for this request.
func (rp *requestProtector) grant(tool string) Grant {
	g := rp.g.disclosure[tool]
	if rp.g.principal != nil {
		g = g.Intersect(rp.g.principal(rp.principal))
	}
	return g
}

// Messages implements [toolgate.Protector]. Messages are immutable,
// so each is tokenized once per request; the vault gives a value the same
// token wherever it appears. The token-shaped text of every part of a
// message is reserved before any of its values gets a token. A prompt
// (anything but a lone reply or tool message) marks the tokens the model
// may name in its reply: those bound so far.
func (rp *requestProtector) Messages(ctx context.Context, msgs []toolgate.Message) ([]toolgate.Message, error) {
	out := make([]toolgate.Message, len(msgs))
	for i, m := range msgs {
		rp.mu.Lock()
		done, ok := rp.seen[m]
		rp.mu.Unlock()
		if !ok {
			var err error
			if done, err = rp.message(ctx, m); err != nil {
				return nil, err
			}
			rp.mu.Lock()
			rp.seen[m] = done
			rp.mu.Unlock()
		}
		out[i] = done
	}
	if !isPrompt(msgs) {
		return out, nil
	}
	// The model is called with these messages: its reply may name the
	// tokens bound so far, and no later ones. The mark is sealed with the
	// vault, for the reply that a resumption runs in another request.
	v := rp.rw.Vault()
	h := v.lastSeq()
	v.setMark(h)
	rp.mu.Lock()
	rp.horizon = h
	rp.mu.Unlock()
	return out, nil
}

// isPrompt reports whether msgs is a prompt for the model, not a lone
// reply or tool message shown to the guard.
func isPrompt(msgs []toolgate.Message) bool {
	if len(msgs) != 1 {
		return len(msgs) > 1
	}
	switch msgs[0].(type) {
	case *toolgate.AssistantMessage, *toolgate.ToolMessage:
		return false
	}
	return true
}

// reserveMessage reserves the token-shaped text of every part of m before
// any of its values gets a token, so that no part of a message is given a
// token that another part already holds.
func (rp *requestProtector) reserveMessage(m toolgate.Message) {
	v := rp.rw.Vault()
	switch m := m.(type) {
	case *toolgate.UserMessage:
		if len(m.Parts) > 0 {
			v.reserve(m.Text)
			reserveParts(v, m.Parts)
		}
	case *toolgate.AssistantMessage:
		v.reserve(m.Text)
		for _, c := range m.ToolCalls {
			v.reserve(c.Arguments)
		}
		reserveParts(v, m.Parts)
	case *toolgate.ToolMessage:
		for _, r := range m.Results {
			v.reserve(r.Content)
			v.reserve(r.EditedArguments)
			reserveParts(v, r.Parts)
		}
	}
}

// reserveParts reserves the token-shaped text of text and reasoning parts:
// reasoning is never rewritten, so no value may get a token it holds.
func reserveParts(v *Vault, ps toolgate.Parts) {
	for _, p := range ps {
		switch p := p.(type) {
		case toolgate.TextPart:
			v.reserve(p.Text)
		case toolgate.ReasoningPart:
			v.reserve(p.Text)
		}
	}
}

// parts returns ps as the model may see them: the text of text parts
// tokenized (their provider fields unchanged), everything else as it is,
// byte for byte: reasoning, redacted reasoning, signatures and opaque
// provider fields go back to the provider that wrote them and must not
// change, and files cannot be scanned (see [GuardOptions.RefuseFiles],
// which refuses them when fromModel is false). It returns the tokenized
// texts joined too.
func (rp *requestProtector) parts(ctx context.Context, ps toolgate.Parts, fromModel bool) (toolgate.Parts, string, error) {
	if ps == nil {
		return nil, "", nil
	}
	out := make(toolgate.Parts, len(ps))
	var text strings.Builder
	for i, p := range ps {
		switch q := p.(type) {
		case toolgate.TextPart:
			t, err := rp.rw.Tokenize(ctx, q.Text)
			if err != nil {
				return nil, "", err
			}
			q.Text = t
			text.WriteString(t)
			out[i] = q
		case toolgate.FilePart:
			if rp.g.noFiles && !fromModel {
				return nil, "", fmt.Errorf("%w: part %d (%s)", ErrUnscannedFile, i, q.MediaType)
			}
			out[i] = q
		default:
			out[i] = p
		}
	}
	return out, text.String(), nil
}

func (rp *requestProtector) message(ctx context.Context, m toolgate.Message) (toolgate.Message, error) {
	rw := rp.rw
	rp.reserveMessage(m)
	switch m := m.(type) {
	case *toolgate.SystemMessage:
		text, err := rw.Tokenize(ctx, m.Text)
		return &toolgate.SystemMessage{Text: text}, err
	case *toolgate.UserMessage:
		text, err := rw.Tokenize(ctx, m.Text)
		if err != nil {
			return nil, err
		}
		parts, _, err := rp.parts(ctx, m.Parts, false)
		if err != nil {
			return nil, err
		}
		return &toolgate.UserMessage{Text: text, Parts: parts}, nil
	case *toolgate.AssistantMessage:
		var text string
		var err error
		var parts toolgate.Parts
		if len(m.Parts) > 0 {
			// The reply's text is its text parts': tokenized part by part,
			// so that the two still agree.
			parts, text, err = rp.parts(ctx, m.Parts, true)
		} else {
			text, err = rw.Tokenize(ctx, m.Text)
		}
		if err != nil {
			return nil, err
		}
		out := &toolgate.AssistantMessage{Text: text, Parts: parts}
		if len(m.ToolCalls) > 0 {
			out.ToolCalls = make([]toolgate.ToolCall, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				args, err := rw.TokenizeContent(ctx, c.Arguments)
				if err != nil {
					return nil, err
				}
				out.ToolCalls[i] = toolgate.ToolCall{ID: c.ID, Name: c.Name, Arguments: args}
			}
		}
		return out, nil
	case *toolgate.ToolMessage:
		out := &toolgate.ToolMessage{Results: make([]toolgate.ToolResult, len(m.Results))}
		for i, r := range m.Results {
			content, err := rw.TokenizeContent(ctx, r.Content)
			if err != nil {
				return nil, err
			}
			r.Content = content
			if r.Parts, _, err = rp.parts(ctx, r.Parts, false); err != nil {
				return nil, err
			}
			if r.EditedArguments != "" {
				// A person's edit may hold originals, like the content
				// that quotes it.
				if r.EditedArguments, err = rw.TokenizeContent(ctx, r.EditedArguments); err != nil {
					return nil, err
				}
			}
			out.Results[i] = r
		}
		return out, nil
	case nil:
		return nil, errors.New("privacy: nil message")
	}
	return nil, fmt.Errorf("privacy: unknown message type %T", m)
}

// Tool implements [toolgate.Protector]: the tool's arguments are
// tokenized entirely (so a value the model typed itself is caught), then
// only the tokens of the types granted to the tool (and the principal) are
// restored, and only those the vault bound before the model wrote the
// call. Tokens the vault did not issue, or issued later, stay text.
func (rp *requestProtector) Tool(t *toolgate.Tool) *toolgate.Tool {
	grant := rp.grant(t.Name())
	return t.Wrap(func(next toolgate.ToolFunc) toolgate.ToolFunc {
		return func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
			rp.mu.Lock()
			horizon := rp.horizon
			rp.mu.Unlock()
			args, err := rp.rw.arguments(ctx, req.Arguments, grant, horizon)
			if err != nil {
				return "", fmt.Errorf("privacy: preparing the arguments of %s: %w", t.Name(), err)
			}
			if !json.Valid(args) {
				return "", fmt.Errorf("%w: not valid JSON", toolgate.ErrInvalidArguments)
			}
			r := *req
			r.Arguments = args
			return next(ctx, &r)
		}
	})
}

// Output implements [toolgate.Protector]. A JSON object or array
// (a call's arguments, a tool's result) is rewritten value by value and
// stays valid JSON ([Rewriter.OutputContent]).
func (rp *requestProtector) Output(ctx context.Context, text string) (string, error) {
	return rp.rw.OutputContent(ctx, text, rp.g.mode, rp.out)
}

// OutputStream implements [toolgate.Protector]. In [ModeBlock] the
// text is held until the end and then rewritten whole, as
// [requestProtector.Output] rewrites the text of a blocking turn: nothing
// reaches the reader before the verdict.
func (rp *requestProtector) OutputStream() func(ctx context.Context, piece string, final bool) (string, error) {
	if rp.g.mode == ModeBlock {
		var held strings.Builder
		return func(ctx context.Context, piece string, final bool) (string, error) {
			held.WriteString(piece)
			if !final {
				return "", nil
			}
			text := held.String()
			held.Reset()
			return rp.Output(ctx, text)
		}
	}
	s := rp.rw.Stream(rp.g.mode, rp.out)
	return func(ctx context.Context, piece string, final bool) (string, error) {
		out, err := s.Write(ctx, piece)
		if err != nil || !final {
			return out, err
		}
		rest, err := s.Flush(ctx)
		return out + rest, err
	}
}

// End implements [toolgate.Protector]: the conversation's vault is
// sealed and saved when the request changed it.
func (rp *requestProtector) End(ctx context.Context) error {
	if rp.g.vaults == nil || rp.convID == "" {
		return nil
	}
	v := rp.rw.Vault()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	version := v.version()
	if version == rp.saved {
		return nil
	}
	sealed, err := v.Seal(rp.g.key)
	if err != nil {
		return fmt.Errorf("privacy: sealing the conversation's vault: %w", err)
	}
	if err := rp.g.vaults.SaveVault(ctx, rp.convID, sealed); err != nil {
		return fmt.Errorf("privacy: saving the conversation's vault: %w", err)
	}
	rp.saved = version
	return nil
}
