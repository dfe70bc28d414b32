package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/auditrows"
)

// Options configure [Open] and [New]. A nil *Options means all defaults.
type Options struct {
	// Schema is the PostgreSQL schema that holds the log's tables; it is
	// created when missing (unless ReadOnly). Logs in different schemas of
	// one database are independent chains. "" means "public".
	Schema string
	// ReadOnly opens an existing log for reading only (for verification):
	// the tables must exist at a version this build knows; nothing is
	// created or migrated, and Append fails. False means read and write.
	ReadOnly bool
	// StatementTimeout bounds each append and probe (the wait for a
	// connection and for the chain's lock included): one that takes
	// longer fails with an error matching [context.DeadlineExceeded].
	// Reading records is bounded by the caller's context only. Zero means
	// 5 seconds; a negative value means no bound but the caller's context.
	StatementTimeout time.Duration
}

// bound returns ctx bounded by the log's statement timeout.
func (l *Log) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.timeout)
}

// Log is an [audit.Log] kept in a PostgreSQL database.
//
// A Log is safe for concurrent use, and any number of Logs, in one
// process or in many on several machines, may append to the same schema:
// every append takes a transaction-scoped advisory lock on the schema's
// chain before it reads the head, so appends are serialized by the
// database and the chain never forks, whichever instance writes. The
// primary key on the sequence number refuses a fork even if the lock were
// bypassed. Close it when done.
type Log struct {
	// Fixed at creation.
	pool     *pgxpool.Pool
	ownPool  bool
	readOnly bool
	q        queries
	timeout  time.Duration // of each append; 0: none

	// head is the last record this Log has read as the head of the chain
	// or appended: when the head row holds the same sequence number and
	// body, its anchor is known without decoding the record. A record
	// whose transaction rolls back does no harm, as the anchor depends on
	// the row alone.
	mu   sync.Mutex
	head struct {
		seq    int64
		body   []byte
		anchor audit.Anchor
	} // guarded by mu
}

// ErrNotLog is returned by [Open] and [New] for a schema whose audit
// tables are at a version this build does not know, and with
// [Options.ReadOnly] for a schema that holds no audit log.
var ErrNotLog = errors.New("postgres: not an audit log this build can read")

// SchemaVersion is the version of the tables this package writes, kept in
// the schema's audit_schema table (apart from the version of other
// tables, so that the log can share a schema with the conversations of
// package github.com/toolgate/toolgate/store/postgres).
const SchemaVersion = 1

// migrations bring the audit tables from version i to i+1. S. stands for
// the schema. Append to the list; never change an entry.
var migrations = []string{
	// 1: the records, one row each; body is the record's JSON form.
	`CREATE TABLE S.audit_records (
		seq bigint PRIMARY KEY,
		conversation_id text NOT NULL,
		body text NOT NULL
	);
	CREATE INDEX audit_records_conversation ON S.audit_records (conversation_id, seq);`,
}

// queries are the statements of a [Log], with the schema filled in.
type queries struct {
	schema                             string
	lock, head, insert, all, ofConv    string
	schemaExists, versionTableExists   string
	version, createVersion, setVersion string
	touch                              string
}

func newQueries(schema string) queries {
	r := strings.NewReplacer("S.", pgx.Identifier{schema}.Sanitize()+".")
	return queries{
		schema: schema,
		// The chain's lock: one per schema, held until the transaction
		// ends. Its key is derived from the schema's name.
		lock:   "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
		head:   r.Replace("SELECT seq, body FROM S.audit_records ORDER BY seq DESC LIMIT 1"),
		insert: r.Replace("INSERT INTO S.audit_records (seq, conversation_id, body) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])"),
		all:    r.Replace("SELECT seq, conversation_id, body FROM S.audit_records WHERE seq > $1 ORDER BY seq"),
		ofConv: r.Replace("SELECT seq, conversation_id, body FROM S.audit_records WHERE conversation_id = $1 AND seq > $2 ORDER BY seq"),

		schemaExists:       "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
		versionTableExists: "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'audit_schema')",
		version:            r.Replace("SELECT version FROM S.audit_schema"),
		createVersion:      r.Replace("CREATE TABLE S.audit_schema (version integer NOT NULL); INSERT INTO S.audit_schema VALUES (0)"),
		setVersion:         r.Replace("UPDATE S.audit_schema SET version = $1"),
		// A write that changes nothing, but is written and flushed.
		touch: r.Replace("UPDATE S.audit_schema SET version = version"),
	}
}

