package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate"
	auditpg "github.com/toolgate/toolgate/audit/postgres"
	"github.com/toolgate/toolgate/internal/storerows"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/storekit"
)

// Options configure [Open] and [New]. A nil *Options means all defaults.
type Options struct {
	// Schema is the PostgreSQL schema that holds the store's tables; it is
	// created when missing. Stores with different schemas in one database
	// are independent. "" means "public".
	Schema string
	// StatementTimeout bounds each operation of the store (every
	// statement of it, and the wait for a connection): one that takes
	// longer fails with an error matching [context.DeadlineExceeded], so
	// that a stalled or locked database gives fast failures instead of
	// requests that hang. Zero means 5 seconds; a negative value means no
	// bound but the caller's context.
	StatementTimeout time.Duration
}

// DefaultStatementTimeout is the bound of [Options.StatementTimeout] when
// it is zero.
const DefaultStatementTimeout = 5 * time.Second

// bound returns ctx bounded by the store's statement timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// Store is a [toolgate.ConversationStore] kept in a PostgreSQL database.
//
// A Store is safe for concurrent use by several goroutines, and several
// Stores, in one process or in several, may use the same database and
// schema: an append locks its conversation's row for the length of its
// transaction, and a claim is a single conditional UPDATE, so the rules of
// [storekit.ValidateAppend] and the single claim of a pause hold across all
// of them. Close it when done.
type Store struct {
	// Fixed at creation.
	pool    *pgxpool.Pool
	ownPool bool // opened by Open: Close closes it
	q       queries
	rq      recordQueries
	schema  string
	audit   *auditpg.Log  // the audit log in the same schema
	timeout time.Duration // of each operation; 0: none

	// mu serializes the first Records calls, which migrate the records'
	// schema; rec is the record store the first successful one made, read
	// without mu by the writes that run its hooks.
	mu  sync.Mutex
	rec atomic.Pointer[recordStore]
}

// queries are the statements of a [Store], with the schema filled in.
type queries struct {
	createConversation, lockConversation, selectPause    string
	selectConversation, countMessages                    string
	insertMessages, insertPause, deletePause, claimPause string
	markStarted, loadVault, saveVault                    string
}

func newQueries(schema string) queries {
	r := strings.NewReplacer("S.", pgx.Identifier{schema}.Sanitize()+".")
	return queries{
		// The conversation's row is the lock that serializes appends. An
		// append to an empty conversation creates the row or, when it
		// exists, locks it by updating it in place; an append after stored
		// messages only locks the row, which writes no new version of it
		// (both take the same lock mode, so they exclude each other). A
		// conversation that does not exist has no row to lock and nothing
		// to append after: the append is refused as a conflict.
		createConversation: r.Replace(`INSERT INTO S.conversations AS c (id) VALUES ($1)
			ON CONFLICT (id) DO UPDATE SET id = c.id`),
		lockConversation: r.Replace(`SELECT 1 FROM S.conversations WHERE id = $1 FOR NO KEY UPDATE`),
		selectPause: r.Replace(`SELECT id, msg_index, awaiting, claimed, created_at, created_at_nanos,
			claim_token, claimed_at, claimed_at_nanos, decisions, started
			FROM S.pauses WHERE conversation_id = $1`),
		// The pause (kind 0), if any, then the messages (kind 1) in order:
		// one statement, so one snapshot and one round trip.
		selectConversation: r.Replace(`SELECT 0 AS kind, id, msg_index, awaiting, claimed, created_at, created_at_nanos,
				claim_token, claimed_at, claimed_at_nanos, decisions, started,
				NULL::integer AS seq, NULL::integer AS format, NULL::text AS body
			FROM S.pauses WHERE conversation_id = $1
			UNION ALL
			SELECT 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, seq, format, body
			FROM S.messages WHERE conversation_id = $1
			ORDER BY kind, seq`),
		countMessages: r.Replace(`SELECT count(*), coalesce(max(seq), -1) FROM S.messages WHERE conversation_id = $1`),
		insertMessages: r.Replace(`INSERT INTO S.messages (conversation_id, seq, format, body)
			SELECT $1, $2 + b.i - 1, $3, b.body FROM unnest($4::text[]) WITH ORDINALITY AS b(body, i)`),
		insertPause: r.Replace(`INSERT INTO S.pauses (conversation_id, id, msg_index, awaiting, claimed, created_at, created_at_nanos)
			VALUES ($1, $2, $3, $4, false, $5, $6)`),
		deletePause: r.Replace(`DELETE FROM S.pauses WHERE conversation_id = $1`),
		// A first claim needs an unclaimed pause ($7 false), a takeover
		// the pause claimed with the token $8.
		claimPause: r.Replace(`UPDATE S.pauses SET claimed = true, claim_token = $3, claimed_at = $4, claimed_at_nanos = $5, decisions = $6, started = started || $9::text[]
			WHERE conversation_id = $1 AND id = $2 AND CASE WHEN $7::boolean THEN claimed AND claim_token = $8 ELSE NOT claimed END`),
		markStarted: r.Replace(`UPDATE S.pauses SET started = started || $4::text[]
			WHERE conversation_id = $1 AND id = $2 AND claimed AND claim_token = $3 AND NOT (started && $4::text[])`),
		loadVault: r.Replace(`SELECT sealed FROM S.vaults WHERE conversation_id = $1`),
		saveVault: r.Replace(`INSERT INTO S.vaults (conversation_id, sealed) VALUES ($1, $2)
			ON CONFLICT (conversation_id) DO UPDATE SET sealed = excluded.sealed`),
	}
}

