package toolgate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/storerules"
)

func init() {
	// Store implementers reach the rules through package storekit.
	storerules.ValidateAppend = validateAppend
	storerules.ValidateClaim = validateClaim
	storerules.ValidateMark = validateMark
	storerules.NewMemoryStore = newMemoryStore
}

// ConversationStore keeps conversations: their messages in order, and at
// most one unresolved pause each. It is the state that lets a paused turn be
// resumed by another process, with the paused reply read from the store and
// never from a client.
//
// The store enforces the rules that make a pause safe:
//   - while a pause is unresolved, only the append that resolves it is
//     accepted (new user input is refused with [ErrPauseOpen]);
//   - a pause is claimed once ([ConversationStore.ClaimPause]), so two
//     resumptions of the same pause cannot both run tools; a claim is taken
//     over only by naming its token (a recovery of a claimant that died);
//   - a call of a claimed pause is recorded as started
//     ([ConversationStore.MarkStarted]) only by the current claimant, and
//     only once, so a call starts at most once even across a takeover;
//   - appends are optimistic: [AppendParams.At] must equal the number of
//     stored messages, so two writers cannot interleave a conversation.
//
// Implementations must be safe for concurrent use; [toolgatetest.TestStore]
// checks the contract. Stored messages are shared with callers: neither side
// may modify them.
type ConversationStore interface {
	// Load returns the conversation with the given id. A conversation that
	// was never written is returned empty, with no error.
	Load(ctx context.Context, id string) (*Conversation, error)
	// Append adds messages at the end of a conversation, atomically (all or
	// none), creating it when needed.
	Append(ctx context.Context, id string, p *AppendParams) error
	// ClaimPause marks the conversation's open pause as being resolved by
	// the claimant c, recording c's token, time and decisions with the
	// pause. Without [Claim.TakeOver] it succeeds for exactly one caller
	// per pause: it fails with [ErrNoOpenPause] when the conversation has
	// no open pause with that id (none, another one, or already claimed).
	// With TakeOver it replaces the current claim, which must carry the
	// token [Claim.Supersedes] (else [ErrClaimLost]), keeping the keys
	// already started. The rules are those of storekit.ValidateClaim.
	ClaimPause(ctx context.Context, id, pauseID string, c *Claim) error
	// MarkStarted records, atomically (all or none), that the calls with
	// the given keys of the claimed pause are about to run. It fails with
	// [ErrClaimLost] unless the pause is claimed with token, so a claimant
	// whose claim was taken over can start no more calls, and with
	// [ErrInvalidAppend] when a key was already recorded. The rules are
	// those of storekit.ValidateMark.
	MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error
}

// Conversation is a stored conversation.
type Conversation struct {
	ID       string
	Messages []Message
	// Pause is the unresolved pause, or nil.
	Pause *PauseRecord
}

// PauseRecord describes a pause kept by a [ConversationStore].
//
// JSON: {"id","index","awaiting","claimed","claimed_at","claim_token",
// "decisions","started","created_at"}; the claim's fields are left out
// while the pause is unclaimed.
type PauseRecord struct {
	// ID identifies the pause; resumption names it.
	ID string `json:"id"`
	// Index is the position of the paused reply in the conversation's
	// messages.
	Index int `json:"index"`
	// Awaiting are the keys that wait for a decision.
	Awaiting []string `json:"awaiting"`
	// Claimed is true once a resumption has claimed the pause and is
	// running its decisions.
	Claimed bool `json:"claimed,omitempty"`
	// ClaimedAt is when the current claim was made (see [Claim.At]); zero
	// while unclaimed, and for a claim recorded before claims kept times.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// ClaimToken names the current claim; "" while unclaimed, and for a
	// claim recorded before claims kept tokens.
	ClaimToken string `json:"claim_token,omitempty"`
	// Decisions are the decisions of the current claim, one per call: a
	// recovery finishes the claim with them. nil for a claim that runs no
	// call ([Client.ExpireOpenPause]) and while unclaimed.
	Decisions []Decision `json:"decisions,omitempty"`
	// Started are the keys of the calls recorded as started, in the order
	// they were recorded ([ConversationStore.MarkStarted]).
	Started []string `json:"started,omitempty"`
	// CreatedAt is when the pause was stored.
	CreatedAt time.Time `json:"created_at"`
}

