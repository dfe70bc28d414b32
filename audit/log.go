package audit

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
)

// Log is an append-only audit log: a chain of [Record] values, each
// holding the hash of the one before it.
//
// Implementations must be safe for concurrent use, and Append must be
// atomic with respect to every other appender of the same log, in this
// process or another: the chain never forks, and sequence numbers never
// repeat or skip. [MemoryLog] keeps a log in memory; package
// github.com/toolgate/toolgate/audit/sqlite keeps one in a SQLite file,
// and package github.com/toolgate/toolgate/audit/postgres one in a
// PostgreSQL schema shared by many instances. Package
// github.com/toolgate/toolgate/audit/audittest checks an implementation.
type Log interface {
	// Append adds records at the end of the log, atomically (all or none),
	// sealing each with [Seal] after the one before it. On success it sets
	// Seq, PrevHash, Hash (and Time, when zero) of the caller's records; on
	// failure they are unchanged. A record with invalid fields gives an
	// error matching [ErrInvalidRecord].
	Append(ctx context.Context, records ...*Record) error
	Reader
}

// Reader reads the records of a log.
type Reader interface {
	// Records returns the records that q selects, in sequence order, from
	// one consistent snapshot of the log; the records of a log that seals
	// after commit ([Sealer]) that are not sealed yet follow the sealed
	// ones, with Seq 0 ([Record.Unsealed]), in the order they were
	// appended, and every [Query] selects them but for its
	// ConversationID. A stored record that cannot be
	// decoded ends the sequence with a [*RecordError]; other errors (I/O,
	// ctx) end it too. The records belong to the caller. A nil q selects
	// every record.
	Records(ctx context.Context, q *Query) iter.Seq2[*Record, error]
}

// Sealer is implemented by a [Log] whose records may be committed before
// they are sealed into its chain: written, atomically with the change they
// describe, without a sequence number or hash, and sealed later, in
// batches, by one writer at a time (package
// github.com/toolgate/toolgate/audit/postgres). Until then they are
// readable ([Record.Unsealed]) and [Verify] counts them apart
// ([Report.Unsealed]). Append seals at once, also on such a log.
type Sealer interface {
	// SealPending seals every record committed but not yet sealed when it
	// is called, waiting for a sealer that runs elsewhere, and returns how
	// many it sealed itself. A failure leaves the log as it was: a batch
	// is sealed in one transaction, all or none.
	SealPending(ctx context.Context) (uint64, error)
}

// Query selects records. The zero Query selects every record.
type Query struct {
	// ConversationID, when not "", selects the records of one
	// conversation.
	ConversationID string
	// After, when not 0, selects the records numbered after it: those
	// appended since a record whose sequence number is After.
	After uint64
}

// Selects reports whether q selects r; a nil q selects every record. A
// record not sealed yet ([Record.Unsealed]) comes after every sealed one,
// so After selects it. Implementations of [Reader] that filter in memory
// use it.
func (q *Query) Selects(r *Record) bool {
	return q == nil || (q.ConversationID == "" || r.ConversationID == q.ConversationID) && (r.Seq > q.After || r.Unsealed())
}

// Anchor names a record by its sequence number and hash. The anchor of a
// log's last record, published or kept elsewhere, lets [Verify] detect the
// deletion of records at the end of the log, which the chain alone cannot
// show. The zero Anchor is the head of an empty log.
//
// Text form (see [ParseAnchor]): "SEQ:HASH", as in "42:3f9a…".
type Anchor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// String returns the anchor's text form, "SEQ:HASH".
func (a Anchor) String() string { return strconv.FormatUint(a.Seq, 10) + ":" + a.Hash }

// ParseAnchor parses the text form of an [Anchor]: a sequence number of at
// least 1, a colon and 64 lower-case hex digits.
func ParseAnchor(s string) (Anchor, error) {
	seq, h, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil || n == 0 || !isHex64(h) {
		return Anchor{}, fmt.Errorf("audit: anchor %q is not SEQ:HASH (a sequence number from 1, 64 lower-case hex digits)", s)
	}
	return Anchor{Seq: n, Hash: h}, nil
}

// MemoryLog is a [Log] kept in memory, for tests and single-process
// programs. The zero value is an empty log ready to use; a MemoryLog is
// safe for concurrent use.
type MemoryLog struct {
	mu      sync.Mutex
	records []Record // guarded by mu
}

// NewMemoryLog returns an empty log.
func NewMemoryLog() *MemoryLog { return &MemoryLog{} }

// Append implements [Log].
func (l *MemoryLog) Append(ctx context.Context, records ...*Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var head Anchor
	if n := len(l.records); n > 0 {
		head = l.records[n-1].Anchor()
	}
	sealed := make([]Record, len(records))
	for i, r := range records {
		if r == nil {
			return fmt.Errorf("%w: record %d of the append is nil", ErrInvalidRecord, i)
		}
		sealed[i] = *r
		if err := Seal(head, &sealed[i]); err != nil {
			return err
		}
		head = sealed[i].Anchor()
	}
	l.records = append(l.records, sealed...)
	for i, r := range records {
		*r = sealed[i]
	}
	return nil
}

// Records implements [Reader]. It never reports a [*RecordError]: the
// records of a MemoryLog are never decoded.
func (l *MemoryLog) Records(ctx context.Context, q *Query) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		l.mu.Lock()
		snapshot := l.records[:len(l.records):len(l.records)]
		l.mu.Unlock()
		for i := range snapshot {
			if !q.Selects(&snapshot[i]) {
				continue
			}
			r := snapshot[i]
			if !yield(&r, nil) {
				return
			}
		}
	}
}
