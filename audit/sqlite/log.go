package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/auditrows"
	"github.com/toolgate/toolgate/internal/groupcommit"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Options configure [Open]. A nil *Options means all defaults.
type Options struct {
	// BusyTimeout is how long an append waits for the write lock held by
	// another connection or process before it fails. Zero (or negative)
	// means 5 seconds.
	BusyTimeout time.Duration
	// ReadOnly opens an existing log for reading only (for verification):
	// the file must exist and hold a log of a known schema; nothing is
	// created or migrated, and Append fails. False means read and write.
	ReadOnly bool
}

// Log is an [audit.Log] kept in a SQLite database file.
//
// A Log is safe for concurrent use by several goroutines, and several Logs,
// in one process or in several, may open the same file: every append runs
// in a BEGIN IMMEDIATE transaction, which takes SQLite's write lock before
// it reads the head of the chain, so the chain never forks. Close it when
// done.
type Log struct {
	// Fixed at creation.
	write    *sql.DB                                                           // one connection; every transaction begins IMMEDIATE
	inTx     func(context.Context, func(context.Context, *sql.Tx) error) error // runs the transactions of write
	commit   *groupcommit.Committer                                            // nil for a shared Log
	read     *sql.DB                                                           // read-only transactions
	readOnly bool
	shared   bool // made by NewShared: the connections are another's
	// reportsUndone: the owner of the transactions calls [Log.Undone]
	// whenever it undoes a part of one ([SharedOptions.ReportsUndone]).
	reportsUndone bool

	// Prepared on write by Open unless readOnly, closed by Close.
	selectHead, insertRecord, insertRecords2 *sql.Stmt

	// head is the last record this Log has read as the head of the chain
	// or appended, with its anchor: when the head row holds the same
	// sequence number and body, the anchor is known without decoding the
	// record. The write transactions run one at a time on the one write
	// connection; mu guards head all the same. A record whose transaction
	// rolls back does no harm, as the anchor depends on the row alone.
	mu   sync.Mutex
	head struct {
		seq    int64
		body   []byte
		anchor audit.Anchor
	} // guarded by mu
	// headIn, when not nil, is the transaction in which head is the last
	// record, as its last append left it: its later appends need not read
	// the head again, since no other connection writes while it holds the
	// write lock. Only kept when the owner reports what it undoes
	// (reportsUndone); [Log.Undone] and a failed append clear it.
	headIn *sql.Tx // guarded by mu
	// The statements of an append bound to the transaction of the last
	// append ([sql.Tx.StmtContext] makes new ones on every call), so that
	// the appends of one group commit, which share its transaction, bind
	// them once. They are closed when that transaction ends.
	txOf                                           *sql.Tx   // guarded by mu
	txSelectHead, txInsertRecord, txInsertRecords2 *sql.Stmt // guarded by mu
	// The columns of the head's row as readHead scans them.
	scan struct {
		seq  int64
		body sql.RawBytes
	} // guarded by mu
}

// ErrNotLog is returned by [Open] with [Options.ReadOnly] for a file that
// holds no audit log, and by [Open] for a log whose schema version this
// build does not know.
var ErrNotLog = errors.New("sqlite: not an audit log this build can read")

// SchemaVersion is the version of the tables this package writes, kept in
// the audit_schema table (not in the database's user_version, so that a
// log can share a file with other tables, such as the conversations of
// github.com/toolgate/toolgate/store/sqlite).
const SchemaVersion = 1

// migrations bring the audit tables from version i to i+1. Append to the
// list; never change an entry.
var migrations = []string{
	// 1: the records, one row each; body is the record's JSON form.
	`CREATE TABLE audit_records (
		seq INTEGER PRIMARY KEY,
		conversation_id TEXT NOT NULL,
		body TEXT NOT NULL
	);
	CREATE INDEX audit_records_conversation ON audit_records (conversation_id, seq);`,
}

// The statements of a [Log].
const (
	selectHeadSQL         = "SELECT +seq AS s, +body AS b FROM audit_records ORDER BY seq DESC LIMIT 1" // one-letter names, no declared types: nothing for the driver to copy on each append
	insertRecordSQL       = "INSERT INTO audit_records (seq, conversation_id, body) VALUES (?, ?, ?)"
	insertRecords2SQL     = insertRecordSQL + ", (?, ?, ?)" // two records in one statement: a state change's records come in pairs and more
	selectAllSQL          = "SELECT seq, conversation_id, body FROM audit_records WHERE seq > ? ORDER BY seq"
	selectConversationSQL = "SELECT seq, conversation_id, body FROM audit_records WHERE conversation_id = ? AND seq > ? ORDER BY seq"
)

