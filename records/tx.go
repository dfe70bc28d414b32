package records

import (
	"context"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
)

// Tx is the write transaction of a conversation store as a [Hook] sees
// it: what the hook writes through it commits, or rolls back, together
// with the store's own write. Its methods do what the [Store] methods of
// the same names do, and [Tx.Audit] appends to the audit log kept in the
// same database. A Tx is valid only while its hook runs, and is not safe
// for concurrent use.
type Tx interface {
	// Begin is [Store.Begin] inside the transaction: nil when d was
	// stored, the existing record otherwise.
	Begin(d *Decision) (*Decision, error)
	// Finish is [Store.Finish] inside the transaction.
	Finish(conversationID, pauseID string, outcome Outcome) error
	// AddPending is [Store.AddPending] inside the transaction.
	AddPending(p *Pending) error
	// RemovePending is [Store.RemovePending] inside the transaction.
	RemovePending(conversationID, pauseID string) error
	// Audit appends records to the audit log of the store's database
	// ([Transactional.AuditLog]), sealing them after its head as
	// [audit.Log.Append] does; the chain stays locked until the
	// transaction ends.
	Audit(recs ...*audit.Record) error
	// MarkKey counts the write as an effect of the request holding the
	// idempotency key record (scope, key) with token ([RequestKey.Effects]),
	// so that the record says the write took effect exactly when it
	// committed. It fails with [ErrNotFound] when no record not done is
	// held by token.
	MarkKey(scope, key, token string) error
}

// Notifier is implemented by the [Tx] of stores whose database carries
// notifications (package store/postgres: NOTIFY): Notify sends payload on
// channel when, and only when, the transaction commits, so that a
// listener hears of a change exactly when the change is there to read.
type Notifier interface {
	Notify(channel string, payload []byte) error
}

// Write describes the write of a [toolgate.ConversationStore] in whose
// transaction a [Hook] runs: exactly one of Append, Claim and Started is
// set. Its values are the caller's; a hook must not modify them.
type Write struct {
	ConversationID string
	// Append is the parameters of [toolgate.ConversationStore.Append].
	Append *toolgate.AppendParams
	// PauseCreatedAt is the creation time the store recorded for the
	// pause an append opens (Append.Pause.CreatedAt, or the store's clock
	// when that is zero); zero for other writes.
	PauseCreatedAt time.Time
	// PauseID names the pause of a claim or a mark.
	PauseID string
	// Claim is the claim of [toolgate.ConversationStore.ClaimPause].
	Claim *toolgate.Claim
	// Started are the keys of [toolgate.ConversationStore.MarkStarted].
	Started []string
}

// Hook runs inside the transaction of a conversation store's write, after
// the store's rules have passed and its own changes are made, before it
// commits. An error rolls the whole write back, the store's changes
// included, and is returned, wrapped, by the store's method.
type Hook func(ctx context.Context, tx Tx, w *Write) error

// Transactional is implemented by the record stores whose database also
// keeps conversations and an audit log (those of packages store/sqlite
// and store/postgres): a [Hook] given to [WithHook] for such a store runs
// inside every write its conversation store makes with the context.
type Transactional interface {
	Store
	// AuditLog returns the audit log in the store's database, the one
	// [Tx.Audit] appends to. It returns the same value on every call.
	AuditLog() audit.Log
	// ConversationStore returns the conversation store whose writes run
	// the hooks given for this store: the one that made it. It returns the
	// same value on every call.
	ConversationStore() toolgate.ConversationStore
}

// ConversationLoader is implemented by the [Transactional] record stores
// that read a conversation's record together with the conversation as
// their [Transactional.ConversationStore] loads it, in one statement (one
// snapshot, one round trip): package store/postgres. The record is what
// [Store.Conversation] returns, the conversation what
// [toolgate.ConversationStore.Load] returns; without a record the error
// wraps [ErrNotFound].
type ConversationLoader interface {
	LoadConversation(ctx context.Context, id string) (*Conversation, *toolgate.Conversation, error)
}

type hookKey struct{}

type hookValue struct {
	store Store
	hook  Hook
}

// WithHook returns a context that carries h for the record store rs: a
// conversation store sharing rs's database runs h inside the transaction
// of each write it makes with the context (or one derived from it) —
// [toolgate.ConversationStore.Append], ClaimPause and MarkStarted — and
// any other store ignores it. Whether h ran is for h to note. A nil h
// removes the hook.
//
// rs may wrap the record store of the database (a store that passes its
// calls on, for instrumentation, say): when it has a method Unwrap() Store
// returning the store it wraps, the hook is for the store it unwraps to.
func WithHook(ctx context.Context, rs Store, h Hook) context.Context {
	if h == nil {
		return context.WithValue(ctx, hookKey{}, (*hookValue)(nil))
	}
	return context.WithValue(ctx, hookKey{}, &hookValue{store: unwrap(rs), hook: h})
}

// unwrap returns the store rs wraps, following Unwrap methods.
func unwrap(rs Store) Store {
	for range 16 {
		u, ok := rs.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		rs = u.Unwrap()
	}
	return rs
}

// HookFor returns the hook ctx carries for the record store rs, or nil.
// Conversation stores call it with their own record store.
func HookFor(ctx context.Context, rs Store) Hook {
	v, _ := ctx.Value(hookKey{}).(*hookValue)
	if v == nil || v.store != rs {
		return nil
	}
	return v.hook
}