// migrations bring the schema from version i to i+1 (the largest version
// in toolgate_schema_version). S. stands for the schema. Append to the
// list; never change an entry.
var migrations = []string{
	// 1: conversations, messages, pauses and vaults.
	`CREATE TABLE S.conversations (
		id text PRIMARY KEY
	);
	CREATE TABLE S.messages (
		conversation_id text NOT NULL REFERENCES S.conversations (id),
		seq integer NOT NULL,
		format integer NOT NULL,
		body text NOT NULL,
		PRIMARY KEY (conversation_id, seq)
	);
	CREATE TABLE S.pauses (
		conversation_id text PRIMARY KEY REFERENCES S.conversations (id),
		id text NOT NULL,
		msg_index integer NOT NULL,
		awaiting text NOT NULL,
		claimed boolean NOT NULL DEFAULT false,
		created_at timestamptz NOT NULL,
		created_at_nanos integer NOT NULL
	);
	CREATE TABLE S.vaults (
		conversation_id text PRIMARY KEY,
		sealed bytea NOT NULL
	);`,
	// 2: none. Builds before this one created the approval service's
	// records here; [Store.Records] creates them now, with a version of
	// their own (see records.go), so that a schema that keeps only
	// conversations has no tables of the service.
	"",
	// 3: the claim of a pause: its token, time and decisions, and the keys
	// of the calls started under it. A claim made before has none of them.
	`ALTER TABLE S.pauses
		ADD COLUMN claim_token text NOT NULL DEFAULT '',
		ADD COLUMN claimed_at timestamptz,
		ADD COLUMN claimed_at_nanos integer NOT NULL DEFAULT 0,
		ADD COLUMN decisions text NOT NULL DEFAULT '',
		ADD COLUMN started text[] NOT NULL DEFAULT '{}';`,
}

// SchemaVersion is the version of the database schema this package writes
// (the largest version in the schema's toolgate_schema_version table).
// [Open] and [New] upgrade an older schema and refuse a newer one.
const SchemaVersion = 3

