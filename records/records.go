package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/argdigest"
)

// Store keeps the records of the approval service: who owns each
// conversation, the decision record of each pause, the index of the pauses
// that wait for a decision, the first approvals of pauses under a
// two-person rule, and sticky grants.
//
// Every method may be called concurrently, also from several processes
// sharing one database: [Store.Begin] and [Store.Approve] are atomic
// insert-if-absent operations, so of concurrent callers for one pause
// exactly one wins and the others get the winner's record. Values passed in
// are not retained; values returned are the caller's.
//
// Implementations: [Memory] here, and the SQL stores' Records methods
// (packages store/sqlite and store/postgres). recordstest.Run checks one.
type Store interface {
	// CreateConversation records a new conversation. It fails with
	// [ErrExists] when the id is taken and [ErrInvalid] when c has an empty
	// ID, Agent or Owner.ID.
	CreateConversation(ctx context.Context, c *Conversation) error
	// Conversation returns the conversation with the id, or [ErrNotFound].
	Conversation(ctx context.Context, id string) (*Conversation, error)
	// ListConversations returns a page of conversations in creation order.
	ListConversations(ctx context.Context, p *ListParams) (*ConversationPage, error)

	// Begin starts the decision of a pause: it stores d unless the pause
	// (d.ConversationID, d.PauseID) already has a record, atomically. It
	// returns nil when d was stored, and a copy of the existing record
	// otherwise, which the caller must treat as "somebody else decided".
	Begin(ctx context.Context, d *Decision) (*Decision, error)
	// Finish sets the outcome of a begun decision. [OutcomeNone] deletes
	// the record instead, releasing the pause to be decided again. An
	// outcome that resolves the pause ([Outcome.Resolves]) also removes the
	// pause from the index, in the same atomic write, as [Store.RemovePending]
	// would. Such an outcome is final: Finish of a record that has one
	// changes nothing and returns nil, so that of two writers settling one
	// pause (two recoveries, say) the first one's outcome stands. It fails
	// with [ErrNotFound] when the pause has no record, and then changes
	// nothing.
	Finish(ctx context.Context, conversationID, pauseID string, outcome Outcome) error
	// Decision returns the record of a pause, or [ErrNotFound].
	Decision(ctx context.Context, conversationID, pauseID string) (*Decision, error)
	// Decisions returns the records of a conversation's pauses in the
	// order they were begun; none is an empty slice.
	Decisions(ctx context.Context, conversationID string) ([]Decision, error)

	// AddPending puts the open pause of a conversation in the index,
	// replacing the conversation's previous entry (a conversation has at
	// most one open pause).
	AddPending(ctx context.Context, p *Pending) error
	// RemovePending removes the conversation's entry when it names
	// pauseID; removing an absent entry is not an error.
	RemovePending(ctx context.Context, conversationID, pauseID string) error
	// ListPending returns a page of the index in the order the pauses were
	// created (ties by conversation id), only of the entries p.Scopes
	// match when it has any.
	ListPending(ctx context.Context, p *ListParams) (*PendingPage, error)

	// Approve records the first approval of a pause under a two-person
	// rule unless it has one, atomically. It returns nil when a was
	// stored, and a copy of the existing approval otherwise.
	Approve(ctx context.Context, a *Approval) (*Approval, error)
	// Approval returns the first approval of a pause, or [ErrNotFound].
	Approval(ctx context.Context, conversationID, pauseID string) (*Approval, error)

	// AddGrant stores a sticky grant. It fails with [ErrExists] when the
	// id is taken.
	AddGrant(ctx context.Context, g *Grant) error
	// Grants returns the grants of a conversation still live at t
	// (ExpiresAt after t), in the order they were added.
	Grants(ctx context.Context, conversationID string, t time.Time) ([]Grant, error)
	// RevokeGrant ends the grant with the id in the conversation at t: it
	// is no longer live from t on (its ExpiresAt becomes t), and it returns
	// the grant as it was. It fails with [ErrNotFound], and changes
	// nothing, when the conversation has no such grant live at t.
	RevokeGrant(ctx context.Context, conversationID, id string, t time.Time) (*Grant, error)

	// The records of idempotency keys (keys.go).
	KeyStore
	// The sessions of signed-in browsers (sessions.go).
	SessionStore
}

