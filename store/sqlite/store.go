package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
	"github.com/toolgate/toolgate/internal/groupcommit"
	"github.com/toolgate/toolgate/internal/storerows"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/storekit"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Options configure [Open]. A nil *Options means all defaults.
type Options struct {
	// BusyTimeout is how long an operation waits for a lock held by
	// another connection or process before it fails. Zero (or negative)
	// means 5 seconds.
	BusyTimeout time.Duration
}

// Store is a [toolgate.ConversationStore] kept in a SQLite database file.
//
// A Store is safe for concurrent use by several goroutines, and several
// Stores, in one process or in several, may open the same file: appends and
// claims are serialized by SQLite's write lock, so the rules of
// [storekit.ValidateAppend] and the single claim of a pause hold across all
// of them. Close it when done.
type Store struct {
	// Fixed at creation.
	write  *sql.DB                // one connection; every transaction begins IMMEDIATE
	commit *groupcommit.Committer // runs the transactions of write
	read   *sql.DB                // read-only transactions

	// Prepared statements, fixed at creation: on read, for Load and the
	// records' reads; on write, for Append, ClaimPause, MarkStarted and the
	// records' writes. A statement of write runs in a transaction through
	// [Store.txStmt], which reuses it on the one connection.
	readConversation                                     *sql.Stmt
	appendState, insertMessage, insertPause, deletePause *sql.Stmt
	claimPause, markStarted, claimState                  *sql.Stmt

	mu    sync.Mutex
	stmts []*sql.Stmt // guarded by mu: every prepared statement, to close

	// The statements of write bound to the transaction they last ran in
	// ([sql.Tx.StmtContext] makes a new one on every call), so that the
	// writes of one group commit, which share its transaction, bind each
	// statement once: see [Store.txStmt].
	txMu    sync.Mutex
	txOf    *sql.Tx                 // guarded by txMu
	txStmts map[*sql.Stmt]*sql.Stmt // guarded by txMu
	// The record store, made by the first successful Records: read
	// without mu by the writes that run its hooks, which must not wait
	// for a Records preparing its statements on the writing connection.
	rec atomic.Pointer[recordStore]

	// Fixed at creation: the audit log in the same file, whose writes run
	// on write.
	audit *auditsqlite.Log
	// Fixed at creation: the directory of the database file, whose free
	// space ProbeWrite checks.
	dir string
}

// The statements of a [Store]. The columns of the queries an append, a
// claim and a load run are named with one letter and given as
// expressions (+col: the column's value, unchanged): the driver copies
// the name and the declared type of every column on every query, and a
// one-byte name or an expression's missing type costs no allocation.
const (
	// selectConversationSQL reads the pause (kind 1) and the messages
	// (kind 0) of a conversation in one statement, so that they come from
	// one snapshot without a transaction of their own. A message row
	// fills the pause's columns with values of their types. The rows are
	// in the order of the second column: the messages in order of their
	// numbers (read in the order of the primary key, with no sort), the
	// pause among them at its index. Its arguments are the conversation
	// id, twice.
	selectConversationSQL = `SELECT 1 AS a, +msg_index AS b, +claimed AS c, +id AS d, +awaiting AS e, +created_at AS f, +created_at_nanos AS g,
			+claim_token AS h, +claimed_at AS i, +claimed_at_nanos AS j, +decisions AS k, +started AS l
		FROM pauses WHERE conversation_id = ?
	UNION ALL
	SELECT 0, seq, format, body, '', 0, 0, '', NULL, 0, '', '' FROM messages WHERE conversation_id = ?
	ORDER BY 2`
	// appendStateSQL reads what the rules of an append need, in one
	// statement: a row of kind 0 with the number of the conversation's
	// messages and the largest message number (-1 for none), and a row of
	// kind 1 with its pause, when it has one, in the columns of
	// [selectConversationSQL] (a row of kind 0 fills the pause's columns
	// with values of their types). Its arguments are the conversation id,
	// twice.
	appendStateSQL = `SELECT 0 AS a, count(*) AS b, coalesce(max(seq), -1) AS c, '' AS d, '' AS e, 0 AS f, 0 AS g, '' AS h, NULL AS i, 0 AS j, '' AS k, '' AS l
		FROM messages WHERE conversation_id = ?
	UNION ALL
	SELECT 1, msg_index, claimed, id, awaiting, created_at, created_at_nanos, claim_token, claimed_at, claimed_at_nanos, decisions, started
		FROM pauses WHERE conversation_id = ?`
	insertMessageSQL = "INSERT INTO messages (conversation_id, seq, format, body) VALUES (?, ?, ?, ?)"
	insertPauseSQL   = "INSERT INTO pauses (conversation_id, id, msg_index, awaiting, claimed, created_at, created_at_nanos) VALUES (?, ?, ?, ?, 0, ?, ?)"
	deletePauseSQL   = "DELETE FROM pauses WHERE conversation_id = ?"
	claimPauseSQL    = "UPDATE pauses SET claimed = 1, claim_token = ?, claimed_at = ?, claimed_at_nanos = ?, decisions = ?, started = ? WHERE conversation_id = ?"
	markStartedSQL   = "UPDATE pauses SET started = ? WHERE conversation_id = ?"
	claimStateSQL    = "SELECT +id AS a, +claimed AS b, +claim_token AS c, +started AS d FROM pauses WHERE conversation_id = ?"
)