// AppendParams describe one append to a conversation.
type AppendParams struct {
	// At is the number of messages the caller has seen stored; the append
	// fails with [ErrConflict] when the store holds another number.
	At int
	// Messages are appended in order. None may be nil.
	Messages []Message
	// Pause, when non-nil, opens a pause on the last appended message,
	// which must be an assistant reply with tool calls. Its ID, Awaiting
	// and CreatedAt are kept; Index is set by the store, and the pause is
	// stored unclaimed (the claim's fields are ignored).
	Pause *PauseRecord
	// Resolves is the id of the claimed pause this append resolves; its
	// first message must be the tool message answering the paused reply.
	// "" for an ordinary append.
	Resolves string
}

// validateAppend applies the rules every store enforces for an append to a
// conversation currently holding n messages and the given unresolved pause
// (nil for none); storekit.ValidateAppend publishes it.
func validateAppend(id string, n int, pause *PauseRecord, p *AppendParams) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty conversation id", ErrInvalidAppend)
	case p == nil || len(p.Messages) == 0:
		return fmt.Errorf("%w: no messages", ErrInvalidAppend)
	case p.At != n:
		return fmt.Errorf("%w: conversation %q holds %d messages, the append expected %d", ErrConflict, id, n, p.At)
	}
	if err := checkMessages(p.Messages); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidAppend, err)
	}
	if p.Resolves != "" {
		if pause == nil || pause.ID != p.Resolves {
			return fmt.Errorf("%w: conversation %q: pause %q is not unresolved", ErrNoOpenPause, id, p.Resolves)
		}
		if !pause.Claimed {
			return fmt.Errorf("%w: pause %q must be claimed before it is resolved", ErrInvalidAppend, p.Resolves)
		}
		if _, ok := p.Messages[0].(*ToolMessage); !ok {
			return fmt.Errorf("%w: a resolution must start with the tool message", ErrInvalidAppend)
		}
	} else if pause != nil {
		return fmt.Errorf("%w: conversation %q, pause %q", ErrPauseOpen, id, pause.ID)
	}
	if p.Pause != nil {
		last, ok := p.Messages[len(p.Messages)-1].(*AssistantMessage)
		if !ok || !last.HasToolCalls() {
			return fmt.Errorf("%w: a pause must be opened on a reply with tool calls", ErrInvalidAppend)
		}
		if p.Pause.ID == "" {
			return fmt.Errorf("%w: empty pause id", ErrInvalidAppend)
		}
	}
	return nil
}

// memoryStore is a [ConversationStore] kept in memory: the store of a
// client built without one, and, through package store/memory, the store
// programs use in tests and single processes. The zero value is ready to
// use; a memoryStore is safe for concurrent use.
type memoryStore struct {
	mu    sync.Mutex
	convs map[string]*Conversation // guarded by mu
}

// newMemoryStore returns an empty store.
func newMemoryStore() ConversationStore { return &memoryStore{} }

// Load implements [ConversationStore].
func (s *memoryStore) Load(ctx context.Context, id string) (*Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[id]
	if c == nil {
		return &Conversation{ID: id}, nil
	}
	out := &Conversation{ID: id, Messages: slices.Clone(c.Messages)}
	if c.Pause != nil {
		out.Pause = c.Pause.clone()
	}
	return out, nil
}

// Append implements [ConversationStore].
func (s *memoryStore) Append(ctx context.Context, id string, p *AppendParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[id]
	var n int
	var pause *PauseRecord
	if c != nil {
		n, pause = len(c.Messages), c.Pause
	}
	if err := validateAppend(id, n, pause, p); err != nil {
		return err
	}
	if c == nil {
		if s.convs == nil {
			s.convs = make(map[string]*Conversation)
		}
		c = &Conversation{ID: id}
		s.convs[id] = c
	}
	if p.Resolves != "" {
		c.Pause = nil
	}
	c.Messages = append(c.Messages, p.Messages...)
	if p.Pause != nil {
		pr := &PauseRecord{ID: p.Pause.ID, Index: len(c.Messages) - 1, Awaiting: slices.Clone(p.Pause.Awaiting), CreatedAt: p.Pause.CreatedAt}
		if pr.CreatedAt.IsZero() {
			pr.CreatedAt = time.Now()
		}
		c.Pause = pr
	}
	return nil
}