// Errors of a [Store]; implementations wrap them.
var (
	// ErrNotFound: no such record.
	ErrNotFound = errors.New("records: not found")
	// ErrExists: a record with the same id exists.
	ErrExists = errors.New("records: already exists")
	// ErrInvalid: the arguments cannot be stored (an empty id, an unknown
	// outcome or source, a cursor naming no record).
	ErrInvalid = errors.New("records: invalid")
)

// Conversation is what the service knows of a conversation besides its
// messages, which the agent's conversation store keeps.
type Conversation struct {
	ID    string
	Agent string
	// Owner is the principal who created the conversation; its turns run
	// for it.
	Owner     toolgate.Principal
	CreatedAt time.Time
}

// Source says who or what made a decision.
type Source string

// The sources of a [Decision]. Their values are stored and sent over the
// API; they never change.
const (
	// SourcePerson: a person decided ([Decision.DecidedBy]; two people
	// under a two-person rule, [Decision.Approvers]).
	SourcePerson Source = "person"
	// SourceSticky: live sticky grants allowed every awaiting call
	// ([Decision.Grants]).
	SourceSticky Source = "sticky"
	// SourceExpiry: nobody decided in time; the pause expired.
	SourceExpiry Source = "expiry"
)

// Outcome is what came of a decision.
type Outcome string

// The outcomes of a [Decision]. Their values are stored and sent over the
// API; they never change.
const (
	// OutcomeNone is not an outcome: given to [Store.Finish] it deletes
	// the record.
	OutcomeNone Outcome = ""
	// OutcomeDeciding: the resumed turn runs.
	OutcomeDeciding Outcome = "deciding"
	// OutcomeDecided: the resumed turn ran.
	OutcomeDecided Outcome = "decided"
	// OutcomeFailed: the turn failed after the pause was claimed.
	OutcomeFailed Outcome = "failed"
	// OutcomeExpired: the pause outlived its time-to-live.
	OutcomeExpired Outcome = "expired"
	// OutcomeRecovered: the resumption stopped before storing its results
	// (its process died, its store failed), after claiming the pause or
	// before, and a recovery finished it: calls recorded as started
	// answered "interrupted", the others ran.
	OutcomeRecovered Outcome = "recovered"
)

// Decision is who or what decided a pause, how, and what came of it.
//
// JSON: {"pause_id","source","decided_by","approvers","grants",
// "decided_at","decisions","outcome"}; approvers and grants are left out
// when empty.
type Decision struct {
	// ConversationID and PauseID name the pause.
	ConversationID string `json:"-"`
	PauseID        string `json:"pause_id"`
	Source         Source `json:"source"`
	// DecidedBy is the id of the principal whose request resolved the
	// pause, for SourcePerson; "" otherwise.
	DecidedBy string `json:"decided_by"`
	// Approvers are the principals who approved, in order, under a
	// two-person rule (the first approver, then DecidedBy); nil otherwise.
	Approvers []string `json:"approvers,omitempty"`
	// Grants are the sticky grants that allowed the calls, for
	// SourceSticky; nil otherwise.
	Grants []GrantRef `json:"grants,omitempty"`
	// DecidedAt is when the decision began (or the pause expired).
	DecidedAt time.Time `json:"decided_at"`
	// Decisions are the decisions the pause was resumed with; empty for
	// an expired pause.
	Decisions []toolgate.Decision `json:"decisions"`
	// Edits are the calls allowed with edited arguments, with the model's
	// arguments and the approver's; nil when none was edited.
	Edits   []Edit  `json:"edits,omitempty"`
	Outcome Outcome `json:"outcome"`
}

// Edit is one call a person allowed with edited arguments: what the model
// asked for and what ran instead. The tool cannot change.
//
// JSON: {"key","tool","original","edited"}.
type Edit struct {
	Key  string `json:"key"`
	Tool string `json:"tool"`
	// Original is the raw JSON text of the model's arguments, as stored.
	Original string `json:"original"`
	// Edited is the approver's arguments, a JSON object.
	Edited json.RawMessage `json:"edited"`
}