// migrations bring the schema from version i to i+1 (the database's
// user_version). Append to the list; never change an entry.
var migrations = []string{
	// 1: messages and pauses.
	`CREATE TABLE messages (
		conversation_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		format INTEGER NOT NULL,
		body TEXT NOT NULL,
		PRIMARY KEY (conversation_id, seq)
	) WITHOUT ROWID;
	CREATE TABLE pauses (
		conversation_id TEXT NOT NULL PRIMARY KEY,
		id TEXT NOT NULL,
		msg_index INTEGER NOT NULL,
		awaiting TEXT NOT NULL,
		claimed INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		created_at_nanos INTEGER NOT NULL
	) WITHOUT ROWID;`,
	// 2: sealed privacy vaults, one per conversation.
	`CREATE TABLE vaults (
		conversation_id TEXT NOT NULL PRIMARY KEY,
		sealed BLOB NOT NULL
	) WITHOUT ROWID;`,
	// 3: none. Builds before this one created the approval service's
	// records here; [Store.Records] creates them now, with a version of
	// their own (see records.go), so that a database that keeps only
	// conversations has no tables of the service.
	"",
	// 4: the claim of a pause: its token, time and decisions, and the keys
	// of the calls started under it. A claim made before has none of them.
	`ALTER TABLE pauses ADD COLUMN claim_token TEXT NOT NULL DEFAULT '';
	ALTER TABLE pauses ADD COLUMN claimed_at INTEGER;
	ALTER TABLE pauses ADD COLUMN claimed_at_nanos INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE pauses ADD COLUMN decisions TEXT NOT NULL DEFAULT '';
	ALTER TABLE pauses ADD COLUMN started TEXT NOT NULL DEFAULT '';`,
}

// SchemaVersion is the version of the database schema this package writes
// (the database's user_version). [Open] upgrades an older database and
// refuses a newer one.
const SchemaVersion = 4

// Open opens the database file at path, creating it when it does not
// exist, and brings its schema up to [SchemaVersion]. The file is put in
// WAL journal mode. A file that is not a SQLite database, or whose schema
// is newer than this package knows, gives an error wrapping
// [toolgate.ErrCorrupt]. opts may be nil.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
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
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	// The group commits run each write in a savepoint, which journals
	// the pages it changes: in memory, not in a temporary file (only a
	// rollback to the savepoint reads them; the durable journal is the
	// WAL).
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	dsn := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	write, err := sql.Open("sqlite", dsn.String())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	// One writer connection: goroutines of this process queue for it
	// instead of polling SQLite's lock.
	write.SetMaxOpenConns(1)
	q.Set("_query_only", "1")
	dsn.RawQuery = q.Encode()
	read, err := sql.Open("sqlite", dsn.String())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	s := &Store{write: write, read: read, dir: filepath.Dir(abs)}
	s.commit = groupcommit.New(write, dbErr, s.undone)
	if err := s.setup(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if s.audit, err = auditsqlite.NewSharedWith(ctx, s.write, s.inTx, s.read, &auditsqlite.SharedOptions{ReportsUndone: true}); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, dbErr(err))
	}
	return s, nil
}

