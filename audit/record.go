package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/toolgate/toolgate/internal/argdigest"
)

// Version is the version of the record format this package writes and
// reads: the "v" member of a record's JSON form and the domain string at
// the start of its hash input. A record of another version is refused with
// [ProblemUnknownVersion].
const Version = 1

// Kind is the kind of event a [Record] notes. Its values are stable: they
// are stored in records and covered by their hashes.
type Kind string

// The event kinds.
const (
	// KindRequested: a call paused and waits for a decision.
	KindRequested Kind = "requested"
	// KindDecided: a decision on a call was recorded (the reason says
	// allow or deny; the actor says who decided).
	KindDecided Kind = "decided"
	// KindEdited: a call's arguments were changed before it ran; the
	// argument digest is the digest of the edited arguments.
	KindEdited Kind = "edited"
	// KindExecuted: the call ran.
	KindExecuted Kind = "executed"
	// KindDenied: the call was answered with a denial and did not run.
	KindDenied Kind = "denied"
	// KindExpired: the pause expired before a decision; the call did not
	// run.
	KindExpired Kind = "expired"
	// KindRefused: the call was refused before it ran (authorization, a
	// privacy rule, a decision that came too late or twice).
	KindRefused Kind = "refused"
	// KindRevealed: a person was shown the original values behind the
	// privacy tokens of a call or a conversation; the actor says who. It
	// was added after the other kinds: a verifier built before it reports
	// such a record as [ProblemUnknownKind].
	KindRevealed Kind = "revealed"
	// KindRevoked: a person revoked a standing permission, such as a
	// sticky grant (the reason names it); the actor says who. It was added
	// after [KindRevealed]: a verifier built before it reports such a
	// record as [ProblemUnknownKind].
	KindRevoked Kind = "revoked"
)

// Kinds returns every event kind, in a fixed order.
func Kinds() []Kind {
	return []Kind{KindRequested, KindDecided, KindEdited, KindExecuted, KindDenied, KindExpired, KindRefused, KindRevealed, KindRevoked}
}

func (k Kind) valid() bool {
	switch k {
	case KindRequested, KindDecided, KindEdited, KindExecuted, KindDenied, KindExpired, KindRefused, KindRevealed, KindRevoked:
		return true
	}
	return false
}

// Source says what kind of actor caused an event. Its values are stable.
type Source string

// The actor sources.
const (
	// SourcePerson: a person, named by the actor's id (an approver, the
	// end user).
	SourcePerson Source = "person"
	// SourceRule: a policy rule, named by the actor's id.
	SourceRule Source = "rule"
	// SourceStickyGrant: a standing grant a person gave earlier, named by
	// the actor's id.
	SourceStickyGrant Source = "sticky_grant"
	// SourceSystem: the service itself (an expiry, a refusal).
	SourceSystem Source = "system"
)

func (s Source) valid() bool {
	switch s {
	case SourcePerson, SourceRule, SourceStickyGrant, SourceSystem:
		return true
	}
	return false
}

// Actor is who or what caused an event.
//
// JSON: {"id":"...","source":"person"}.
type Actor struct {
	// ID is the principal id (see toolgate.Principal) of a person, the
	// name of a rule or grant, or "" for the system.
	ID     string `json:"id"`
	Source Source `json:"source"`
}

// Record is one event of the audit log.
//
// A record never holds a call's arguments: only their digest (see
// [Digest]). Reason must not quote argument values either; it says what
// happened ("allowed", "denied: over budget", "expired after 15m").
//
// [Log.Append] sets Seq, PrevHash and Hash, and Time when it is zero;
// callers set the other fields. A log that seals records after they
// commit (package github.com/toolgate/toolgate/audit/postgres) also holds
// records not sealed yet: Seq 0, PrevHash and Hash "" ([Record.Unsealed]);
// their JSON form has "seq":0, "prev_hash":"" and "hash":"".
//
// JSON (every member always present, in this order):
//
//	{"v":1,"seq":1,"time":"2026-05-01T12:00:00.000000000Z",
//	 "conversation_id":"...","pause_id":"...","call_key":"...","tool":"...",
//	 "kind":"requested","actor":{"id":"...","source":"person"},
//	 "reason":"...","args_digest":"sha256:<64 hex>",
//	 "prev_hash":"<64 hex, or empty for record 1>","hash":"<64 hex>"}
//
// Time is in UTC with exactly nine fractional digits. Decoding is strict:
// an unknown or repeated member, invalid UTF-8, a version other than
// [Version], an unknown kind or source, or a malformed time, digest or hash
// gives a [*RecordError].
type Record struct {
	// Seq numbers the records of a log from 1, without gaps.
	Seq uint64
	// Time is when the event happened; years 1 to 9999.
	Time time.Time
	// ConversationID, PauseID and CallKey name the call (see
	// toolgate.AssistantMessage.CallKeys); "" when not applicable.
	ConversationID string
	PauseID        string
	CallKey        string
	// Tool is the name of the called tool, as the model saw it.
	Tool  string
	Kind  Kind
	Actor Actor
	// Reason is the outcome or reason in words, never argument values.
	Reason string
	// ArgsDigest is [Digest] (or [KeyedDigest]) of the call's arguments;
	// "" when the event concerns no arguments.
	ArgsDigest string
	// PrevHash is the Hash of the previous record; "" for record 1.
	PrevHash string
	// Hash is [Record.ComputeHash] of this record.
	Hash string
}