// lockName is the text whose hash keys the advisory lock of the chain.
func (q *queries) lockName() string { return "toolgate audit chain " + q.schema }

// Open connects to the database named by connString (a URL or a
// key=value string, as [pgxpool.ParseConfig] takes), creates or upgrades
// the audit tables (unless [Options.ReadOnly]) and returns a Log that
// owns the connection pool. opts may be nil.
func Open(ctx context.Context, connString string, opts *Options) (*Log, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// The error may quote the connection string, password included.
		return nil, errors.New("postgres: open: cannot parse the connection string")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	l, err := newLog(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	l.ownPool = true
	return l, nil
}

// New returns a Log on a connection pool the caller keeps: [Log.Close]
// leaves it open. It creates or upgrades the audit tables unless
// [Options.ReadOnly]. opts may be nil; a nil pool is a programming error,
// and New panics.
func New(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Log, error) {
	if pool == nil {
		panic("postgres: New with a nil pool")
	}
	return newLog(ctx, pool, opts)
}

func newLog(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = "public"
	}
	l := &Log{pool: pool, readOnly: o.ReadOnly, q: newQueries(o.Schema), timeout: 5 * time.Second}
	if o.StatementTimeout != 0 {
		l.timeout = max(o.StatementTimeout, 0)
	}
	var err error
	if o.ReadOnly {
		err = l.checkSchema(ctx)
	} else {
		err = l.migrate(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: open the audit log in schema %q: %w", o.Schema, err)
	}
	return l, nil
}

// checkSchema checks, for a read-only log, that the tables exist at the
// version this build writes.
func (l *Log) checkSchema(ctx context.Context) error {
	var have bool
	if err := l.pool.QueryRow(ctx, l.q.versionTableExists, l.q.schema).Scan(&have); err != nil {
		return err
	}
	if !have {
		return fmt.Errorf("%w: the schema holds no audit tables", ErrNotLog)
	}
	var v int
	if err := l.pool.QueryRow(ctx, l.q.version).Scan(&v); err != nil {
		return fmt.Errorf("%w: audit_schema: %v", ErrNotLog, err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("%w: the audit tables are at version %d, this build reads %d", ErrNotLog, v, SchemaVersion)
	}
	return nil
}

// migrate creates the schema and the tables when missing and applies the
// missing migrations, in one transaction holding an advisory lock, so
// that instances starting together migrate one after the other.
func (l *Log) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, l.q.lock, "toolgate audit schema "+l.q.schema); err != nil {
			return err
		}
		// Create only what is missing: CREATE … IF NOT EXISTS needs the
		// privilege to create even when there is nothing to create.
		var haveSchema, haveTable bool
		if err := tx.QueryRow(ctx, l.q.schemaExists, l.q.schema).Scan(&haveSchema); err != nil {
			return err
		}
		if !haveSchema {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{l.q.schema}.Sanitize()); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, l.q.versionTableExists, l.q.schema).Scan(&haveTable); err != nil {
			return err
		}
		if !haveTable {
			if _, err := tx.Exec(ctx, l.q.createVersion); err != nil {
				return err
			}
		}
		var v int
		if err := tx.QueryRow(ctx, l.q.version).Scan(&v); err != nil {
			return fmt.Errorf("%w: audit_schema: %v", ErrNotLog, err)
		}
		if v < 0 || v > len(migrations) {
			return fmt.Errorf("%w: schema version %d (this build knows 0 to %d)", ErrNotLog, v, len(migrations))
		}
		r := strings.NewReplacer("S.", pgx.Identifier{l.q.schema}.Sanitize()+".")
		for i := v; i < len(migrations); i++ {
			if _, err := tx.Exec(ctx, r.Replace(migrations[i])); err != nil {
				return fmt.Errorf("migrating the audit tables to version %d: %w", i+1, err)
			}
		}
		if v != len(migrations) {
			if _, err := tx.Exec(ctx, l.q.setVersion, len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close releases the Log. It closes the connection pool when the Log was
// made by [Open]; a pool given to [New] stays open.
func (l *Log) Close() error {
	if l.ownPool {
		l.pool.Close()
	}
	return nil
}

// Batcher sends batches of statements on one connection: a [pgx.Tx], a
// *[pgx.Conn] or a *[pgxpool.Conn].
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Append implements [audit.Log]: the records are sealed after the head of
// the chain and inserted in one transaction of two round trips, which
// holds the chain's lock from before it reads the head until it commits.
// Append refuses to extend a log whose last record cannot be read, with an
// error matching [audit.ErrBroken].
func (l *Log) Append(ctx context.Context, records ...*audit.Record) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(records) == 0 {
		if l.readOnly {
			return errors.New("postgres: append: the audit log is open read-only")
		}
		return nil
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: append: %w", err)
	}
	defer conn.Release()
	defer func() {
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	return l.append(ctx, conn, true, records, nil)
}

// AppendTx appends records inside the transaction that b runs, which the
// caller has begun (at isolation level READ COMMITTED, the default, so
// that the head is read after the lock is taken) and will commit or roll
// back: the records become part of the log exactly when that transaction
// commits, together with whatever else it wrote. It takes the chain's
// lock, which serializes every appender of the schema's log until the
// transaction ends: keep the rest of the transaction short. On success it
// seals the caller's records (Seq, PrevHash, Hash, and Time when zero);
// their values mean nothing if the transaction then rolls back. The
// tables must exist ([Open] or [New] creates them).
func (l *Log) AppendTx(ctx context.Context, b Batcher, records ...*audit.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	return l.append(ctx, b, false, records, nil)
}

// QueueTx is [Log.AppendTx] with the insert of the records queued on
// batch instead of sent: it takes the chain's lock and reads the head
// through b (one round trip), seals the records, and queues the insert;
// the caller sends batch in the same transaction, typically with its
// COMMIT, and must treat the failure of any statement of batch as the
// failure of the transaction. Send batch before the next append in the
// same transaction, whose head must be the last of these records. So a
// transaction that ends with its audit records pays no round trip of its
// own for their insert.
func (l *Log) QueueTx(ctx context.Context, b Batcher, batch *pgx.Batch, records ...*audit.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	if batch == nil {
		return errors.New("postgres: append: no batch to queue the records on")
	}
	return l.append(ctx, b, false, records, batch)
}

// append seals records after the head and inserts them through b; with
// own it begins and commits the transaction itself, in the same batches.
// With queue, the insert is queued on it instead (see [Log.QueueTx]).
func (l *Log) append(ctx context.Context, b Batcher, own bool, records []*audit.Record, queue *pgx.Batch) error {
	if l.readOnly {
		return errors.New("postgres: append: the audit log is open read-only")
	}
	sealed := make([]audit.Record, len(records))
	for i, r := range records {
		if r == nil {
			return fmt.Errorf("postgres: append: %w: record %d of the append is nil", audit.ErrInvalidRecord, i)
		}
		sealed[i] = *r
	}
	// Check the records before the lock is taken.
	for i := range sealed {
		probe := sealed[i]
		if err := audit.Seal(audit.Anchor{}, &probe); err != nil {
			return fmt.Errorf("postgres: append: %w", err)
		}
	}
	var batch pgx.Batch
	if own {
		batch.Queue("BEGIN")
	}
	batch.Queue(l.q.lock, l.q.lockName())
	batch.Queue(l.q.head)
	br := b.SendBatch(ctx, &batch)
	head, err := l.readHead(br, own)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("postgres: append: %w", err)
	}
	seqs := make([]int64, len(sealed))
	convs := make([]string, len(sealed))
	bodies := make([]string, len(sealed))
	for i := range sealed {
		if err := audit.Seal(head, &sealed[i]); err != nil {
			return fmt.Errorf("postgres: append: %w", err)
		}
		body, err := sealed[i].MarshalJSON()
		if err != nil {
			return fmt.Errorf("postgres: append: %w: %v", audit.ErrInvalidRecord, err)
		}
		seqs[i], convs[i], bodies[i] = int64(sealed[i].Seq), sealed[i].ConversationID, string(body)
		head = sealed[i].Anchor()
	}
	if queue != nil {
		queue.Queue(l.q.insert, seqs, convs, bodies)
		l.sealed(records, sealed, seqs[len(seqs)-1], bodies[len(bodies)-1])
		return nil
	}
	batch = pgx.Batch{}
	batch.Queue(l.q.insert, seqs, convs, bodies)
	if own {
		batch.Queue("COMMIT")
	}
	br = b.SendBatch(ctx, &batch)
	_, err = br.Exec()
	if err == nil && own {
		// A failed statement skips the rest of the batch: COMMIT runs only
		// after the insert succeeded, and reports a rollback if it did one.
		var tag interface{ String() string }
		if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
			err = fmt.Errorf("the transaction ended with %q instead of COMMIT", tag.String())
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("postgres: append: %w", err)
	}
	l.sealed(records, sealed, seqs[len(seqs)-1], bodies[len(bodies)-1])
	return nil
}

// sealed notes the last of the sealed records as the head and copies the
// sealed records to the caller's. The head may belong to a transaction
// that rolls back: see [Log.head].
func (l *Log) sealed(records []*audit.Record, sealed []audit.Record, seq int64, body string) {
	l.mu.Lock()
	l.head.seq, l.head.body, l.head.anchor = seq, []byte(body), sealed[len(sealed)-1].Anchor()
	l.mu.Unlock()
	for i, r := range records {
		*r = sealed[i]
	}
}

// readHead reads the results of the lock and the head query (after BEGIN
// when began) and returns the anchor of the last record, or the zero
// Anchor for an empty log. It decodes the record unless its row is the
// one of l.head.
func (l *Log) readHead(br pgx.BatchResults, began bool) (audit.Anchor, error) {
	if began {
		if _, err := br.Exec(); err != nil {
			return audit.Anchor{}, err
		}
	}
	if _, err := br.Exec(); err != nil {
		return audit.Anchor{}, fmt.Errorf("taking the chain's lock: %w", err)
	}
	var (
		seq  int64
		body []byte
	)
	err := br.QueryRow().Scan(&seq, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Anchor{}, nil
	}
	if err != nil {
		return audit.Anchor{}, fmt.Errorf("reading the last record: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq == l.head.seq && bytes.Equal(body, l.head.body) {
		return l.head.anchor, nil
	}
	r, err := auditrows.Decode(seq, "", body, false)
	if err != nil {
		return audit.Anchor{}, fmt.Errorf("the last record cannot be read: %w", err)
	}
	l.head.seq, l.head.body, l.head.anchor = seq, body, r.Anchor()
	return l.head.anchor, nil
}

// Records implements [audit.Reader]. It reads from one read-only
// transaction at isolation level REPEATABLE READ, a consistent snapshot of
// the log. A row that does not hold a valid record (JSON that does not
// decode, an unknown version or kind, a record in another row or with
// another conversation than its row says) ends the sequence with a
// [*audit.RecordError]; it never panics.
func (l *Log) Records(ctx context.Context, q *audit.Query) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		tx, err := l.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			yield(nil, fmt.Errorf("postgres: read the audit log: %w", err))
			return
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		var (
			rows  pgx.Rows
			after int64
		)
		if q != nil {
			after = int64(min(q.After, 1<<63-1))
		}
		if q != nil && q.ConversationID != "" {
			rows, err = tx.Query(ctx, l.q.ofConv, q.ConversationID, after)
		} else {
			rows, err = tx.Query(ctx, l.q.all, after)
		}
		if err != nil {
			yield(nil, fmt.Errorf("postgres: read the audit log: %w", err))
			return
		}
		defer rows.Close()
		var (
			seq  int64
			conv string
			body []byte
		)
		for rows.Next() {
			if err := rows.Scan(&seq, &conv, &body); err != nil {
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
			yield(nil, fmt.Errorf("postgres: read the audit log: %w", err))
		}
	}
}

// ProbeWrite checks that the log can be appended to now, without
// appending: in one transaction, sent in one round trip, it takes the
// chain's lock (waiting no longer than the statement timeout), reads the
// last record and makes a durable write that changes nothing, then
// commits. It fails when the database does not answer or cannot write, or
// the lock is held past the timeout, and with an error matching
// [audit.ErrBroken] when the last record cannot be read. A readiness
// check calls it.
func (l *Log) ProbeWrite(ctx context.Context) (err error) {
	if l.readOnly {
		return errors.New("postgres: probe: the audit log is open read-only")
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: probe: %w", err)
	}
	defer conn.Release()
	defer func() {
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(l.q.lock, l.q.lockName())
	b.Queue(l.q.head)
	b.Queue(l.q.touch)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, &b)
	_, err = l.readHead(br, true)
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		var tag interface{ String() string }
		if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
			err = fmt.Errorf("the transaction ended with %q instead of COMMIT", tag.String())
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("postgres: probe: %w", err)
	}
	return nil
}
