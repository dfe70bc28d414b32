// Package storekit is for implementers of [toolgate.ConversationStore]:
// the rules every store enforces, as functions a store calls inside its
// transaction, so that every store refuses the same appends, claims and
// marks with the same errors. Programs that only use a store do not need
// it. [toolgatetest.TestStore] checks a store against the same rules.
//
// A store loads the conversation's message count and unresolved pause in
// its transaction, calls the rule of the operation and writes only when it
// returns nil:
//
//	func (s *Store) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
//		tx := s.begin(ctx)
//		defer tx.rollback()
//		n, pause := tx.count(id), tx.pause(id)
//		if err := storekit.ValidateAppend(id, n, pause, p); err != nil {
//			return err
//		}
//		tx.write(id, p)
//		return tx.commit()
//	}
//
// The functions are safe for concurrent use; they read their arguments and
// change nothing.
package storekit

import (
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/storerules"
)

// The core's rules, registered by package toolgate when it is initialised.
var (
	validateAppend = storerules.ValidateAppend.(func(string, int, *toolgate.PauseRecord, *toolgate.AppendParams) error)
	validateClaim  = storerules.ValidateClaim.(func(string, *toolgate.PauseRecord, string, *toolgate.Claim) error)
	validateMark   = storerules.ValidateMark.(func(string, *toolgate.PauseRecord, string, string, []string) error)
)

// ValidateAppend applies the rules of [toolgate.ConversationStore.Append]
// to an append p to conversation id, which holds n messages and the
// unresolved pause pause (nil for none): a non-empty id and at least one
// message, none of them nil; p.At equal to n ([toolgate.ErrConflict]
// otherwise); while a pause is unresolved, only the append that resolves it
// ([toolgate.ErrPauseOpen] otherwise), which must name the claimed pause
// ([toolgate.ErrNoOpenPause] otherwise) and start with the tool message; a
// new pause only on a last message that is a reply with tool calls, with a
// non-empty id. Other broken rules give an error wrapping
// [toolgate.ErrInvalidAppend].
func ValidateAppend(id string, n int, pause *toolgate.PauseRecord, p *toolgate.AppendParams) error {
	return validateAppend(id, n, pause, p)
}

// ValidateClaim applies the rules of
// [toolgate.ConversationStore.ClaimPause] to claim c of pause pauseID in
// conversation id, whose unresolved pause is pr (nil for none): a claim
// with a token, well-formed decisions and distinct non-empty started keys
// ([toolgate.ErrInvalidAppend] otherwise); a takeover with a new token and
// no started keys; pr must be the pause named ([toolgate.ErrNoOpenPause]
// otherwise), unclaimed for a first claim, claimed with the token
// [toolgate.Claim.Supersedes] for a takeover ([toolgate.ErrClaimLost]
// otherwise). A store may instead use an equivalent conditional update.
func ValidateClaim(id string, pr *toolgate.PauseRecord, pauseID string, c *toolgate.Claim) error {
	return validateClaim(id, pr, pauseID, c)
}

// ValidateMark applies the rules of
// [toolgate.ConversationStore.MarkStarted] to marking keys of pause pauseID
// in conversation id as started under the claim token, where pr is the
// conversation's unresolved pause (nil for none): a token and at least one
// key, no empty or repeated key, no key already started
// ([toolgate.ErrInvalidAppend] otherwise), and the pause claimed with token
// ([toolgate.ErrClaimLost] otherwise).
func ValidateMark(id string, pr *toolgate.PauseRecord, pauseID, token string, keys []string) error {
	return validateMark(id, pr, pauseID, token, keys)
}