// prepare prepares the statements of s.
func (s *Store) prepare(ctx context.Context) error {
	return s.prepareAll(ctx, []stmtSpec{
		{s.read, &s.readConversation, selectConversationSQL},
		{s.write, &s.appendState, appendStateSQL},
		{s.write, &s.insertMessage, insertMessageSQL},
		{s.write, &s.insertPause, insertPauseSQL},
		{s.write, &s.deletePause, deletePauseSQL},
		{s.write, &s.claimPause, claimPauseSQL},
		{s.write, &s.markStarted, markStartedSQL},
		{s.write, &s.claimState, claimStateSQL},
	})
}

// prepareAll prepares the statements of specs, which it adds to those
// [Store.Close] closes.
func (s *Store) prepareAll(ctx context.Context, specs []stmtSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range specs {
		stmt, err := st.db.PrepareContext(ctx, st.query)
		if err != nil {
			return dbErr(err)
		}
		*st.stmt = stmt
		s.stmts = append(s.stmts, stmt)
	}
	return nil
}

// stmtSpec is a statement to prepare on db into *stmt.
type stmtSpec struct {
	db    *sql.DB
	stmt  **sql.Stmt
	query string
}

// setup turns on WAL and applies the missing migrations.
func (s *Store) setup(ctx context.Context) error {
	var mode string
	if err := s.write.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return dbErr(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not wal", mode)
	}
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return dbErr(err)
		}
		if v < 0 || v > len(migrations) {
			return fmt.Errorf("%w: schema version %d is not one this build knows (it knows 0 to %d)", toolgate.ErrCorrupt, v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			if migrations[i] == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migrating the schema to version %d: %w", i+1, dbErr(err))
			}
		}
		if v != len(migrations) {
			// PRAGMA takes no parameters; the value is an int.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
				return dbErr(err)
			}
		}
		return nil
	})
}

// AuditLog returns the audit log kept in the store's database file (the
// tables of package github.com/toolgate/toolgate/audit/sqlite, which can
// also open the file), for server.Config.Audit: the log that
// [records.Tx.Audit] appends to inside the store's transactions. Its
// writes share the store's connection and group commits. It is usable
// until s is closed, and the same value on every call.
func (s *Store) AuditLog() *auditsqlite.Log { return s.audit }

// ProbeWrite checks that the store can write now: through the store's
// writing connection and group commits, it makes a durable write that
// changes nothing and reads the last audit record (see
// [auditsqlite.Log.ProbeWrite]). It fails when the write lock stays taken
// past [Options.BusyTimeout], the file cannot be written (a full disk),
// or the audit log's last record cannot be read. As a small write may
// still fit in pages the file already has, it also fails, with an error
// wrapping [storekit.ErrUnavailable], when the file system holding the
// database has less than [MinFreeSpace] left. A server's readiness check
// calls it.
func (s *Store) ProbeWrite(ctx context.Context) error {
	if err := s.audit.ProbeWrite(ctx); err != nil {
		return dbErr(err)
	}
	if free, ok := freeSpace(s.dir); ok && free < MinFreeSpace {
		return fmt.Errorf("sqlite: probe: %w: the disk holding the database has %d bytes free, less than %d", storekit.ErrUnavailable, free, MinFreeSpace)
	}
	return nil
}

// MinFreeSpace is the free space, in bytes, below which [Store.ProbeWrite]
// reports the disk holding the database as full.
const MinFreeSpace = 1 << 20

// Ping reports whether the database answers: it runs a query on a reading
// connection. After [Store.Close] it returns an error. A server's
// readiness check calls it.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