// GrantRef names a sticky grant a decision used, and who granted it.
//
// JSON: {"id","granted_by"}.
type GrantRef struct {
	ID        string `json:"id"`
	GrantedBy string `json:"granted_by"`
}

// Pending is an entry of the index of open pauses: the inbox and the
// expiry sweeper read it instead of every conversation.
type Pending struct {
	ConversationID string
	Agent          string
	PauseID        string
	// CreatedAt is when the pause was stored, as the conversation store
	// says ([toolgate.PauseRecord.CreatedAt]).
	CreatedAt time.Time
	// Tools are the names of the tools of the calls that await a
	// decision. Stores keep them sorted, each once ([PendingTools]). nil
	// (or empty): not known — an entry indexed before entries kept their
	// tools — which every [Scope] of the agent matches.
	Tools []string
}

// Scope is a part of the index of open pauses: the pauses of Agent that
// await a decision on a call of one of Tools. nil Tools: of any tool.
type Scope struct {
	Agent string
	Tools []string
}

// Matches reports whether the index entry p is in one of scopes: its
// agent is a scope's, and that scope takes any tool, or p awaits one of
// the scope's tools, or p's tools are not known.
func (p *Pending) Matches(scopes []Scope) bool {
	for _, sc := range scopes {
		if sc.Agent != p.Agent {
			continue
		}
		if sc.Tools == nil || len(p.Tools) == 0 {
			return true
		}
		for _, t := range p.Tools {
			if slices.Contains(sc.Tools, t) {
				return true
			}
		}
	}
	return false
}

// PendingTools returns tools sorted, each once, as stores keep
// [Pending.Tools]; nil when tools is empty. tools is not changed.
func PendingTools(tools []string) []string {
	if len(tools) == 0 {
		return nil
	}
	out := slices.Clone(tools)
	slices.Sort(out)
	return slices.Compact(out)
}

// Approval is the first approval of a pause under a two-person rule.
type Approval struct {
	ConversationID string
	PauseID        string
	// By is the id of the approving principal.
	By string
	At time.Time
	// Decisions are the decisions the first approver sent; the second
	// approver must send the same.
	Decisions []toolgate.Decision
}

// Grant is a sticky approval: calls of Tool in the conversation are
// allowed without asking until ExpiresAt.
type Grant struct {
	ID             string
	ConversationID string
	Tool           string
	// ArgumentsDigest, when not "", limits the grant to calls whose
	// arguments have this digest (see [ArgumentsDigest]).
	ArgumentsDigest string
	GrantedBy       string
	GrantedAt       time.Time
	ExpiresAt       time.Time
}

// Covers reports whether g allows a call of tool with arguments at time t.
func (g *Grant) Covers(tool, arguments string, t time.Time) bool {
	return g.Tool == tool && t.Before(g.ExpiresAt) &&
		(g.ArgumentsDigest == "" || argdigest.Current(g.ArgumentsDigest) && g.ArgumentsDigest == ArgumentsDigest(arguments))
}

// ListParams select a page of a listing. A nil *ListParams means the
// first page of everything, of [DefaultLimit] items.
type ListParams struct {
	// Owner, when not "", keeps only the conversations whose owner has
	// this id. Ignored by [Store.ListPending].
	Owner string
	// Scopes, when not empty, keeps only the index entries that one of
	// them matches ([Pending.Matches]): the pauses a principal may decide,
	// so that the cost of reading them follows those pauses, not every
	// open one. Ignored by [Store.ListConversations].
	Scopes []Scope
	// After is the cursor of the previous page (its Next); "" starts at
	// the beginning. A cursor naming no record fails with [ErrInvalid].
	After string
	// Limit is the largest number of items returned. 0: [DefaultLimit];
	// more than [MaxLimit]: MaxLimit.
	Limit int
}