// Open opens the audit log in the database file at path, creating the file
// and the tables when needed (unless [Options.ReadOnly]). The file is put
// in WAL journal mode. opts may be nil.
func Open(ctx context.Context, path string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open %q: want the path of a database file", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if o.ReadOnly {
		// mode=rw below does not create a missing file; say so plainly.
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	// Savepoints journal the pages they change in memory, not in a
	// temporary file: only a rollback to one reads them.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	if o.ReadOnly {
		q.Set("mode", "rw")
		q.Add("_pragma", "query_only(1)")
	}
	dsn := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	write, err := sql.Open("sqlite", dsn.String())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	// One writer connection: goroutines of this process queue for it
	// instead of polling SQLite's lock.
	write.SetMaxOpenConns(1)
	if !o.ReadOnly {
		q.Add("_pragma", "query_only(1)")
	}
	dsn.RawQuery = q.Encode()
	read, err := sql.Open("sqlite", dsn.String())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	l := &Log{write: write, commit: groupcommit.New(write, nil, nil), read: read, readOnly: o.ReadOnly}
	l.inTx = l.commit.Do
	if o.ReadOnly {
		err = l.checkSchema(ctx)
	} else if err = l.setup(ctx); err == nil {
		err = l.prepare(ctx)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return l, nil
}

// schemaVersion returns the version in audit_schema, or 0 when the table
// does not exist.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'audit_schema'").Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v int
	if err := q.QueryRowContext(ctx, "SELECT version FROM audit_schema").Scan(&v); err != nil {
		return 0, fmt.Errorf("%w: audit_schema: %v", ErrNotLog, err)
	}
	if v < 1 || v > len(migrations) {
		return 0, fmt.Errorf("%w: schema version %d (this build knows 1 to %d)", ErrNotLog, v, len(migrations))
	}
	return v, nil
}

// checkSchema checks, for a read-only log, that the tables exist in a
// version this build knows.
func (l *Log) checkSchema(ctx context.Context) error {
	v, err := schemaVersion(ctx, l.read)
	if err != nil {
		return err
	}
	if v != SchemaVersion {
		return fmt.Errorf("%w: the file holds no audit tables at version %d (found version %d)", ErrNotLog, SchemaVersion, v)
	}
	return nil
}

// setup turns on WAL (unless the Log is shared) and applies the missing
// migrations.
func (l *Log) setup(ctx context.Context) error {
	if l.shared {
		return l.migrate(ctx)
	}
	var mode string
	if err := l.write.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not wal", mode)
	}
	return l.migrate(ctx)
}

