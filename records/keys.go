package records

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// RequestKey is the record of a request sent with an idempotency key: who
// sent it where ([RequestKey.Scope]), a digest of what it asked, and, once
// known, the response it got, which a retry with the same key is answered
// with instead of running the request again.
//
// A record is reserved (by [Store.ReserveKey]) before the request runs,
// held by the request's token. While it runs, every write of the request
// that commits in a store transaction marks the record there
// ([Tx.MarkKey]), so that after any failure the record tells whether
// anything of the request took effect. When the request ends, its response
// is stored ([Store.CompleteKey]), or the record is released
// ([Store.ReleaseKey]).
type RequestKey struct {
	// Scope says whose key it is and for what: the server puts the
	// caller's principal and the endpoint in it, so that equal keys of two
	// callers, or of two endpoints, are two records.
	Scope string
	Key   string
	// Digest identifies the request's content; a retry whose digest
	// differs is another request reusing the key.
	Digest string
	// Token names the request holding the record while it runs.
	Token string
	// Effects counts the writes of the request that committed with a mark
	// ([Tx.MarkKey]).
	Effects int
	// Done is true once the response is stored: Status and Body.
	Done   bool
	Status int
	Body   []byte
	// CreatedAt is when the record was reserved.
	CreatedAt time.Time
	// LockedUntil is when the hold of the request that reserved the record
	// ends, if it has not ended it before (see [Store.ReleaseKey]).
	LockedUntil time.Time
	// ExpiresAt is when the record is forgotten: from then on the key may
	// name a new request.
	ExpiresAt time.Time
}

// KeyStore keeps the records of idempotency keys; every [Store] is one.
// Its methods are safe for concurrent use, also from several processes
// sharing one database.
type KeyStore interface {
	// ReserveKey stores k, not done and without effects, unless (k.Scope,
	// k.Key) has a record live at k.CreatedAt, atomically. It returns nil
	// when k was stored, and a copy of the live record otherwise. A record
	// is live until its ExpiresAt, except that a record not done, without
	// effects, whose LockedUntil has passed is replaced: its request ended
	// or died without changing anything. It fails with [ErrInvalid] when k
	// has an empty Scope, Key, Digest or Token, or expires before it is
	// created.
	ReserveKey(ctx context.Context, k *RequestKey) (*RequestKey, error)
	// CompleteKey stores the response of the request holding the record
	// (scope, key) with token: the record is done, with status and body.
	// It fails with [ErrNotFound], and changes nothing, when there is no
	// such record not done held by token.
	CompleteKey(ctx context.Context, scope, key, token string, status int, body []byte) error
	// ReleaseKey ends the hold of token on the record (scope, key), when
	// the record is not done and token holds it: a record without effects
	// is deleted (a retry runs the request afresh), one with effects keeps
	// them and its hold ends at t (LockedUntil becomes t). Releasing
	// anything else changes nothing and is not an error.
	ReleaseKey(ctx context.Context, scope, key, token string, t time.Time) error
	// PruneKeys deletes the records expired at t (ExpiresAt at or before
	// t) and returns how many it deleted.
	PruneKeys(ctx context.Context, t time.Time) (int, error)
}

// CheckRequestKey returns an error wrapping [ErrInvalid] when k cannot be
// reserved.
func CheckRequestKey(k *RequestKey) error {
	switch {
	case k == nil:
		return fmt.Errorf("%w: nil request key", ErrInvalid)
	case k.Scope == "" || k.Key == "" || k.Digest == "" || k.Token == "":
		return fmt.Errorf("%w: request key with an empty scope, key, digest or token", ErrInvalid)
	case !k.ExpiresAt.After(k.CreatedAt):
		return fmt.Errorf("%w: request key expiring before it is created", ErrInvalid)
	}
	return nil
}

// Replaces reports whether a record k, reserved anew at t, takes the place
// of old: old has expired at t, or it is not done, has no effects, and
// its hold has ended. Implementations of [KeyStore.ReserveKey] use it.
func (old *RequestKey) Replaces(t time.Time) bool {
	return !old.ExpiresAt.After(t) || !old.Done && old.Effects == 0 && !old.LockedUntil.After(t)
}

// Clone returns a deep copy of k.
func (k *RequestKey) Clone() *RequestKey {
	out := *k
	out.Body = slices.Clone(k.Body)
	return &out
}

// The methods of [Memory] as a [KeyStore].

type keyID struct{ scope, key string }

func (m *Memory) ReserveKey(ctx context.Context, k *RequestKey) (*RequestKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckRequestKey(k); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := keyID{k.Scope, k.Key}
	if old := m.keys[id]; old != nil && !old.Replaces(k.CreatedAt) {
		return old.Clone(), nil
	}
	rec := k.Clone()
	rec.Done, rec.Effects, rec.Status, rec.Body = false, 0, 0, nil
	if m.keys == nil {
		m.keys = make(map[keyID]*RequestKey)
	}
	m.keys[id] = rec
	return nil, nil
}

func (m *Memory) CompleteKey(ctx context.Context, scope, key, token string, status int, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.keys[keyID{scope, key}]
	if rec == nil || rec.Done || rec.Token != token {
		return fmt.Errorf("records: request key %q held by %q: %w", key, token, ErrNotFound)
	}
	rec.Done, rec.Status, rec.Body = true, status, slices.Clone(body)
	return nil
}

func (m *Memory) ReleaseKey(ctx context.Context, scope, key, token string, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := keyID{scope, key}
	rec := m.keys[id]
	switch {
	case rec == nil || rec.Done || rec.Token != token:
	case rec.Effects == 0:
		delete(m.keys, id)
	default:
		rec.LockedUntil = t
	}
	return nil
}

func (m *Memory) PruneKeys(ctx context.Context, t time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return pruneExpired(m.keys, t, func(k *RequestKey) time.Time { return k.ExpiresAt }), nil
}

// pruneExpired deletes the entries of m that expire at or before t and
// returns how many it deleted.
func pruneExpired[K comparable, V any](m map[K]V, t time.Time, expiresAt func(V) time.Time) int {
	n := 0
	for id, v := range m {
		if !expiresAt(v).After(t) {
			delete(m, id)
			n++
		}
	}
	return n
}
