package privacy

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoConversationVaults is returned by [Guard.ConversationRewriter] for a
// guard without [GuardOptions.Vaults]: its tokens live for one request
// only, so none can be revealed later.
var ErrNoConversationVaults = errors.New("privacy: the guard keeps no conversation vaults")

// ConversationRewriter returns a [Rewriter] over the guard's scanner and
// the stored vault of a conversation (an empty vault when none is stored
// yet), for showing a stored conversation to a person: [Rewriter.Restore]
// and [Rewriter.RestoreJSON] give the originals behind the tokens the
// model saw. Tokens it issues are never saved: the stored vault is not
// changed. It fails with [ErrNoConversationVaults] for a guard without
// conversation vaults, and when the stored vault does not open (see
// [OpenVault]).
//
// The rewriter holds original personal data: show what it restores only
// to those allowed to see it, and keep it out of logs.
func (g *Guard) ConversationRewriter(ctx context.Context, conversationID string) (*Rewriter, error) {
	if g.vaults == nil {
		return nil, ErrNoConversationVaults
	}
	vault := NewVault()
	sealed, err := g.vaults.LoadVault(ctx, conversationID)
	if err != nil {
		return nil, fmt.Errorf("privacy: loading the conversation's vault: %w", err)
	}
	if sealed != nil {
		if vault, err = OpenVault(g.key, sealed); err != nil {
			return nil, fmt.Errorf("privacy: opening the conversation's vault: %w", err)
		}
	}
	return NewRewriter(g.scanner, vault), nil
}
