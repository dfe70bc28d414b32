package audit

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
)

// Checkpoint is a signed statement that a log's head was a given record
// at a given time: an [Anchor] that whoever holds the public key can
// check, so that checkpoints can be kept beside the log itself. Someone
// who can write the log but lacks the private key can delete the records
// after the last checkpoint, never the checkpointed record, and cannot
// make a checkpoint of a shortened log newer than the last real one;
// publishing checkpoints regularly bounds what can go unnoticed.
//
// JSON: {"v":1,"seq":42,"hash":"<64 hex>","time":"2026-05-01T12:00:00.000000000Z",
// "signature":"<base64 of 64 bytes>"}.
type Checkpoint struct {
	Anchor Anchor
	// Time is when the checkpoint was made, in UTC.
	Time time.Time
	// Signature is the ed25519 signature of [Checkpoint.SignedBytes].
	Signature []byte
}

// checkpointDomain is the first line of the bytes a checkpoint signs.
const checkpointDomain = "toolgate-audit-checkpoint-v1"

// ErrBadCheckpoint is matched by the errors of [Checkpoint.Verify] and
// [ParseCheckpoint].
var ErrBadCheckpoint = errors.New("audit: invalid checkpoint")

// SignedBytes returns what the checkpoint's signature covers: three lines,
// "toolgate-audit-checkpoint-v1", the anchor's text form SEQ:HASH, and the
// time as in a record's JSON form, each ended by a newline.
func (c *Checkpoint) SignedBytes() []byte {
	return fmt.Appendf(nil, "%s\n%s\n%s\n", checkpointDomain, c.Anchor, c.Time.UTC().Format(timeLayout))
}

// NewCheckpoint returns the checkpoint of head at time t (now when zero),
// signed with key. It panics when key is not an ed25519 private key of
// the right size, a programming error.
func NewCheckpoint(key ed25519.PrivateKey, head Anchor, t time.Time) *Checkpoint {
	if len(key) != ed25519.PrivateKeySize {
		panic("audit: NewCheckpoint with a key that is not an ed25519 private key")
	}
	if t.IsZero() {
		t = time.Now()
	}
	c := &Checkpoint{Anchor: head, Time: t.UTC().Round(0)}
	c.Signature = ed25519.Sign(key, c.SignedBytes())
	return c
}

// Verify checks the checkpoint's signature with the public key pub.
func (c *Checkpoint) Verify(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: the public key is not an ed25519 key", ErrBadCheckpoint)
	}
	if c.Anchor.Seq != 0 && !isHex64(c.Anchor.Hash) {
		return fmt.Errorf("%w: hash %q", ErrBadCheckpoint, c.Anchor.Hash)
	}
	if !ed25519.Verify(pub, c.SignedBytes(), c.Signature) {
		return fmt.Errorf("%w: the signature does not match the key", ErrBadCheckpoint)
	}
	return nil
}

type checkpointJSON struct {
	V         int    `json:"v"`
	Seq       uint64 `json:"seq"`
	Hash      string `json:"hash"`
	Time      string `json:"time"`
	Signature string `json:"signature"`
}

// MarshalJSON implements [encoding/json.Marshaler].
func (c Checkpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkpointJSON{V: Version, Seq: c.Anchor.Seq, Hash: c.Anchor.Hash,
		Time: c.Time.UTC().Format(timeLayout), Signature: base64.StdEncoding.EncodeToString(c.Signature)})
}

// ParseCheckpoint decodes a checkpoint's JSON form strictly (unknown
// members refused). It does not check the signature: [Checkpoint.Verify]
// does. Hostile input gives an error matching [ErrBadCheckpoint], never a
// panic.
func ParseCheckpoint(data []byte) (*Checkpoint, error) {
	var v checkpointJSON
	if err := json.Unmarshal(data, &v, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCheckpoint, err)
	}
	if v.V != Version {
		return nil, fmt.Errorf("%w: version %d", ErrBadCheckpoint, v.V)
	}
	t, err := time.Parse(timeLayout, v.Time)
	if err != nil {
		return nil, fmt.Errorf("%w: time %q", ErrBadCheckpoint, v.Time)
	}
	sig, err := base64.StdEncoding.DecodeString(v.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: the signature is not 64 bytes in base64", ErrBadCheckpoint)
	}
	if (v.Seq == 0) != (v.Hash == "") || v.Hash != "" && !isHex64(v.Hash) {
		return nil, fmt.Errorf("%w: anchor %d:%q", ErrBadCheckpoint, v.Seq, v.Hash)
	}
	return &Checkpoint{Anchor: Anchor{Seq: v.Seq, Hash: v.Hash}, Time: t, Signature: sig}, nil
}