// Unsealed reports whether r is a record that a log holds but has not
// sealed into its chain yet: Seq 0 and no PrevHash or Hash. Such a record
// is covered by no hash until it is sealed; [Verify] counts it apart
// ([Report.Unsealed]).
func (r *Record) Unsealed() bool { return r.Seq == 0 && r.PrevHash == "" && r.Hash == "" }

// Anchor returns the record's sequence number and hash: the head of the
// log once the record is appended.
func (r *Record) Anchor() Anchor { return Anchor{Seq: r.Seq, Hash: r.Hash} }

// timeLayout is the form of Time in the JSON form and in the hash input.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// hashDomain is the first string of every record's hash input.
const hashDomain = "toolgate-audit-v1"

// ComputeHash returns the hash of the record: lower-case hex of SHA-256
// over the concatenation, for each of these 13 strings in this order, of
// the string's length in bytes as an 8-byte big-endian unsigned integer
// followed by the string's UTF-8 bytes:
//
//  1. "toolgate-audit-v1"
//  2. Seq in decimal, without leading zeros ("1", "2", …)
//  3. Time in UTC as YYYY-MM-DDThh:mm:ss.nnnnnnnnnZ (nine fractional digits)
//  4. ConversationID
//  5. PauseID
//  6. CallKey
//  7. Tool
//  8. Kind
//  9. Actor.ID
//  10. Actor.Source
//  11. Reason
//  12. ArgsDigest
//  13. PrevHash ("" for record 1)
//
// Every field but Hash is covered, so changing any of them changes the
// hash; PrevHash links the record to the one before it. The strings are
// the ones of the JSON form, so an auditor can recompute the hash from a
// record's JSON with any SHA-256 implementation.
func (r *Record) ComputeHash() string {
	var stack [512]byte
	sum := sha256.Sum256(r.appendHashInput(stack[:0]))
	return hex.EncodeToString(sum[:])
}

// appendHashInput appends the input of the record's hash to b.
func (r *Record) appendHashInput(b []byte) []byte {
	var scratch [len(timeLayout) + 8]byte
	b = appendField(b, hashDomain)
	b = appendField(b, strconv.AppendUint(scratch[:0], r.Seq, 10))
	b = appendField(b, r.Time.UTC().AppendFormat(scratch[:0], timeLayout))
	for _, s := range [...]string{
		r.ConversationID, r.PauseID, r.CallKey, r.Tool,
		string(r.Kind), r.Actor.ID, string(r.Actor.Source),
		r.Reason, r.ArgsDigest, r.PrevHash,
	} {
		b = appendField(b, s)
	}
	return b
}

// appendField appends the length of s as 8 bytes, big-endian, then s.
func appendField[S string | []byte](b []byte, s S) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// Digest returns the digest of a call's arguments: "sha256:" followed by
// lower-case hex of SHA-256 over their canonical form. When args is valid
// JSON (RFC 8259, valid UTF-8, no repeated member names) the canonical form
// is its RFC 8785 (JSON Canonicalization Scheme) form: no whitespace,
// members sorted, strings and numbers in their shortest form; so
// {"b":1, "a":"x"} and {"a":"x","b":1.0} have one digest. Otherwise (not
// JSON at all) it is args as they are. JCS reads numbers as IEEE 754
// doubles: integers beyond ±2⁵³ that differ only past that precision share
// a digest.
//
// A digest does not contain the arguments, but it confirms a guess: anyone
// who can list the likely arguments of a call (a few thousand account
// numbers) can find which one was used. Where that matters, use
// [KeyedDigest].
func Digest(args []byte) string { return argdigest.Digest(args) }

// KeyedDigest is [Digest] with HMAC-SHA-256 under key instead of SHA-256:
// "hmac-sha256:" followed by lower-case hex. Without the key a digest
// confirms no guess; with it, an auditor can recompute it.
func KeyedDigest(key, args []byte) string { return argdigest.Keyed(key, args) }