// Close closes the database. Operations in progress may fail.
func (s *Store) Close() error {
	// The writes queued before Close finish first.
	s.commit.Close()
	var errs []error
	if s.audit != nil {
		errs = append(errs, s.audit.Close())
	}
	s.mu.Lock()
	for _, stmt := range s.stmts {
		errs = append(errs, stmt.Close())
	}
	s.mu.Unlock()
	errs = append(errs, s.read.Close(), s.write.Close())
	return errors.Join(errs...)
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE) that it may share
// with other writes (package internal/groupcommit): fn's writes commit when it returns nil
// and are undone when it returns an error. fn must use the context it is
// given, which is not canceled, never its caller's.
func (s *Store) inTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	return s.commit.Do(ctx, fn)
}

// undone is called by the group commits after they undid writes (an fn
// of [Store.inTx] that failed or panicked, rolled back to its savepoint;
// a transaction rolled back): the audit log, which keeps the head of its
// chain for a transaction's later appends, reads it again
// ([auditsqlite.SharedOptions.ReportsUndone]).
func (s *Store) undone() {
	if l := s.audit; l != nil {
		l.Undone()
	}
}

// txStmt returns stmt, a statement prepared on write, bound to tx, a
// transaction of write that has not ended: the same value for every call
// with tx. The value is closed when tx ends.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt) *sql.Stmt {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if s.txOf != tx {
		// The transaction before has ended: its statements are closed.
		s.txOf = tx
		if s.txStmts == nil {
			s.txStmts = make(map[*sql.Stmt]*sql.Stmt)
		}
		clear(s.txStmts)
	}
	st := s.txStmts[stmt]
	if st == nil {
		st = tx.StmtContext(ctx, stmt)
		s.txStmts[stmt] = st
	}
	return st
}

// exec runs one prepared write statement in a (shared) write transaction.
func (s *Store) exec(ctx context.Context, stmt *sql.Stmt, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = s.txStmt(ctx, tx, stmt).ExecContext(ctx, args...)
		return err
	})
	return res, err
}

// Load implements [toolgate.ConversationStore]. A row that cannot be read
// back gives an error wrapping [toolgate.ErrCorrupt].
func (s *Store) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pause, msgs, err := loadConversation(ctx, s.readConversation, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load %q: %w", id, err)
	}
	if pause != nil {
		if pause.Index < 0 || pause.Index >= len(msgs) {
			return nil, fmt.Errorf("sqlite: load %q: %w: pause %q at message %d of %d", id, toolgate.ErrCorrupt, pause.ID, pause.Index, len(msgs))
		}
		if r, ok := msgs[pause.Index].(*toolgate.AssistantMessage); !ok || !r.HasToolCalls() {
			return nil, fmt.Errorf("sqlite: load %q: %w: pause %q is on message %d, not a reply with tool calls", id, toolgate.ErrCorrupt, pause.ID, pause.Index)
		}
	}
	return &toolgate.Conversation{ID: id, Messages: msgs, Pause: pause}, nil
}

// loadConversation reads the unresolved pause, or nil, and the messages of
// a conversation with [selectConversationSQL].
func loadConversation(ctx context.Context, stmt *sql.Stmt, id string) (*toolgate.PauseRecord, []toolgate.Message, error) {
	rows, err := stmt.QueryContext(ctx, id, id)
	if err != nil {
		return nil, nil, dbErr(err)
	}
	defer rows.Close()
	r := getRowScan()
	defer putRowScan(r)
	var (
		pause *toolgate.PauseRecord
		msgs  storerows.Messages
	)
	for rows.Next() {
		// The row has been read: a Scan error is a value of the wrong
		// type. Scan fills its destinations in order, so kind is set.
		err := rows.Scan(r.dest[:]...)
		if r.kind == 0 {
			if err != nil {
				return nil, nil, msgs.ScanError(err)
			}
			if err := msgs.Add(r.n, r.m, r.text); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: pause: %v", toolgate.ErrCorrupt, err)
		}
		pause = &toolgate.PauseRecord{ID: string(r.text), Index: int(r.n), ClaimToken: string(r.token)}
		if err := r.pause(pause, r.m); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, dbErr(err)
	}
	return pause, msgs.List(), nil
}

