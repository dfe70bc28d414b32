package records

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate"
)

// Session is a browser's sign-in to the service's web pages, kept in the
// record store so that every instance on one database knows it: a
// browser signed in on one instance is signed in on all, and signing out
// on one ends the session on all.
type Session struct {
	// ID names the session: the server stores a digest of the cookie's
	// value, never the value itself.
	ID string
	// Principal is whom the session runs as, for a sign-in through an
	// identity provider; for a sign-in with an API key the server reads
	// the key's principal from its key table instead (see KeyHash).
	Principal toolgate.Principal
	// KeyHash is the SHA-256 of the API key the browser signed in with;
	// nil for a sign-in through an identity provider.
	KeyHash []byte
	// ExpiresAt is when the session ends unless it is ended before.
	ExpiresAt time.Time
}

// SessionStore keeps the sessions of signed-in browsers, and the secrets
// the instances on one database share; every [Store] is one. Its methods
// are safe for concurrent use, also from several processes sharing one
// database.
type SessionStore interface {
	// AddSession stores s. When Principal.ID already holds max or more
	// sessions live at t, the one that expires first ends, so that one
	// principal cannot grow the table without end (max 0: no bound). It
	// fails with [ErrExists] when the id is taken and [ErrInvalid] when s
	// has an empty ID or Principal.ID, a KeyHash of another size than
	// SHA-256's, or expires at or before t.
	AddSession(ctx context.Context, s *Session, max int, t time.Time) error
	// Session returns the session with the id when it is live at t, or
	// [ErrNotFound].
	Session(ctx context.Context, id string, t time.Time) (*Session, error)
	// EndSession ends the session with the id; ending an absent session
	// is not an error.
	EndSession(ctx context.Context, id string) error
	// PruneSessions deletes the sessions expired at t and returns how
	// many it deleted.
	PruneSessions(ctx context.Context, t time.Time) (int, error)
	// SharedSecret returns the secret stored under name, storing fresh
	// there first when there is none, atomically: every caller, in any
	// process on the database, gets the same secret. It fails with
	// [ErrInvalid] when name or fresh is empty.
	SharedSecret(ctx context.Context, name string, fresh []byte) ([]byte, error)
}

// CheckSession returns an error wrapping [ErrInvalid] when s cannot be
// stored at t.
func CheckSession(s *Session, t time.Time) error {
	switch {
	case s == nil:
		return fmt.Errorf("%w: nil session", ErrInvalid)
	case s.ID == "" || s.Principal.ID == "":
		return fmt.Errorf("%w: session with an empty id or principal", ErrInvalid)
	case s.KeyHash != nil && len(s.KeyHash) != sha256.Size:
		return fmt.Errorf("%w: session key hash of %d bytes", ErrInvalid, len(s.KeyHash))
	case !s.ExpiresAt.After(t):
		return fmt.Errorf("%w: session expiring before it starts", ErrInvalid)
	}
	return nil
}

// Clone returns a deep copy of s.
func (s *Session) Clone() *Session {
	out := *s
	c := (&Conversation{Owner: s.Principal}).Clone()
	out.Principal = c.Owner
	out.KeyHash = slices.Clone(s.KeyHash)
	return &out
}

// The methods of [Memory] as a [SessionStore].

func (m *Memory) AddSession(ctx context.Context, s *Session, max int, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckSession(s, t); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[string]*Session)
	}
	if old := m.sessions[s.ID]; old != nil {
		return fmt.Errorf("records: session: %w", ErrExists)
	}
	var held []*Session
	for _, o := range m.sessions {
		if o.Principal.ID == s.Principal.ID && o.ExpiresAt.After(t) {
			held = append(held, o)
		}
	}
	if max > 0 && len(held) >= max {
		slices.SortFunc(held, func(a, b *Session) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
		for _, o := range held[:len(held)-max+1] {
			delete(m.sessions, o.ID)
		}
	}
	m.sessions[s.ID] = s.Clone()
	return nil
}

func (m *Memory) Session(ctx context.Context, id string, t time.Time) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil || !s.ExpiresAt.After(t) {
		return nil, fmt.Errorf("records: session: %w", ErrNotFound)
	}
	return s.Clone(), nil
}

func (m *Memory) EndSession(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return nil
}

func (m *Memory) PruneSessions(ctx context.Context, t time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return pruneExpired(m.sessions, t, func(s *Session) time.Time { return s.ExpiresAt }), nil
}

func (m *Memory) SharedSecret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name == "" || len(fresh) == 0 {
		return nil, fmt.Errorf("%w: shared secret with an empty name or value", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.secrets == nil {
		m.secrets = make(map[string][]byte)
	}
	if v, ok := m.secrets[name]; ok {
		return slices.Clone(v), nil
	}
	m.secrets[name] = slices.Clone(fresh)
	return slices.Clone(fresh), nil
}