// ErrInvalidRecord is matched by the error [Log.Append] returns for a
// record it refuses: an unknown kind or source, invalid UTF-8, a malformed
// digest or a time outside years 1 to 9999. Nothing is appended.
var ErrInvalidRecord = errors.New("audit: invalid record")

// ErrBroken is matched (with [errors.Is]) by every [*RecordError].
var ErrBroken = errors.New("audit: the log is broken")

// Problem names what is wrong with a stored record. Its values are stable.
type Problem string

// The problems [Verify] and the decoders report.
const (
	// ProblemUndecodable: the stored bytes are not a record's JSON form
	// (not JSON, a member unknown, repeated or of the wrong type).
	ProblemUndecodable Problem = "undecodable"
	// ProblemUnknownVersion: the record's "v" is missing or not [Version].
	ProblemUnknownVersion Problem = "unknown_version"
	// ProblemUnknownKind: the record's kind is not one of [Kinds].
	ProblemUnknownKind Problem = "unknown_kind"
	// ProblemInvalidField: a field is malformed (sequence number 0, an
	// unknown source, a malformed time, digest or hash, invalid UTF-8), or
	// disagrees with the row that stores it.
	ProblemInvalidField Problem = "invalid_field"
	// ProblemOutOfSequence: the record does not carry the next sequence
	// number, or is not in its row: a record was deleted, inserted or
	// moved.
	ProblemOutOfSequence Problem = "out_of_sequence"
	// ProblemHashMismatch: the stored hash is not the hash of the
	// record's fields: the record was altered.
	ProblemHashMismatch Problem = "hash_mismatch"
	// ProblemBrokenLink: the record's prev_hash is not the hash of the
	// record before it: a record before it was deleted, replaced or
	// rewritten.
	ProblemBrokenLink Problem = "broken_link"
	// ProblemAnchorMismatch: the record named by the anchor has another
	// hash, or the log ends before it (records at the end were deleted).
	ProblemAnchorMismatch Problem = "anchor_mismatch"
)

// RecordError reports a broken or unreadable record. It matches
// [ErrBroken], and unwraps to the decoding error, if any.
type RecordError struct {
	// Seq is where the chain breaks: the sequence number the broken record
	// should have (the record found there may carry another one). It is 0
	// when a record is decoded on its own.
	Seq     uint64
	Problem Problem
	// Detail says more, in words.
	Detail string
	// Err is the underlying decoding error, or nil.
	Err error
}

func (e *RecordError) Error() string {
	var b strings.Builder
	b.WriteString("audit: ")
	if e.Seq != 0 {
		fmt.Fprintf(&b, "record %d: ", e.Seq)
	}
	b.WriteString(string(e.Problem))
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is [ErrBroken].
func (e *RecordError) Is(target error) bool { return target == ErrBroken }

// Unwrap returns the underlying decoding error.
func (e *RecordError) Unwrap() error { return e.Err }

// recordJSON is the JSON form of a [Record].
type recordJSON struct {
	V              int    `json:"v"`
	Seq            uint64 `json:"seq"`
	Time           string `json:"time"`
	ConversationID string `json:"conversation_id"`
	PauseID        string `json:"pause_id"`
	CallKey        string `json:"call_key"`
	Tool           string `json:"tool"`
	Kind           Kind   `json:"kind"`
	Actor          Actor  `json:"actor"`
	Reason         string `json:"reason"`
	ArgsDigest     string `json:"args_digest"`
	PrevHash       string `json:"prev_hash"`
	Hash           string `json:"hash"`
}

// MarshalJSON implements [encoding/json.Marshaler]. It refuses a record
// that [Record.UnmarshalJSON] would refuse, with a [*RecordError].
func (r Record) MarshalJSON() ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return json.Marshal(recordJSON{
		V: Version, Seq: r.Seq, Time: r.Time.UTC().Format(timeLayout),
		ConversationID: r.ConversationID, PauseID: r.PauseID, CallKey: r.CallKey, Tool: r.Tool,
		Kind: r.Kind, Actor: r.Actor, Reason: r.Reason, ArgsDigest: r.ArgsDigest,
		PrevHash: r.PrevHash, Hash: r.Hash,
	})
}