// pauseRow completes pr, which holds the id, index and claim token of a
// pause row, with the row's other columns, and checks them.
func pauseRow(pr *toolgate.PauseRecord, claimed int64, awaiting []byte, created, createdN int64, claimedAt sql.NullInt64, claimedN int64, decisions, started []byte) error {
	if claimed != 0 && claimed != 1 {
		return fmt.Errorf("%w: pause %q: claimed is %d", toolgate.ErrCorrupt, pr.ID, claimed)
	}
	pr.Claimed = claimed == 1
	if err := storerows.Pause(pr, awaiting, created, createdN); err != nil {
		return err
	}
	if claimedAt.Valid {
		if claimedN < 0 || claimedN >= 1e9 || !pr.Claimed {
			return fmt.Errorf("%w: pause %q: claimed_at_nanos is %d, claimed %v", toolgate.ErrCorrupt, pr.ID, claimedN, pr.Claimed)
		}
		pr.ClaimedAt = time.Unix(claimedAt.Int64, claimedN).UTC()
	}
	return storerows.Claim(pr, decisions, started)
}

// rowScan holds the columns of a row of [selectConversationSQL] or
// [appendStateSQL] (kind, two numbers, text, and the pause's other
// columns), scanned into the same fields row after row (Scan sets every
// one of them, or fails). The fields live in one pooled value rather
// than in a dozen variables that would each escape to the heap through
// Scan's arguments.
type rowScan struct {
	kind, n, m                  int64
	text, awaiting, token       sql.RawBytes
	created, createdN, claimedN int64
	claimedAt                   sql.NullInt64
	decisions, started          sql.RawBytes
	dest                        [12]any // pointers to the fields above, in the columns' order
}

// rowScans pools the values of [rowScan], each with its fields zero.
var rowScans = sync.Pool{New: func() any {
	r := new(rowScan)
	r.dest = [12]any{&r.kind, &r.n, &r.m, &r.text, &r.awaiting, &r.created, &r.createdN, &r.token, &r.claimedAt, &r.claimedN, &r.decisions, &r.started}
	return r
}}

// getRowScan returns a rowScan whose fields are zero.
func getRowScan() *rowScan { return rowScans.Get().(*rowScan) }

// putRowScan zeroes r's fields (the byte columns point into the buffers
// of the rows they were read from) and returns it to the pool.
func putRowScan(r *rowScan) {
	*r = rowScan{dest: r.dest}
	rowScans.Put(r)
}

// pause completes pr, which holds the id, index and claim token of the
// pause row r holds, with the row's other columns (claimed, as given),
// and checks them.
func (r *rowScan) pause(pr *toolgate.PauseRecord, claimed int64) error {
	return pauseRow(pr, claimed, r.awaiting, r.created, r.createdN, r.claimedAt, r.claimedN, r.decisions, r.started)
}

// loadClaim reads what the rules of a claim or a mark need of the
// conversation's pause (its id, claim token and started keys), or nil, with
// [claimStateSQL].
func loadClaim(ctx context.Context, stmt *sql.Stmt, id string) (*toolgate.PauseRecord, error) {
	rows, err := stmt.QueryContext(ctx, id)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, dbErr(rows.Err())
	}
	pr := new(toolgate.PauseRecord)
	r := getRowScan() // its claimed and started columns
	defer putRowScan(r)
	if err := rows.Scan(&pr.ID, &r.m, &pr.ClaimToken, &r.started); err != nil {
		return nil, fmt.Errorf("%w: pause: %v", toolgate.ErrCorrupt, err)
	}
	if claimed := r.m; claimed != 0 && claimed != 1 {
		return nil, fmt.Errorf("%w: pause %q: claimed is %d", toolgate.ErrCorrupt, pr.ID, claimed)
	}
	pr.Claimed = r.m == 1
	if err := storerows.Claim(pr, nil, r.started); err != nil {
		return nil, err
	}
	return pr, nil
}