// migrate applies the missing migrations in one write transaction.
func (l *Log) migrate(ctx context.Context) error {
	return l.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		v, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if v == 0 {
			if _, err := tx.ExecContext(ctx, "CREATE TABLE audit_schema (version INTEGER NOT NULL); INSERT INTO audit_schema VALUES (0)"); err != nil {
				return err
			}
		}
		for i := v; i < len(migrations); i++ {
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migrating the audit tables to version %d: %w", i+1, err)
			}
		}
		if v != len(migrations) {
			if _, err := tx.ExecContext(ctx, "UPDATE audit_schema SET version = ?", len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
}

// prepare prepares the statements of an append.
func (l *Log) prepare(ctx context.Context) error {
	var err error
	if l.selectHead, err = l.write.PrepareContext(ctx, selectHeadSQL); err != nil {
		return err
	}
	if l.insertRecord, err = l.write.PrepareContext(ctx, insertRecordSQL); err != nil {
		return err
	}
	l.insertRecords2, err = l.write.PrepareContext(ctx, insertRecords2SQL)
	return err
}

// NewShared returns a Log in a database whose connections another
// package owns and keeps open (the conversation store of package
// github.com/toolgate/toolgate/store/sqlite, whose file then holds the
// audit log too): write is its one writing connection, inTx runs a
// function in a write transaction (BEGIN IMMEDIATE) on it, read is a pool
// of reading connections. It creates or upgrades the tables in a
// transaction of inTx. Appends run through inTx, and [Log.AppendTx]
// appends inside a transaction of the owner's. [Log.Close] closes the
// Log's statements, not the connections.
func NewShared(ctx context.Context, write *sql.DB, inTx func(context.Context, func(context.Context, *sql.Tx) error) error, read *sql.DB) (*Log, error) {
	return NewSharedWith(ctx, write, inTx, read, nil)
}

// SharedOptions configure [NewSharedWith]. A nil *SharedOptions means all
// defaults.
type SharedOptions struct {
	// ReportsUndone says that the owner of the transactions calls
	// [Log.Undone] whenever it undoes a part of a transaction that may
	// hold appends of the Log (a rollback to a savepoint taken before
	// them) without ending the transaction. The Log then reads the head
	// of the chain once per transaction, not once per append: the
	// appends after the first in a transaction chain after the last
	// record the Log appended in it. False means that every append reads
	// the head.
	ReportsUndone bool
}

// NewSharedWith is [NewShared] with options; opts may be nil.
func NewSharedWith(ctx context.Context, write *sql.DB, inTx func(context.Context, func(context.Context, *sql.Tx) error) error, read *sql.DB, opts *SharedOptions) (*Log, error) {
	if write == nil || inTx == nil || read == nil {
		panic("sqlite: NewShared with a nil connection or transaction runner")
	}
	l := &Log{write: write, inTx: inTx, read: read, shared: true, reportsUndone: opts != nil && opts.ReportsUndone}
	err := l.setup(ctx)
	if err == nil {
		err = l.prepare(ctx)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("sqlite: the audit log: %w", err)
	}
	return l, nil
}

// Undone tells a Log made with [SharedOptions.ReportsUndone] that a part
// of the current transaction was undone, so that its appends there may be
// gone: the next append reads the head of the chain again. It is safe to
// call at any time, also for other Logs, where it does nothing.
func (l *Log) Undone() {
	l.mu.Lock()
	l.headIn = nil
	l.mu.Unlock()
}

// Close closes the database, or only the Log's statements for a Log made
// by [NewShared]. Operations in progress may fail.
func (l *Log) Close() error {
	if l.commit != nil {
		l.commit.Close()
	}
	var errs []error
	for _, stmt := range []*sql.Stmt{l.selectHead, l.insertRecord, l.insertRecords2} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	if l.shared {
		return errors.Join(errs...)
	}
	return errors.Join(append(errs, l.read.Close(), l.write.Close())...)
}

// Append implements [audit.Log]. The records are sealed after the last
// stored record inside one BEGIN IMMEDIATE transaction and committed
// synchronously. Append refuses to extend a log whose last record cannot
// be read, with an error matching [audit.ErrBroken].
func (l *Log) Append(ctx context.Context, records ...*audit.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.readOnly {
		return errors.New("sqlite: append: the log is open read-only")
	}
	sealed := make([]audit.Record, len(records))
	for i, r := range records {
		if r == nil {
			return fmt.Errorf("sqlite: append: %w: record %d of the append is nil", audit.ErrInvalidRecord, i)
		}
		sealed[i] = *r
	}
	if len(sealed) == 0 {
		return nil
	}
	err := l.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return l.appendTx(ctx, tx, sealed)
	})
	if err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	for i, r := range records {
		*r = sealed[i]
	}
	return nil
}

// AppendTx appends records inside tx, a write transaction (BEGIN
// IMMEDIATE, which holds SQLite's write lock) on the Log's write
// connection that the caller has begun and will commit or roll back: the
// records become part of the log exactly when tx commits, together with
// whatever else it wrote. On success it seals the caller's records (Seq,
// PrevHash, Hash, and Time when zero); their values mean nothing if tx
// then rolls back. The errors are those of [Log.Append].
func (l *Log) AppendTx(ctx context.Context, tx *sql.Tx, records ...*audit.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.readOnly {
		return errors.New("sqlite: append: the log is open read-only")
	}
	sealed := make([]audit.Record, len(records))
	for i, r := range records {
		if r == nil {
			return fmt.Errorf("sqlite: append: %w: record %d of the append is nil", audit.ErrInvalidRecord, i)
		}
		sealed[i] = *r
	}
	if len(sealed) == 0 {
		return nil
	}
	if err := l.appendTx(ctx, tx, sealed); err != nil {
		return fmt.Errorf("sqlite: append: %w", err)
	}
	for i, r := range records {
		*r = sealed[i]
	}
	return nil
}

// appendTx seals the records after the head and inserts them in tx.
func (l *Log) appendTx(ctx context.Context, tx *sql.Tx, sealed []audit.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	head, err := l.readHead(ctx, tx)
	if err != nil {
		return err
	}
	// Records already inserted stay if a later one fails, unless the
	// caller undoes them: read the head again next time.
	l.headIn = nil
	// The records go in two at a time, one statement for each pair.
	var bodies [2][]byte
	for i := 0; i < len(sealed); {
		n := min(2, len(sealed)-i)
		for j := range n {
			r := &sealed[i+j]
			if err := audit.Seal(head, r); err != nil {
				return err
			}
			body, err := r.MarshalJSON()
			if err != nil {
				return fmt.Errorf("%w: %v", audit.ErrInvalidRecord, err)
			}
			bodies[j] = body
			head = r.Anchor()
		}
		a := &sealed[i]
		if n == 2 {
			if l.txInsertRecords2 == nil {
				l.txInsertRecords2 = tx.StmtContext(ctx, l.insertRecords2)
			}
			b := &sealed[i+1]
			_, err = l.txInsertRecords2.ExecContext(ctx, int64(a.Seq), a.ConversationID, string(bodies[0]), int64(b.Seq), b.ConversationID, string(bodies[1]))
		} else {
			_, err = l.txInsertRecord.ExecContext(ctx, int64(a.Seq), a.ConversationID, string(bodies[0]))
		}
		if err != nil {
			return err
		}
		last := &sealed[i+n-1]
		l.head.seq, l.head.body, l.head.anchor = int64(last.Seq), bodies[n-1], head
		i += n
	}
	if l.reportsUndone {
		l.headIn = tx
	}
	return nil
}