// UnmarshalJSON implements [encoding/json.Unmarshaler]. Any failure is a
// [*RecordError] (with Seq 0); hostile input never panics. It does not
// check the hash: [Verify] does.
func (r *Record) UnmarshalJSON(data []byte) error {
	var head struct {
		V *int64 `json:"v"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return &RecordError{Problem: ProblemUndecodable, Err: err}
	}
	if head.V == nil {
		return &RecordError{Problem: ProblemUnknownVersion, Detail: "no version"}
	}
	if *head.V != Version {
		return &RecordError{Problem: ProblemUnknownVersion, Detail: fmt.Sprintf("version %d (this build reads %d)", *head.V, Version)}
	}
	var v recordJSON
	if err := json.Unmarshal(data, &v, json.RejectUnknownMembers(true)); err != nil {
		return &RecordError{Problem: ProblemUndecodable, Err: err}
	}
	t, err := time.Parse(timeLayout, v.Time)
	if err != nil {
		return &RecordError{Problem: ProblemInvalidField, Detail: fmt.Sprintf("time %q is not of the form %s", v.Time, timeLayout)}
	}
	rec := Record{
		Seq: v.Seq, Time: t,
		ConversationID: v.ConversationID, PauseID: v.PauseID, CallKey: v.CallKey, Tool: v.Tool,
		Kind: v.Kind, Actor: v.Actor, Reason: v.Reason, ArgsDigest: v.ArgsDigest,
		PrevHash: v.PrevHash, Hash: v.Hash,
	}
	if err := rec.check(); err != nil {
		return err
	}
	*r = rec
	return nil
}

// check validates a stored record: the checks of [Record.checkFields],
// plus a sequence number and well-formed hashes, or none of the three (an
// unsealed record).
func (r *Record) check() *RecordError {
	if err := r.checkFields(); err != nil {
		return err
	}
	switch {
	case r.Unsealed():
		return nil
	case r.Seq == 0:
		return &RecordError{Problem: ProblemInvalidField, Detail: "sequence number 0"}
	case !isHex64(r.Hash):
		return &RecordError{Problem: ProblemInvalidField, Detail: fmt.Sprintf("hash %q is not 64 lower-case hex digits", r.Hash)}
	case r.PrevHash != "" && !isHex64(r.PrevHash):
		return &RecordError{Problem: ProblemInvalidField, Detail: fmt.Sprintf("prev_hash %q is not 64 lower-case hex digits", r.PrevHash)}
	}
	return nil
}

// checkFields validates the fields a caller of Append sets.
func (r *Record) checkFields() *RecordError {
	if !r.Kind.valid() {
		return &RecordError{Problem: ProblemUnknownKind, Detail: fmt.Sprintf("kind %q", r.Kind)}
	}
	if !r.Actor.Source.valid() {
		return &RecordError{Problem: ProblemInvalidField, Detail: fmt.Sprintf("actor source %q is not one of person, rule, sticky_grant, system", r.Actor.Source)}
	}
	if y := r.Time.UTC().Year(); y < 1 || y > 9999 {
		return &RecordError{Problem: ProblemInvalidField, Detail: fmt.Sprintf("time in year %d", y)}
	}
	for _, f := range [...]struct{ name, value string }{
		{"conversation_id", r.ConversationID}, {"pause_id", r.PauseID}, {"call_key", r.CallKey},
		{"tool", r.Tool}, {"actor id", r.Actor.ID}, {"reason", r.Reason},
	} {
		if !utf8.ValidString(f.value) {
			return &RecordError{Problem: ProblemInvalidField, Detail: f.name + " is not valid UTF-8"}
		}
	}
	if d := r.ArgsDigest; d != "" {
		hexPart, ok := strings.CutPrefix(d, "sha256:")
		if !ok {
			hexPart, ok = strings.CutPrefix(d, "hmac-sha256:")
		}
		if !ok || !isHex64(hexPart) {
			return &RecordError{Problem: ProblemInvalidField, Detail: fmt.Sprintf("args_digest %q is not sha256:<hex> or hmac-sha256:<hex>", d)}
		}
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Seal links r after head (the last record of a log, or the zero Anchor
// for an empty log): it sets r.Seq to head.Seq+1, r.PrevHash to head.Hash,
// r.Time to now when it is zero (and to UTC), and r.Hash. It refuses a
// record whose fields are invalid with an error matching
// [ErrInvalidRecord], leaving r unchanged.
//
// Implementations of [Log] call it while they hold their log's write lock.
func Seal(head Anchor, r *Record) error {
	if r == nil {
		return fmt.Errorf("%w: nil record", ErrInvalidRecord)
	}
	rec := *r
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	rec.Time = rec.Time.UTC().Round(0)
	if err := rec.checkFields(); err != nil {
		return fmt.Errorf("%w: %s: %s", ErrInvalidRecord, err.Problem, err.Detail)
	}
	rec.Seq, rec.PrevHash = head.Seq+1, head.Hash
	rec.Hash = rec.ComputeHash()
	*r = rec
	return nil
}