// loadAppendState returns the number of messages stored for id, checking
// that they are numbered from 0 without gaps, and the conversation's
// unresolved pause, or nil, with [appendStateSQL].
func loadAppendState(ctx context.Context, stmt *sql.Stmt, id string) (int, *toolgate.PauseRecord, error) {
	rows, err := stmt.QueryContext(ctx, id, id)
	if err != nil {
		return 0, nil, dbErr(err)
	}
	defer rows.Close()
	r := getRowScan()
	defer putRowScan(r)
	var (
		n     = -1
		pause *toolgate.PauseRecord
	)
	for rows.Next() {
		// The row has been read: a Scan error is a value of the wrong
		// type. Scan fills its destinations in order, so kind is set.
		err := rows.Scan(r.dest[:]...)
		if r.kind == 0 {
			if err != nil {
				return 0, nil, fmt.Errorf("%w: message numbers: %v", toolgate.ErrCorrupt, err)
			}
			if r.m != r.n-1 {
				return 0, nil, fmt.Errorf("%w: %d messages stored, the last numbered %d", toolgate.ErrCorrupt, r.n, r.m)
			}
			n = int(r.n)
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("%w: pause: %v", toolgate.ErrCorrupt, err)
		}
		pause = &toolgate.PauseRecord{ID: string(r.text), Index: int(r.n), ClaimToken: string(r.token)}
		if err := r.pause(pause, r.m); err != nil {
			return 0, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, dbErr(err)
	}
	if n < 0 {
		// An aggregate always gives its row.
		return 0, nil, fmt.Errorf("%w: message numbers: no count", toolgate.ErrCorrupt)
	}
	return n, pause, nil
}

// Append implements [toolgate.ConversationStore]. The rules are those of
// [storekit.ValidateAppend], checked inside the write transaction; a
// message that cannot be encoded as JSON (a result status out of range)
// gives an error wrapping [toolgate.ErrInvalidAppend].
func (s *Store) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		return storekit.ValidateAppend(id, 0, nil, p)
	}
	// Encode before taking the write lock; report a failure only once the
	// rules have passed, so that the error is the one ValidateAppend gives.
	bodies := make([]string, len(p.Messages))
	var encErr error
	for i, m := range p.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			encErr = fmt.Errorf("%w: message %d: %v", toolgate.ErrInvalidAppend, i, err)
			break
		}
		bodies[i] = string(b)
	}
	var awaiting []byte
	if p.Pause != nil && encErr == nil {
		var err error
		if awaiting, err = json.Marshal(p.Pause.Awaiting); err != nil {
			encErr = fmt.Errorf("%w: awaiting: %v", toolgate.ErrInvalidAppend, err)
		}
	}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n, pause, err := loadAppendState(ctx, s.txStmt(ctx, tx, s.appendState), id)
		if err != nil {
			return err
		}
		if err := storekit.ValidateAppend(id, n, pause, p); err != nil {
			return err
		}
		if encErr != nil {
			return encErr
		}
		if p.Resolves != "" {
			if _, err := s.txStmt(ctx, tx, s.deletePause).ExecContext(ctx, id); err != nil {
				return dbErr(err)
			}
		}
		ins := s.txStmt(ctx, tx, s.insertMessage)
		for i, b := range bodies {
			if _, err := ins.ExecContext(ctx, id, n+i, storerows.FormatJSON, b); err != nil {
				return dbErr(err)
			}
		}
		var created time.Time
		if p.Pause != nil {
			created = p.Pause.CreatedAt
			if created.IsZero() {
				created = time.Now()
			}
			_, err := s.txStmt(ctx, tx, s.insertPause).ExecContext(ctx,
				id, p.Pause.ID, n+len(bodies)-1, string(awaiting), created.Unix(), created.Nanosecond())
			if err != nil {
				return dbErr(err)
			}
		}
		w := &records.Write{ConversationID: id, Append: p}
		if p.Pause != nil {
			w.PauseCreatedAt = created
		}
		return s.runHook(ctx, tx, w)
	})
	if err != nil {
		return fmt.Errorf("sqlite: append to %q: %w", id, err)
	}
	return nil
}

