// Package storerows holds what the durable conversation stores share about
// their rows: the stored message format and the checks that turn a damaged
// row into an error wrapping toolgate.ErrCorrupt instead of a panic or a
// silently different conversation.
package storerows

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate"
)

// FormatJSON is the format of a message row whose body is the message's
// JSON form (what toolgate.UnmarshalMessage reads).
const FormatJSON = 1

// Messages collects a conversation's message rows, read in order of their
// sequence numbers.
type Messages struct {
	list []toolgate.Message
}

// Add checks and decodes the next row: its sequence number must be the
// count of rows before it (no gap), its format known and its body a valid
// message.
func (m *Messages) Add(seq, format int64, body []byte) error {
	n := len(m.list)
	if seq != int64(n) {
		return fmt.Errorf("%w: message %d is stored as number %d", toolgate.ErrCorrupt, n, seq)
	}
	msg, err := Decode(format, body)
	if err != nil {
		return fmt.Errorf("message %d: %w", seq, err)
	}
	m.list = append(m.list, msg)
	return nil
}

// ScanError reports a row of the wrong shape at the next position.
func (m *Messages) ScanError(err error) error {
	return fmt.Errorf("%w: message %d: %v", toolgate.ErrCorrupt, len(m.list), err)
}

// List returns the messages collected.
func (m *Messages) List() []toolgate.Message { return m.list }

// Decode decodes a stored message body.
func Decode(format int64, body []byte) (toolgate.Message, error) {
	if format != FormatJSON {
		return nil, fmt.Errorf("%w: unknown message format %d", toolgate.ErrCorrupt, format)
	}
	msg, err := toolgate.UnmarshalMessage(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", toolgate.ErrCorrupt, err)
	}
	return msg, nil
}

// Pause completes a pause record read from a row: awaiting is the JSON list
// of keys, and the creation time is whole seconds plus the exact
// nanoseconds (databases keep less than nanoseconds in their own types).
func Pause(pr *toolgate.PauseRecord, awaiting []byte, unixSeconds, nanos int64) error {
	if err := json.Unmarshal(awaiting, &pr.Awaiting); err != nil {
		return fmt.Errorf("%w: pause %q: awaiting: %v", toolgate.ErrCorrupt, pr.ID, err)
	}
	if nanos < 0 || nanos >= 1e9 {
		return fmt.Errorf("%w: pause %q: created_at_nanos is %d", toolgate.ErrCorrupt, pr.ID, nanos)
	}
	pr.CreatedAt = time.Unix(unixSeconds, nanos).UTC()
	return nil
}

// Claim completes a pause record read from a row with its claim: decisions
// is the JSON list of the claim's decisions ("" for none), started the
// JSON list of the keys started ("" for none, or when the store has set
// pr.Started from a column of its own type). Both are checked: a
// decision must be valid ([toolgate.Decision.UnmarshalJSON]) and a started
// key a non-empty string given once.
func Claim(pr *toolgate.PauseRecord, decisions, started []byte) error {
	if len(decisions) > 0 {
		if err := json.Unmarshal(decisions, &pr.Decisions); err != nil {
			return fmt.Errorf("%w: pause %q: decisions: %v", toolgate.ErrCorrupt, pr.ID, err)
		}
	}
	if len(started) > 0 {
		if err := json.Unmarshal(started, &pr.Started); err != nil {
			return fmt.Errorf("%w: pause %q: started: %v", toolgate.ErrCorrupt, pr.ID, err)
		}
	}
	for i, k := range pr.Started {
		if k == "" || slices.Contains(pr.Started[:i], k) {
			return fmt.Errorf("%w: pause %q: started key %q is empty or repeated", toolgate.ErrCorrupt, pr.ID, k)
		}
	}
	if !pr.Claimed && (pr.ClaimToken != "" || len(pr.Decisions) > 0 || len(pr.Started) > 0) {
		return fmt.Errorf("%w: pause %q: an unclaimed pause holds a claim", toolgate.ErrCorrupt, pr.ID)
	}
	return nil
}

// EncodeClaim returns the JSON form of a claim's decisions ("" for none),
// as [Claim] reads it. Decisions that do not encode (a zero verdict) give
// an error wrapping [toolgate.ErrInvalidAppend].
func EncodeClaim(decisions []toolgate.Decision) (string, error) {
	if len(decisions) == 0 {
		return "", nil
	}
	b, err := json.Marshal(decisions)
	if err != nil {
		return "", fmt.Errorf("%w: decisions: %v", toolgate.ErrInvalidAppend, err)
	}
	return string(b), nil
}
