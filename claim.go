package toolgate

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Claim is a resumption's claim on a pause, given to
// [ConversationStore.ClaimPause]: who holds it, since when, and what it
// will do. The store keeps it with the pause ([PauseRecord.ClaimToken],
// [PauseRecord.ClaimedAt], [PauseRecord.Decisions]) so that a claimant that
// dies can be recovered from ([Client.RecoverPause]).
type Claim struct {
	// Token names the claim: [ConversationStore.MarkStarted] accepts only
	// the current claim's token. It must not be empty and, for a takeover,
	// must differ from Supersedes. The client uses a random value.
	Token string
	// At is when the claim is made. Zero: the store's clock, now.
	At time.Time
	// Decisions are what the claimant will do, one per call of the paused
	// reply; a recovery finishes the claim with them. nil: the claim runs
	// no call ([Client.ExpireOpenPause]). The store keeps a copy.
	Decisions []Decision
	// Started lists the keys of calls recorded as started together with
	// the claim, in the same atomic write, as [ConversationStore.MarkStarted]
	// would record them right after it: a resumption claims the pause as
	// its first calls start. Keys must be non-empty and distinct; a
	// takeover starts nothing.
	Started []string
	// TakeOver makes the claim replace the pause's current claim, which
	// must be the one with token Supersedes (as [Conversation.Pause] showed
	// it; "" for a claim recorded before claims kept tokens). The keys
	// already started are kept. false: the pause must be unclaimed.
	TakeOver bool
	// Supersedes is the token of the claim taken over; only read with
	// TakeOver.
	Supersedes string
}

// validateClaim applies the rules every store enforces for
// [ConversationStore.ClaimPause] on conversation id whose unresolved pause
// is pr (nil for none); storekit.ValidateClaim publishes it.
func validateClaim(id string, pr *PauseRecord, pauseID string, c *Claim) error {
	switch {
	case c == nil || c.Token == "":
		return fmt.Errorf("%w: a claim needs a token", ErrInvalidAppend)
	case c.TakeOver && c.Token == c.Supersedes:
		return fmt.Errorf("%w: a takeover needs a new token", ErrInvalidAppend)
	}
	for _, d := range c.Decisions {
		if err := d.check(); err != nil {
			return fmt.Errorf("%w: the claim's decisions: %w", ErrInvalidAppend, err)
		}
	}
	if len(c.Started) > 0 && c.TakeOver {
		return fmt.Errorf("%w: a takeover starts no call", ErrInvalidAppend)
	}
	for i, k := range c.Started {
		if k == "" || slices.Contains(c.Started[:i], k) {
			return fmt.Errorf("%w: the claim's started keys are empty or repeated", ErrInvalidAppend)
		}
	}
	switch {
	case pr == nil || pauseID == "" || pr.ID != pauseID:
		return fmt.Errorf("%w: conversation %q, pause %q", ErrNoOpenPause, id, pauseID)
	case !c.TakeOver && pr.Claimed:
		return fmt.Errorf("%w: conversation %q, pause %q is already claimed", ErrNoOpenPause, id, pauseID)
	case c.TakeOver && !pr.Claimed:
		return fmt.Errorf("%w: conversation %q, pause %q is not claimed", ErrNoOpenPause, id, pauseID)
	case c.TakeOver && pr.ClaimToken != c.Supersedes:
		return fmt.Errorf("%w: conversation %q, pause %q is claimed by another claimant", ErrClaimLost, id, pauseID)
	}
	return nil
}

// validateMark applies the rules every store enforces for
// [ConversationStore.MarkStarted] on conversation id whose unresolved pause
// is pr (nil for none); storekit.ValidateMark publishes it.
func validateMark(id string, pr *PauseRecord, pauseID, token string, keys []string) error {
	if token == "" {
		return fmt.Errorf("%w: marking calls started needs the claim's token", ErrInvalidAppend)
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys to mark started", ErrInvalidAppend)
	}
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: empty key", ErrInvalidAppend)
		}
		if slices.Contains(keys[:i], k) {
			return fmt.Errorf("%w: key %q is given twice", ErrInvalidAppend, k)
		}
	}
	if pr == nil || pr.ID != pauseID || !pr.Claimed || pr.ClaimToken != token {
		return fmt.Errorf("%w: conversation %q, pause %q", ErrClaimLost, id, pauseID)
	}
	for _, k := range keys {
		if slices.Contains(pr.Started, k) {
			return fmt.Errorf("%w: call %q of pause %q was already started", ErrInvalidAppend, k, pauseID)
		}
	}
	return nil
}

// clone returns a deep copy of pr.
func (pr *PauseRecord) clone() *PauseRecord {
	out := *pr
	out.Awaiting = slices.Clone(pr.Awaiting)
	out.Decisions = slices.Clone(pr.Decisions)
	out.Started = slices.Clone(pr.Started)
	return &out
}

// ClaimPause implements [ConversationStore].
func (s *memoryStore) ClaimPause(ctx context.Context, id, pauseID string, c *Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var pr *PauseRecord
	if conv := s.convs[id]; conv != nil {
		pr = conv.Pause
	}
	if err := validateClaim(id, pr, pauseID, c); err != nil {
		return err
	}
	at := c.At
	if at.IsZero() {
		at = time.Now()
	}
	pr.Claimed, pr.ClaimedAt, pr.ClaimToken, pr.Decisions = true, at, c.Token, slices.Clone(c.Decisions)
	pr.Started = append(pr.Started, c.Started...)
	return nil
}

// MarkStarted implements [ConversationStore].
func (s *memoryStore) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var pr *PauseRecord
	if conv := s.convs[id]; conv != nil {
		pr = conv.Pause
	}
	if err := validateMark(id, pr, pauseID, token, keys); err != nil {
		return err
	}
	pr.Started = append(pr.Started, keys...)
	return nil
}