// The page sizes of [ListParams].
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// limit returns the page size p asks for.
func (p *ListParams) limit() int {
	switch {
	case p == nil || p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}

// Limit returns the page size p asks for, as [ListParams.Limit] defines
// it; p may be nil. Implementations of [Store] use it.
func Limit(p *ListParams) int { return p.limit() }

// ConversationPage is a page of conversations.
type ConversationPage struct {
	Conversations []Conversation
	// Next is the cursor of the next page; "" on the last page.
	Next string
}

// PendingPage is a page of the index of open pauses.
type PendingPage struct {
	Pending []Pending
	// Next is the cursor of the next page; "" on the last page.
	Next string
}

// CheckConversation returns an error wrapping [ErrInvalid] when c cannot
// be stored.
func CheckConversation(c *Conversation) error {
	switch {
	case c == nil:
		return fmt.Errorf("%w: nil conversation", ErrInvalid)
	case c.ID == "", c.Agent == "", c.Owner.ID == "":
		return fmt.Errorf("%w: conversation with an empty id, agent or owner", ErrInvalid)
	}
	return nil
}

// CheckDecision returns an error wrapping [ErrInvalid] when d cannot be
// begun.
func CheckDecision(d *Decision) error {
	switch {
	case d == nil:
		return fmt.Errorf("%w: nil decision", ErrInvalid)
	case d.ConversationID == "" || d.PauseID == "":
		return fmt.Errorf("%w: decision with an empty conversation or pause id", ErrInvalid)
	case d.Source != SourcePerson && d.Source != SourceSticky && d.Source != SourceExpiry:
		return fmt.Errorf("%w: decision source %q", ErrInvalid, d.Source)
	}
	return CheckOutcome(d.Outcome, false)
}

// Resolves reports whether o ends its pause for good — decided, expired or
// recovered — so that [Store.Finish] also takes the pause out of the index.
// A failed resumption stays indexed: the recovery of claims reads it there.
func (o Outcome) Resolves() bool {
	return o == OutcomeDecided || o == OutcomeExpired || o == OutcomeRecovered
}

// CheckOutcome returns an error wrapping [ErrInvalid] unless o is an
// outcome; noneOK accepts [OutcomeNone].
func CheckOutcome(o Outcome, noneOK bool) error {
	switch o {
	case OutcomeDeciding, OutcomeDecided, OutcomeFailed, OutcomeExpired, OutcomeRecovered:
		return nil
	case OutcomeNone:
		if noneOK {
			return nil
		}
	}
	return fmt.Errorf("%w: outcome %q", ErrInvalid, o)
}

// CheckPending returns an error wrapping [ErrInvalid] when p cannot be
// indexed.
func CheckPending(p *Pending) error {
	if p == nil || p.ConversationID == "" || p.PauseID == "" || p.Agent == "" {
		return fmt.Errorf("%w: pending pause with an empty conversation, pause or agent", ErrInvalid)
	}
	return nil
}

// CheckApproval returns an error wrapping [ErrInvalid] when a cannot be
// stored.
func CheckApproval(a *Approval) error {
	if a == nil || a.ConversationID == "" || a.PauseID == "" || a.By == "" {
		return fmt.Errorf("%w: approval with an empty conversation, pause or approver", ErrInvalid)
	}
	return nil
}

// CheckGrant returns an error wrapping [ErrInvalid] when g cannot be
// stored.
func CheckGrant(g *Grant) error {
	if g == nil || g.ID == "" || g.ConversationID == "" || g.Tool == "" || g.GrantedBy == "" {
		return fmt.Errorf("%w: grant with an empty id, conversation, tool or granter", ErrInvalid)
	}
	return nil
}

// Clone returns a deep copy of d.
func (d *Decision) Clone() *Decision {
	out := *d
	out.Approvers = slices.Clone(d.Approvers)
	out.Grants = slices.Clone(d.Grants)
	out.Decisions = slices.Clone(d.Decisions)
	out.Edits = slices.Clone(d.Edits)
	return &out
}

// Clone returns a deep copy of c.
func (c *Conversation) Clone() *Conversation {
	out := *c
	out.Owner.Roles = slices.Clone(c.Owner.Roles)
	if c.Owner.Attributes != nil {
		out.Owner.Attributes = make(map[string]string, len(c.Owner.Attributes))
		for k, v := range c.Owner.Attributes {
			out.Owner.Attributes[k] = v
		}
	}
	return &out
}

// Clone returns a deep copy of a.
func (a *Approval) Clone() *Approval {
	out := *a
	out.Decisions = slices.Clone(a.Decisions)
	return &out
}