// Open connects to the database named by connString (a URL or a key=value
// string, as [pgxpool.ParseConfig] takes), brings the schema up to
// [SchemaVersion] and returns a Store that owns the connection pool.
// opts may be nil.
func Open(ctx context.Context, connString string, opts *Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// The error may quote the connection string, password included.
		return nil, errors.New("postgres: open: cannot parse the connection string")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s, err := newStore(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// New returns a Store on a connection pool the caller keeps: [Store.Close]
// leaves it open. It brings the schema up to [SchemaVersion]. opts may be
// nil; a nil pool is a programming error, and New panics.
func New(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Store, error) {
	if pool == nil {
		panic("postgres: New with a nil pool")
	}
	return newStore(ctx, pool, opts)
}

func newStore(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Store, error) {
	schema, timeout := "public", DefaultStatementTimeout
	if opts != nil {
		if opts.Schema != "" {
			schema = opts.Schema
		}
		if opts.StatementTimeout != 0 {
			timeout = max(opts.StatementTimeout, 0)
		}
	}
	if err := migrate(ctx, pool, schema); err != nil {
		return nil, fmt.Errorf("postgres: open schema %q: %w", schema, err)
	}
	al, err := auditpg.New(ctx, pool, &auditpg.Options{Schema: schema, StatementTimeout: cmp.Or(timeout, -1)})
	if err != nil {
		return nil, fmt.Errorf("postgres: open schema %q: %w", schema, err)
	}
	s := &Store{pool: pool, q: newQueries(schema), rq: newRecordQueries(schema), schema: schema, audit: al, timeout: timeout}
	return s, nil
}

// migrate creates the schema when missing and applies the missing
// migrations, in one transaction holding an advisory lock on the schema's
// name, so that processes starting together migrate one after the other.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	r := strings.NewReplacer("S.", pgx.Identifier{schema}.Sanitize()+".")
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "toolgate schema "+schema); err != nil {
			return dbErr(err)
		}
		// Create only what is missing: CREATE … IF NOT EXISTS needs the
		// privilege to create even when there is nothing to create.
		var haveSchema, haveTable bool
		err := tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
			EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'toolgate_schema_version')`,
			schema).Scan(&haveSchema, &haveTable)
		if err != nil {
			return dbErr(err)
		}
		if !haveSchema {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return dbErr(err)
			}
		}
		if !haveTable {
			_, err := tx.Exec(ctx, r.Replace(`CREATE TABLE S.toolgate_schema_version (
				version integer PRIMARY KEY,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`))
			if err != nil {
				return dbErr(err)
			}
		}
		var v int
		if err := tx.QueryRow(ctx, r.Replace("SELECT coalesce(max(version), 0) FROM S.toolgate_schema_version")).Scan(&v); err != nil {
			return dbErr(err)
		}
		if v < 0 || v > len(migrations) {
			return fmt.Errorf("%w: schema version %d is not one this build knows (it knows 0 to %d)", toolgate.ErrCorrupt, v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			// An empty migration is recorded all the same: the versions
			// are consecutive.
			if m := migrations[i]; m != "" {
				if _, err := tx.Exec(ctx, r.Replace(m)); err != nil {
					return fmt.Errorf("migrating the schema to version %d: %w", i+1, dbErr(err))
				}
			}
			if _, err := tx.Exec(ctx, r.Replace("INSERT INTO S.toolgate_schema_version (version) VALUES ($1)"), i+1); err != nil {
				return dbErr(err)
			}
		}
		return nil
	})
}

// AuditLog returns the audit log kept in the store's schema (the tables of
// package github.com/toolgate/toolgate/audit/postgres), for
// server.Config.Audit: the log that [records.Tx.Audit] appends to inside
// the store's transactions, one chain for every instance that uses the
// schema. It shares s's connection pool and is the same value on every
// call.
func (s *Store) AuditLog() *auditpg.Log { return s.audit }

// ProbeWrite checks that the store can write now, within the statement
// timeout: in one round trip it takes the lock of the audit chain, reads
// the last audit record and makes a durable write that changes nothing
// (see [auditpg.Log.ProbeWrite]). It fails when the database does not
// answer or cannot write, the chain's lock is held past the timeout, or
// the last audit record cannot be read. A server's readiness check calls
// it.
func (s *Store) ProbeWrite(ctx context.Context) error {
	if err := s.audit.ProbeWrite(ctx); err != nil {
		return dbErr(err)
	}
	return nil
}

// Ping reports whether the database answers, with a round trip on a
// connection of the pool. After [Store.Close] of a Store made by [Open]
// it returns an error. A server's readiness check calls it.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// Close releases the Store. It closes its audit log ([auditpg.Log.Close]:
// the records committed but not sealed yet are sealed first, and its
// error says that some could not be) and the connection pool when the
// Store was made by [Open]; a pool given to [New] stays open, and must be
// closed after the Store. Operations in progress may fail.
func (s *Store) Close() error {
	// The audit log stops its sealer and seals what is left: what it
	// cannot seal stays committed and is sealed by the next instance.
	err := s.audit.Close()
	if s.ownPool {
		s.pool.Close()
	}
	return err
}

// Load implements [toolgate.ConversationStore]. It reads the messages and
// the pause with one statement, so in one snapshot and one round trip. A
// row that cannot be read back gives an error wrapping
// [toolgate.ErrCorrupt].
func (s *Store) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conv, err := s.load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: load %q: %w", id, dbErr(err))
	}
	return conv, nil
}

// load reads the result of [queries.selectConversation].
func (s *Store) load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	return s.loadRows(ctx, s.q.selectConversation, id, nil)
}

// loadRows reads the result of query: [queries.selectConversation] or,
// with rec, [recordQueries.loadConversation], whose rows have the
// columns of rec after those and whose row of kind 2 is the conversation's
// record, scanned into rec. Each row is scanned twice: for its kind, then
// for the columns of that kind, the others (NULL) skipped.
func (s *Store) loadRows(ctx context.Context, query, id string, rec *recordRow) (*toolgate.Conversation, error) {
	rows, err := s.pool.Query(ctx, query, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recDest []any
	if rec != nil {
		recDest = rec.dest()
	}
	var (
		kind        int32
		pr          pauseRow
		pause       *toolgate.PauseRecord
		msgs        storerows.Messages
		seq, format int32
		body        []byte
	)
	// A statement that failed (a dropped table, a connection lost) may
	// report its error only through rows, with no columns described.
	prDest := pr.dest()
	width := 1 + len(prDest) + 3 + len(recDest)
	if n, want := len(rows.FieldDescriptions()), width; n != want {
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the conversation's rows have %d columns, want %d", toolgate.ErrCorrupt, n, want)
	}
	kindDest := make([]any, width)
	kindDest[0] = &kind
	pauseDest := make([]any, width)
	copy(pauseDest[1:], prDest)
	msgDest := make([]any, width)
	copy(msgDest[1+len(prDest):], []any{&seq, &format, &body})
	var recRow []any
	if rec != nil {
		recRow = make([]any, width)
		copy(recRow[width-len(recDest):], recDest)
	}
	for rows.Next() {
		if err := rows.Scan(kindDest...); err != nil {
			return nil, fmt.Errorf("%w: %v", toolgate.ErrCorrupt, err)
		}
		switch {
		case kind == 0 && pause == nil && len(msgs.List()) == 0:
			if err := rows.Scan(pauseDest...); err != nil {
				return nil, fmt.Errorf("%w: pause: %v", toolgate.ErrCorrupt, err)
			}
			if pause, err = pr.record(); err != nil {
				return nil, err
			}
		case kind == 1:
			if err := rows.Scan(msgDest...); err != nil {
				return nil, msgs.ScanError(err)
			}
			if err := msgs.Add(int64(seq), int64(format), body); err != nil {
				return nil, err
			}
		case kind == 2 && rec != nil && !rec.found:
			if err := rows.Scan(recRow...); err != nil {
				return nil, fmt.Errorf("%w: the conversation's record: %v", toolgate.ErrCorrupt, err)
			}
			rec.found = true
		default:
			return nil, fmt.Errorf("%w: a row of kind %d out of place", toolgate.ErrCorrupt, kind)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	list := msgs.List()
	if pause != nil {
		if pause.Index < 0 || pause.Index >= len(list) {
			return nil, fmt.Errorf("%w: pause %q at message %d of %d", toolgate.ErrCorrupt, pause.ID, pause.Index, len(list))
		}
		if r, ok := list[pause.Index].(*toolgate.AssistantMessage); !ok || !r.HasToolCalls() {
			return nil, fmt.Errorf("%w: pause %q is on message %d, not a reply with tool calls", toolgate.ErrCorrupt, pause.ID, pause.Index)
		}
	}
	return &toolgate.Conversation{ID: id, Messages: list, Pause: pause}, nil
}

// pauseRow holds the columns of a pause row as they are scanned: those of
// [queries.selectPause], in its order.
type pauseRow struct {
	pr           toolgate.PauseRecord
	index        int32
	awaiting     []byte
	created      time.Time
	nanos        int32
	claimedAt    *time.Time
	claimedNanos int32
	decisions    []byte
}

// dest returns the scan destinations of the row's columns, in order.
func (r *pauseRow) dest() []any {
	r.pr = toolgate.PauseRecord{}
	return []any{&r.pr.ID, &r.index, &r.awaiting, &r.pr.Claimed, &r.created, &r.nanos,
		&r.pr.ClaimToken, &r.claimedAt, &r.claimedNanos, &r.decisions, &r.pr.Started}
}

// record checks the scanned row and returns it as a pause record, which
// it owns.
func (r *pauseRow) record() (*toolgate.PauseRecord, error) {
	pr := r.pr
	pr.Index = int(r.index)
	// created_at holds microseconds; created_at_nanos the exact fraction.
	if err := storerows.Pause(&pr, r.awaiting, r.created.Unix(), int64(r.nanos)); err != nil {
		return nil, err
	}
	if r.claimedAt != nil {
		if r.claimedNanos < 0 || r.claimedNanos >= 1e9 || !pr.Claimed {
			return nil, fmt.Errorf("%w: pause %q: claimed_at_nanos is %d, claimed %v", toolgate.ErrCorrupt, pr.ID, r.claimedNanos, pr.Claimed)
		}
		pr.ClaimedAt = time.Unix(r.claimedAt.Unix(), int64(r.claimedNanos)).UTC()
	}
	if len(pr.Started) == 0 {
		pr.Started = nil
	}
	if err := storerows.Claim(&pr, r.decisions, nil); err != nil {
		return nil, err
	}
	return &pr, nil
}

// loadPause reads the result of [queries.selectPause]: the conversation's
// unresolved pause, or nil.
func loadPause(br pgx.BatchResults) (*toolgate.PauseRecord, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, dbErr(rows.Err())
	}
	var r pauseRow
	if err := rows.Scan(r.dest()...); err != nil {
		return nil, fmt.Errorf("%w: pause: %v", toolgate.ErrCorrupt, err)
	}
	pr, err := r.record()
	if err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err)
	}
	return pr, nil
}

// Append implements [toolgate.ConversationStore]. The rules are those of
// [storekit.ValidateAppend], checked inside a transaction that holds the
// conversation's row lock; a message that cannot be encoded as JSON (a
// result status out of range) gives an error wrapping
// [toolgate.ErrInvalidAppend].
func (s *Store) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil || id == "" || len(p.Messages) == 0 {
		// Refused without touching the database.
		return storekit.ValidateAppend(id, 0, nil, p)
	}
	// Encode before taking the lock; report a failure only once the rules
	// have passed, so that the error is the one ValidateAppend gives.
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
	if err := s.append(ctx, id, p, bodies, awaiting, encErr); err != nil {
		return fmt.Errorf("postgres: append to %q: %w", id, err)
	}
	return nil
}

// append runs an Append in a transaction of two round trips: BEGIN, the
// lock and the reads go in one batch; the writes and COMMIT, once the
// rules have passed, in another. When a hook runs in the transaction, the
// writes go with its statements instead ([recordTx]): with the first whose
// result it needs, or with its COMMIT. A transaction that fails or is refused
// is rolled back; a connection left in a transaction (the rollback failed
// too, or ctx ended) is closed by the pool when released.
func (s *Store) append(ctx context.Context, id string, p *toolgate.AppendParams, bodies []string, awaiting []byte, encErr error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	defer func() {
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(ctx, "ROLLBACK")
		}
	}()
	var b pgx.Batch
	b.Queue("BEGIN")
	if p.At == 0 {
		b.Queue(s.q.createConversation, id)
	} else {
		b.Queue(s.q.lockConversation, id)
	}
	b.Queue(s.q.countMessages, id)
	b.Queue(s.q.selectPause, id)
	br := conn.SendBatch(ctx, &b)
	defer br.Close()
	for range 2 { // BEGIN and the lock
		if _, err := br.Exec(); err != nil {
			return dbErr(err)
		}
	}
	var n, last int64
	if err := br.QueryRow().Scan(&n, &last); err != nil {
		return dbErr(err)
	}
	if last != n-1 {
		return fmt.Errorf("%w: %d messages stored, the last numbered %d", toolgate.ErrCorrupt, n, last)
	}
	pause, err := loadPause(br)
	if err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		return dbErr(err)
	}
	if err := storekit.ValidateAppend(id, int(n), pause, p); err != nil {
		return err
	}
	if encErr != nil {
		return encErr
	}
	hook, rs := s.hookFor(ctx)
	b = pgx.Batch{}
	if p.Resolves != "" {
		b.Queue(s.q.deletePause, id)
	}
	b.Queue(s.q.insertMessages, id, n, storerows.FormatJSON, bodies)
	var created time.Time
	if p.Pause != nil {
		created = p.Pause.CreatedAt
		if created.IsZero() {
			created = time.Now()
		}
		b.Queue(s.q.insertPause, id, p.Pause.ID, int(n)+len(bodies)-1, string(awaiting),
			created.Truncate(time.Microsecond), created.Nanosecond())
	}
	if hook == nil {
		b.Queue("COMMIT")
		return s.sendWrites(ctx, conn, &b, true)
	}
	// With a hook, the writes wait among its transaction's pending
	// statements: they go with the hook's first statement whose result
	// it needs, or with its COMMIT.
	tx := &recordTx{ctx: ctx, r: rs, conn: conn, pending: b}
	w := &records.Write{ConversationID: id, Append: p}
	if p.Pause != nil {
		w.PauseCreatedAt = created
	}
	if err := hook(ctx, tx, w); err != nil {
		return err
	}
	return tx.commit()
}

// sendWrites sends the batch b of writes on conn and reads their results;
// with committing, its last statement is COMMIT, which must report a
// commit. A failed statement skips the rest of the batch: COMMIT runs only
// after the writes succeeded, and reports a rollback if it did one.
func (s *Store) sendWrites(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, committing bool) error {
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	n := b.Len()
	if committing {
		n--
	}
	for range n {
		if _, err := br.Exec(); err != nil {
			return dbErr(err)
		}
	}
	if committing {
		tag, err := br.Exec()
		if err != nil {
			return dbErr(err)
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("the transaction ended with %q instead of COMMIT", tag.String())
		}
	}
	return dbErr(br.Close())
}

// ClaimPause implements [toolgate.ConversationStore], with the rules of
// [storekit.ValidateClaim]. The claim is one conditional UPDATE: of
// concurrent claims (or takeovers of one claim), in any number of
// processes, exactly one finds the pause in the state it expects.
func (s *Store) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	// The rules on the claim itself, before the database is asked.
	if err := storekit.ValidateClaim(id, nil, pauseID, c); !errors.Is(err, toolgate.ErrNoOpenPause) {
		return fmt.Errorf("postgres: claim pause %q of %q: %w", pauseID, id, err)
	}
	decisions, err := storerows.EncodeClaim(c.Decisions)
	if err != nil {
		return fmt.Errorf("postgres: claim pause %q of %q: %w", pauseID, id, err)
	}
	at := c.At
	if at.IsZero() {
		at = time.Now()
	}
	started := c.Started
	if started == nil {
		started = []string{}
	}
	args := []any{id, pauseID, c.Token, at.Truncate(time.Microsecond), at.Nanosecond(), decisions, c.TakeOver, c.Supersedes, started}
	tag, err := s.hooked(ctx, s.q.claimPause, args, &records.Write{ConversationID: id, PauseID: pauseID, Claim: c})
	if err != nil {
		return fmt.Errorf("postgres: claim pause %q of %q: %w", pauseID, id, dbErr(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: claim pause %q of %q: %w", pauseID, id, s.refusal(ctx, id, func(pr *toolgate.PauseRecord) error {
			if err := storekit.ValidateClaim(id, pr, pauseID, c); err != nil {
				return err
			}
			if c.TakeOver {
				return toolgate.ErrClaimLost
			}
			return toolgate.ErrNoOpenPause
		}))
	}
	return nil
}

// MarkStarted implements [toolgate.ConversationStore], with the rules of
// [storekit.ValidateMark]. The record is one conditional UPDATE, so it and
// a takeover of the claim are ordered by the pause's row lock.
func (s *Store) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storekit.ValidateMark(id, nil, pauseID, token, keys); !errors.Is(err, toolgate.ErrClaimLost) {
		return fmt.Errorf("postgres: mark calls of pause %q of %q started: %w", pauseID, id, err)
	}
	tag, err := s.hooked(ctx, s.q.markStarted, []any{id, pauseID, token, keys}, &records.Write{ConversationID: id, PauseID: pauseID, Started: keys})
	if err != nil {
		return fmt.Errorf("postgres: mark calls of pause %q of %q started: %w", pauseID, id, dbErr(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: mark calls of pause %q of %q started: %w", pauseID, id, s.refusal(ctx, id, func(pr *toolgate.PauseRecord) error {
			if err := storekit.ValidateMark(id, pr, pauseID, token, keys); err != nil {
				return err
			}
			return toolgate.ErrClaimLost
		}))
	}
	return nil
}

// hooked runs the conditional UPDATE query with args: alone, or, when
// ctx carries a hook for s's records, in a transaction with the hook,
// which runs when the UPDATE changed a row. A refusal (no row changed)
// is reported as such, with nothing of the hook's written.
func (s *Store) hooked(ctx context.Context, query string, args []any, w *records.Write) (_ pgconn.CommandTag, err error) {
	hook, rs := s.hookFor(ctx)
	if hook == nil {
		return s.pool.Exec(ctx, query, args...)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Release()
	refused := false
	defer func() {
		if (err != nil || refused) && conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	// BEGIN and the UPDATE in one round trip; the hook's last statements
	// with the COMMIT in another.
	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(query, args...)
	br := conn.SendBatch(ctx, &b)
	_, err = br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tag, err
	}
	if tag.RowsAffected() == 0 {
		refused = true
		return tag, nil
	}
	tx := &recordTx{ctx: ctx, r: rs, conn: conn}
	if err = hook(ctx, tx, w); err != nil {
		return tag, err
	}
	err = tx.commit()
	return tag, err
}

// refusal explains why a conditional UPDATE of a conversation's pause
// changed nothing: it reads the pause and returns what rule says, or a
// read error.
func (s *Store) refusal(ctx context.Context, id string, rule func(*toolgate.PauseRecord) error) error {
	var b pgx.Batch
	b.Queue(s.q.selectPause, id)
	br := s.pool.SendBatch(ctx, &b)
	defer br.Close()
	pr, err := loadPause(br)
	if err != nil {
		return err
	}
	return rule(pr)
}

// LoadVault returns the sealed privacy vault of a conversation, or nil when
// it has none. It implements privacy.VaultStore; the bytes are sealed by
// the privacy guard and never hold an original value in the clear.
func (s *Store) LoadVault(ctx context.Context, conversationID string) ([]byte, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var sealed []byte
	err := s.pool.QueryRow(ctx, s.q.loadVault, conversationID).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: load vault of %q: %w", conversationID, dbErr(err))
	}
	if sealed == nil {
		sealed = []byte{} // a stored empty vault is not "none"
	}
	return sealed, nil
}

// SaveVault replaces the sealed privacy vault of a conversation. It
// implements privacy.VaultStore.
func (s *Store) SaveVault(ctx context.Context, conversationID string, sealed []byte) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if conversationID == "" {
		return fmt.Errorf("%w: empty conversation id", toolgate.ErrInvalidAppend)
	}
	if sealed == nil {
		sealed = []byte{}
	}
	if _, err := s.pool.Exec(ctx, s.q.saveVault, conversationID, sealed); err != nil {
		return fmt.Errorf("postgres: save vault of %q: %w", conversationID, dbErr(err))
	}
	return nil
}

// dbErr marks PostgreSQL's reports of damaged data (SQLSTATE class XX:
// data_corrupted, index_corrupted) as [toolgate.ErrCorrupt], and the end
// of a connection the driver reports without an SQLSTATE (closed, or its
// socket ended mid-message) as [storekit.ErrUnavailable]; other errors are
// returned as they are.
func dbErr(err error) error {
	var e *pgconn.PgError
	if !errors.Is(err, toolgate.ErrCorrupt) && errors.As(err, &e) && (e.Code == "XX001" || e.Code == "XX002") {
		return fmt.Errorf("%w: %w", toolgate.ErrCorrupt, err)
	}
	if e == nil && !errors.Is(err, toolgate.ErrCorrupt) && !errors.Is(err, storekit.ErrUnavailable) &&
		(errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return fmt.Errorf("%w: the connection to the database ended: %w", storekit.ErrUnavailable, err)
	}
	return err
}