// readHead returns the anchor of the last stored record, or the zero
// Anchor for an empty log. It decodes the record unless its row is the one
// of l.head. It binds the statements of an append to tx. l.mu must be
// held.
func (l *Log) readHead(ctx context.Context, tx *sql.Tx) (audit.Anchor, error) {
	if l.txOf != tx {
		l.txOf = tx
		// The statement for pairs is bound when a pair comes.
		l.txSelectHead, l.txInsertRecord, l.txInsertRecords2 = tx.StmtContext(ctx, l.selectHead), tx.StmtContext(ctx, l.insertRecord), nil
	}
	if l.headIn == tx {
		return l.head.anchor, nil
	}
	rows, err := l.txSelectHead.QueryContext(ctx)
	if err != nil {
		return audit.Anchor{}, fmt.Errorf("reading the last record: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return audit.Anchor{}, fmt.Errorf("reading the last record: %w", err)
		}
		l.head.seq, l.head.body, l.head.anchor = 0, nil, audit.Anchor{}
		return audit.Anchor{}, nil
	}
	// Scanned into fields of l, not into variables that would escape to
	// the heap on every append; the body points into the rows' buffer and
	// is dropped before returning.
	defer func() { l.scan.body = nil }()
	if err := rows.Scan(&l.scan.seq, &l.scan.body); err != nil {
		return audit.Anchor{}, fmt.Errorf("reading the last record: %w", err)
	}
	seq, body := l.scan.seq, l.scan.body
	if seq == l.head.seq && bytes.Equal(body, l.head.body) {
		return l.head.anchor, nil
	}
	r, err := auditrows.Decode(seq, "", body, false)
	if err != nil {
		return audit.Anchor{}, fmt.Errorf("the last record cannot be read: %w", err)
	}
	l.head.seq, l.head.body, l.head.anchor = seq, bytes.Clone(body), r.Anchor()
	return l.head.anchor, nil
}

// Records implements [audit.Reader]. It reads from one read transaction,
// a consistent snapshot of the log. A row that does not hold a valid record
// (JSON that does not decode, an unknown version or kind, a record in
// another row or with another conversation than its row says) ends the
// sequence with a [*audit.RecordError]; it never panics.
func (l *Log) Records(ctx context.Context, q *audit.Query) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		tx, err := l.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			yield(nil, fmt.Errorf("sqlite: read the audit log: %w", err))
			return
		}
		defer tx.Rollback()
		var (
			rows  *sql.Rows
			after int64
		)
		if q != nil {
			after = int64(min(q.After, 1<<63-1))
		}
		if q != nil && q.ConversationID != "" {
			rows, err = tx.QueryContext(ctx, selectConversationSQL, q.ConversationID, after)
		} else {
			rows, err = tx.QueryContext(ctx, selectAllSQL, after)
		}
		if err != nil {
			yield(nil, fmt.Errorf("sqlite: read the audit log: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var (
				seq  int64
				conv string
				body []byte
			)
			if err := rows.Scan(&seq, &conv, &body); err != nil {
				// The row has been read: a Scan error is a value of the
				// wrong type.
				yield(nil, &audit.RecordError{Problem: audit.ProblemUndecodable, Detail: "a row of the wrong types", Err: err})
				return
			}
			r, err := auditrows.Decode(seq, conv, body, true)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("sqlite: read the audit log: %w", err))
		}
	}
}

// ProbeWrite checks that the log can be appended to now, without
// appending: in a write transaction it reads the last record and makes a
// durable write that changes nothing, then commits (with an fsync). It
// fails when SQLite's write lock stays taken past the busy timeout, or the
// file cannot be written (a full disk, a read-only file), and with an
// error matching [audit.ErrBroken] when the last record cannot be read. A
// readiness check calls it.
func (l *Log) ProbeWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.readOnly {
		return errors.New("sqlite: probe: the log is open read-only")
	}
	err := l.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		l.mu.Lock()
		_, err := l.readHead(ctx, tx)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE audit_schema SET version = version")
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: probe: %w", err)
	}
	return nil
}