// ClaimPause implements [toolgate.ConversationStore]. The rules are those
// of [storekit.ValidateClaim], checked inside the write transaction.
func (s *Store) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var decisions string
	if c != nil {
		var err error
		if decisions, err = storerows.EncodeClaim(c.Decisions); err != nil {
			return fmt.Errorf("sqlite: claim pause %q of %q: %w", pauseID, id, err)
		}
	}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		pause, err := loadClaim(ctx, s.txStmt(ctx, tx, s.claimState), id)
		if err != nil {
			return err
		}
		if err := storekit.ValidateClaim(id, pause, pauseID, c); err != nil {
			return err
		}
		at := c.At
		if at.IsZero() {
			at = time.Now()
		}
		started, err := encodeStarted(append(pause.Started, c.Started...))
		if err != nil {
			return err
		}
		if _, err := s.txStmt(ctx, tx, s.claimPause).ExecContext(ctx, c.Token, at.Unix(), at.Nanosecond(), decisions, started, id); err != nil {
			return dbErr(err)
		}
		return s.runHook(ctx, tx, &records.Write{ConversationID: id, PauseID: pauseID, Claim: c})
	})
	if err != nil {
		return fmt.Errorf("sqlite: claim pause %q of %q: %w", pauseID, id, err)
	}
	return nil
}

// encodeStarted returns the started column for keys: "" for none.
func encodeStarted(keys []string) (string, error) {
	if len(keys) == 0 {
		return "", nil
	}
	b, err := json.Marshal(keys)
	return string(b), err
}

// MarkStarted implements [toolgate.ConversationStore]. The rules are those
// of [storekit.ValidateMark], checked inside the write transaction.
func (s *Store) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		pause, err := loadClaim(ctx, s.txStmt(ctx, tx, s.claimState), id)
		if err != nil {
			return err
		}
		if err := storekit.ValidateMark(id, pause, pauseID, token, keys); err != nil {
			return err
		}
		started, err := encodeStarted(append(pause.Started, keys...))
		if err != nil {
			return err
		}
		if _, err := s.txStmt(ctx, tx, s.markStarted).ExecContext(ctx, started, id); err != nil {
			return dbErr(err)
		}
		return s.runHook(ctx, tx, &records.Write{ConversationID: id, PauseID: pauseID, Started: keys})
	})
	if err != nil {
		return fmt.Errorf("sqlite: mark calls of pause %q of %q started: %w", pauseID, id, err)
	}
	return nil
}

// dbErr marks SQLite's reports of a damaged file or of a file that is not
// a database as [toolgate.ErrCorrupt], and those of a lock held past
// [Options.BusyTimeout] (SQLITE_BUSY, SQLITE_LOCKED) as
// [context.DeadlineExceeded]: the wait for the lock had a deadline and
// outlived it, as a statement of a stalled server does, so callers answer
// it as a store that is unavailable for now; a full disk (SQLITE_FULL) as
// [storekit.ErrUnavailable]: nothing of the write was kept, and it may
// succeed once space is freed; other errors are returned as they are.
func dbErr(err error) error {
	var e *msqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %w", toolgate.ErrCorrupt, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: the database is locked: %w", context.DeadlineExceeded, err)
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: the disk is full: %w", storekit.ErrUnavailable, err)
		}
	}
	return err
}

// LoadVault returns the sealed privacy vault of a conversation, or nil when
// it has none. It implements privacy.VaultStore; the bytes are sealed by
// the privacy guard and never hold an original value in the clear.
func (s *Store) LoadVault(ctx context.Context, conversationID string) ([]byte, error) {
	var sealed []byte
	err := s.read.QueryRowContext(ctx, "SELECT sealed FROM vaults WHERE conversation_id = ?", conversationID).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: load vault of %q: %w", conversationID, dbErr(err))
	}
	if sealed == nil {
		sealed = []byte{} // a stored empty vault is not "none"
	}
	return sealed, nil
}

// SaveVault replaces the sealed privacy vault of a conversation. It
// implements privacy.VaultStore.
func (s *Store) SaveVault(ctx context.Context, conversationID string, sealed []byte) error {
	if conversationID == "" {
		return fmt.Errorf("%w: empty conversation id", toolgate.ErrInvalidAppend)
	}
	if sealed == nil {
		sealed = []byte{}
	}
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO vaults (conversation_id, sealed) VALUES (?, ?) ON CONFLICT (conversation_id) DO UPDATE SET sealed = excluded.sealed", conversationID, sealed)
		if err != nil {
			return fmt.Errorf("sqlite: save vault of %q: %w", conversationID, dbErr(err))
		}
		return nil
	})
}
