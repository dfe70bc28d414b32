// Package memory is a [toolgate.ConversationStore] kept in memory, for tests
// and programs that run in one process: conversations last as long as the
// store value. It enforces the same rules as every other store (see package
// storekit) and passes [toolgatetest.TestStore]. It is the store a
// [toolgate.Client] built without one uses, privately.
//
// Durable stores are in packages store/sqlite and store/postgres.
package memory

import (
	"context"
	"sync"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/storerules"
)

// newStore is the core's in-memory store, registered by package toolgate
// when it is initialised.
var newStore = storerules.NewMemoryStore.(func() toolgate.ConversationStore)

// Store is a [toolgate.ConversationStore] kept in memory. The zero value is
// an empty store, ready to use; a Store is safe for concurrent use and must
// not be copied after first use.
type Store struct {
	once sync.Once
	s    toolgate.ConversationStore
}

// New returns an empty store.
func New() *Store { return &Store{} }

// store returns the store s keeps its conversations in.
func (s *Store) store() toolgate.ConversationStore {
	s.once.Do(func() { s.s = newStore() })
	return s.s
}

// Load implements [toolgate.ConversationStore].
func (s *Store) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	return s.store().Load(ctx, id)
}

// Append implements [toolgate.ConversationStore].
func (s *Store) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	return s.store().Append(ctx, id, p)
}

// ClaimPause implements [toolgate.ConversationStore].
func (s *Store) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	return s.store().ClaimPause(ctx, id, pauseID, c)
}

// MarkStarted implements [toolgate.ConversationStore].
func (s *Store) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	return s.store().MarkStarted(ctx, id, pauseID, token, keys)
}
