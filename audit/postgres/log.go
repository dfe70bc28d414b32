package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
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
	// created or migrated, nothing is sealed, and Append fails. False
	// means read and write.
	ReadOnly bool
	// StatementTimeout bounds each append, seal batch and probe (the wait
	// for a connection and for the chain's lock included): one that takes
	// longer fails with an error matching [context.DeadlineExceeded].
	// Reading records is bounded by the caller's context only. Zero means
	// 5 seconds; a negative value means no bound but the caller's context.
	StatementTimeout time.Duration
	// SealInterval is how often the Log's sealer looks for records
	// committed but not sealed, whoever wrote them (an instance that
	// crashed included); it also runs shortly after [Log.Wake]. Zero means
	// one second; a negative value means no sealer of this Log's own:
	// records are then sealed by [Log.SealPending], [Log.Append] and
	// [Log.Close] here, or by the sealer of another Log on the schema.
	SealInterval time.Duration
}

// The sealer's pace.
const (
	// defaultSealInterval is the period of the sealer's timer.
	defaultSealInterval = time.Second
	// sealGap is how long the sealer waits after a wake-up before it
	// seals, so that the commits of that time share one batch (and its
	// one commit): at most a batch per gap and Log, whatever the load.
	sealGap = 200 * time.Millisecond
	// sealBatchMax bounds the records of one seal batch.
	sealBatchMax = 1000
)

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
// process or in many on several machines, may write to the same schema.
// Records written inside a caller's transaction ([Log.QueueTx],
// [Log.AppendTx]) are stored unsealed, with no place in the chain and no
// lock taken; a sealer gives them their sequence numbers and hashes after
// they commit, in batches, holding a transaction-scoped advisory lock on
// the schema's chain, so that one sealer at a time extends the chain
// whichever instance runs it. [Log.Append] seals at once under the same
// lock. The primary key on the sequence number refuses a fork even if the
// lock were bypassed. Close it when done.
type Log struct {
	// Fixed at creation.
	pool     *pgxpool.Pool
	ownPool  bool
	readOnly bool
	unsealed bool // the schema has the table of unsealed records
	q        queries
	timeout  time.Duration // of each append; 0: none

	// The sealer, when the Log runs one: wake asks it to seal soon; quit
	// stops it, and done is closed when it stopped.
	wake      chan struct{}
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// afterTake, when set (by tests), runs in a seal batch after it took
	// the unsealed records and before it inserts them, with the PID of the
	// batch's backend; afterRound, after each round of the sealer, with
	// its error.
	afterTake  func(pid uint32)
	afterRound func(error)

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
	sealErr error // guarded by mu: the last failure of the sealer's batches
}

// ErrNotLog is returned by [Open] and [New] for a schema whose audit
// tables are at a version this build does not know, and with
// [Options.ReadOnly] for a schema that holds no audit log.
var ErrNotLog = errors.New("postgres: not an audit log this build can read")

// SchemaVersion is the version of the tables this package writes, kept in
// the schema's audit_schema table (apart from the version of other
// tables, so that the log can share a schema with the conversations of
// package github.com/toolgate/toolgate/store/postgres).
const SchemaVersion = 2

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
	// 2: the records committed but not sealed yet, in the order of their
	// insert; body is the JSON form of an unsealed record (seq 0, no
	// hashes). The chained records stay as they are.
	`CREATE TABLE S.audit_unsealed (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		conversation_id text NOT NULL,
		body text NOT NULL
	);`,
}

// queries are the statements of a [Log], with the schema filled in.
type queries struct {
	schema                             string
	lock, tryLock, head, insert        string
	all, ofConv                        string
	insertUnsealed, take               string
	unsealedAll, unsealedOfConv        string
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
		lock:    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
		tryLock: "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))",
		head:    r.Replace("SELECT seq, body FROM S.audit_records ORDER BY seq DESC LIMIT 1"),
		insert:  r.Replace("INSERT INTO S.audit_records (seq, conversation_id, body) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])"),
		all:     r.Replace("SELECT seq, conversation_id, body FROM S.audit_records WHERE seq > $1 ORDER BY seq"),
		ofConv:  r.Replace("SELECT seq, conversation_id, body FROM S.audit_records WHERE conversation_id = $1 AND seq > $2 ORDER BY seq"),
		// The identity numbers the rows in the order of the arrays.
		insertUnsealed: r.Replace("INSERT INTO S.audit_unsealed (conversation_id, body) SELECT c, b FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(c, b, n) ORDER BY n"),
		// The oldest unsealed records, at most $1, as the statement's
		// snapshot shows them: those committed when it began.
		take:           r.Replace("DELETE FROM S.audit_unsealed WHERE id IN (SELECT id FROM S.audit_unsealed ORDER BY id LIMIT $1) RETURNING id, conversation_id, body"),
		unsealedAll:    r.Replace("SELECT id, conversation_id, body FROM S.audit_unsealed ORDER BY id"),
		unsealedOfConv: r.Replace("SELECT id, conversation_id, body FROM S.audit_unsealed WHERE conversation_id = $1 ORDER BY id"),

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
	l, err := newLog(ctx, pool, opts, nil)
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
	return newLog(ctx, pool, opts, nil)
}

func newLog(ctx context.Context, pool *pgxpool.Pool, opts *Options, afterRound func(error)) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = "public"
	}
	l := &Log{pool: pool, readOnly: o.ReadOnly, q: newQueries(o.Schema), timeout: 5 * time.Second, afterRound: afterRound}
	if o.StatementTimeout != 0 {
		l.timeout = max(o.StatementTimeout, 0)
	}
	var err error
	if o.ReadOnly {
		err = l.checkSchema(ctx)
	} else {
		l.unsealed = true
		err = l.migrate(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: open the audit log in schema %q: %w", o.Schema, err)
	}
	if !o.ReadOnly && o.SealInterval >= 0 {
		l.wake, l.quit, l.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go l.runSealer(cmp.Or(o.SealInterval, defaultSealInterval))
	}
	return l, nil
}

// checkSchema checks, for a read-only log, that the tables exist at a
// version this build reads: the one it writes, or version 1, which has no
// unsealed records.
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
	if v < 1 || v > SchemaVersion {
		return fmt.Errorf("%w: the audit tables are at version %d, this build reads 1 to %d", ErrNotLog, v, SchemaVersion)
	}
	l.unsealed = v >= 2
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

// Close stops the Log's sealer (a batch it is sealing commits or rolls
// back first), seals the records committed but not sealed yet (within the
// statement timeout), and releases the Log. It closes the connection pool
// when the Log was made by [Open]; a pool given to [New] stays open, and
// must still be open. An error says that the last seal failed: the
// records it did not seal stay committed, unsealed, and the next sealer
// of the schema, in any instance, seals them; nothing is half-sealed.
// Calls after the first return nil.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		if l.quit != nil {
			close(l.quit)
			<-l.done
		}
		if !l.readOnly {
			ctx, cancel := l.bound(context.Background())
			if _, err = l.SealPending(ctx); err != nil {
				err = fmt.Errorf("postgres: close: %w", err)
			}
			cancel()
		}
		if l.ownPool {
			l.pool.Close()
		}
	})
	return err
}

// Batcher sends batches of statements on one connection: a [pgx.Tx], a
// *[pgx.Conn] or a *[pgxpool.Conn].
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Append implements [audit.Log]: it seals at once, in one transaction of
// two round trips that holds the chain's lock from before it reads the
// head until it commits, first the records committed but not sealed yet
// (see [Log.SealPending]), then these. Append refuses to extend a log
// whose last record, or an unsealed one, cannot be read, with an error
// matching [audit.ErrBroken].
func (l *Log) Append(ctx context.Context, records ...*audit.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.readOnly {
		return errors.New("postgres: append: the audit log is open read-only")
	}
	if len(records) == 0 {
		return nil
	}
	sealed := make([]audit.Record, len(records))
	for i, r := range records {
		if r == nil {
			return fmt.Errorf("postgres: append: %w: record %d of the append is nil", audit.ErrInvalidRecord, i)
		}
		sealed[i] = *r
		// Check the records before the lock is taken.
		probe := sealed[i]
		if err := audit.Seal(audit.Anchor{}, &probe); err != nil {
			return fmt.Errorf("postgres: append: %w", err)
		}
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	if _, _, err := l.sealBatch(ctx, true, 1<<62, sealed); err != nil {
		return fmt.Errorf("postgres: append: %w", err)
	}
	for i, r := range records {
		*r = sealed[i]
	}
	return nil
}

// AppendTx writes records inside the transaction that b runs, which the
// caller has begun and will commit or roll back: the records become part
// of the log exactly when that transaction commits, together with
// whatever else it wrote. They are written unsealed ([audit.Record.Unsealed]),
// without the chain's lock, so that transactions that write records
// never wait for one another; a sealer gives them their place in the
// chain after the commit (call [Log.Wake] then). On success it sets the
// Time of the caller's records when zero, and leaves Seq and the hashes
// zero; a record with invalid fields gives an error matching
// [audit.ErrInvalidRecord], and nothing is written. The tables must exist
// ([Open] or [New] creates them).
func (l *Log) AppendTx(ctx context.Context, b Batcher, records ...*audit.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var batch pgx.Batch
	if err := l.QueueTx(&batch, records...); err != nil || batch.Len() == 0 {
		return err
	}
	if b == nil {
		return errors.New("postgres: append: no transaction to write the records in")
	}
	br := b.SendBatch(ctx, &batch)
	_, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("postgres: append: %w", err)
	}
	return nil
}

// QueueTx is [Log.AppendTx] with the insert of the records queued on
// batch instead of sent: the caller sends batch in its transaction,
// typically with its COMMIT, and must treat the failure of any statement
// of batch as the failure of the transaction. It makes no round trip and
// takes no lock. On success it sets the Time of the caller's records when
// zero; on failure nothing is queued.
func (l *Log) QueueTx(batch *pgx.Batch, records ...*audit.Record) error {
	if l.readOnly {
		return errors.New("postgres: append: the audit log is open read-only")
	}
	if len(records) == 0 {
		return nil
	}
	if batch == nil {
		return errors.New("postgres: append: no batch to queue the records on")
	}
	convs := make([]string, len(records))
	bodies := make([]string, len(records))
	times := make([]time.Time, len(records))
	for i, r := range records {
		if r == nil {
			return fmt.Errorf("postgres: append: %w: record %d of the append is nil", audit.ErrInvalidRecord, i)
		}
		u := *r
		// Seal checks the fields and sets the time; the unsealed form
		// then drops the place in the chain it gave.
		if err := audit.Seal(audit.Anchor{}, &u); err != nil {
			return fmt.Errorf("postgres: append: %w", err)
		}
		u.Seq, u.PrevHash, u.Hash = 0, "", ""
		body, err := u.MarshalJSON()
		if err != nil {
			return fmt.Errorf("postgres: append: %w: %v", audit.ErrInvalidRecord, err)
		}
		convs[i], bodies[i], times[i] = u.ConversationID, string(body), u.Time
	}
	batch.Queue(l.q.insertUnsealed, convs, bodies)
	for i, r := range records {
		r.Seq, r.PrevHash, r.Hash, r.Time = 0, "", "", times[i]
	}
	return nil
}

// Wake tells the Log's sealer that records written with [Log.QueueTx] or
// [Log.AppendTx] were committed, so that it seals them soon (within
// about 200 ms) rather than at its next round. It never blocks; without a
// sealer of its own (read-only, a negative [Options.SealInterval], after
// Close) it does nothing.
func (l *Log) Wake() {
	if l.wake == nil {
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// SealPending implements [audit.Sealer]: it seals the records committed
// but not sealed yet, in batches of at most 1,000, each one transaction
// that holds the chain's lock (waiting for a sealer of another Log, within
// the statement timeout of each batch), until a batch finds fewer than
// that. It returns how many records it sealed. A failed batch rolls back
// whole: its records stay unsealed, and nothing is half-sealed. A record
// that cannot be read stops sealing with an error matching
// [audit.ErrBroken]: it is not sealed, nor any record after it, until it
// is repaired.
func (l *Log) SealPending(ctx context.Context) (uint64, error) {
	if l.readOnly {
		return 0, errors.New("postgres: seal: the audit log is open read-only")
	}
	var total uint64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		bctx, cancel := l.bound(ctx)
		n, more, err := l.sealBatch(bctx, true, sealBatchMax, nil)
		cancel()
		total += uint64(n)
		if err != nil {
			return total, fmt.Errorf("postgres: seal: %w", err)
		}
		if !more {
			return total, nil
		}
	}
}

// runSealer is the Log's sealer: it seals after a wake-up (waiting
// sealGap first) and every interval, until quit is closed. It does not
// wait for the chain's lock: when another sealer holds it, that one seals,
// and what it leaves is sealed at the next round. It seals on a
// connection of its own, made with the pool's configuration, so that it
// takes no connection of the pool's users (nor leaves an idle one there);
// when that connection cannot be made, it borrows one from the pool.
func (l *Log) runSealer(interval time.Duration) {
	defer close(l.done)
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var own *pgx.Conn
	defer func() {
		if own != nil {
			_ = own.Close(context.Background())
		}
	}()
	batch := func(ctx context.Context) (bool, error) {
		if own == nil || own.IsClosed() {
			own = nil
			if c, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy()); err == nil {
				own = c
			}
		}
		if own == nil {
			_, more, err := l.sealBatch(ctx, false, sealBatchMax, nil)
			return more, err
		}
		_, more, err := l.sealBatchOn(ctx, own, false, sealBatchMax, nil)
		if err != nil && own.PgConn().TxStatus() != 'I' {
			// Left in a transaction (a lost connection): start afresh.
			_ = own.Close(context.Background())
			own = nil
		}
		return more, err
	}
	for {
		select {
		case <-l.quit:
			return
		case <-timer.C:
		case <-l.wake:
			gap := time.NewTimer(sealGap)
			select {
			case <-l.quit:
				gap.Stop()
				return
			case <-gap.C:
			}
		}
		for {
			ctx, cancel := l.bound(context.Background())
			more, err := batch(ctx)
			cancel()
			l.mu.Lock()
			l.sealErr = err
			l.mu.Unlock()
			if err != nil || !more {
				if l.afterRound != nil {
					l.afterRound(err)
				}
				break
			}
		}
		timer.Reset(interval)
	}
}

// sealBatch seals, in one transaction on a connection of the pool, the
// oldest unsealed records committed when it takes them, at most limit,
// and then the records of own (a caller's [Log.Append], sealed in place),
// after the head of the chain. With wait it waits for the chain's lock;
// without, it does nothing when another transaction holds it. It returns
// how many unsealed records it sealed and whether it found limit of them
// (there may be more).
func (l *Log) sealBatch(ctx context.Context, wait bool, limit int64, own []audit.Record) (int, bool, error) {
	pc, err := l.pool.Acquire(ctx)
	if err != nil {
		return 0, false, err
	}
	defer pc.Release()
	return l.sealBatchOn(ctx, pc.Conn(), wait, limit, own)
}

// sealBatchOn is [Log.sealBatch] on conn, which is idle.
func (l *Log) sealBatchOn(ctx context.Context, conn *pgx.Conn, wait bool, limit int64, own []audit.Record) (n int, more bool, err error) {
	defer func() {
		if conn.PgConn().TxStatus() != 'I' {
			if _, rerr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	var b pgx.Batch
	b.Queue("BEGIN")
	if !wait {
		b.Queue(l.q.tryLock, l.q.lockName())
		var got bool
		br := conn.SendBatch(ctx, &b)
		_, err := br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&got)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, false, fmt.Errorf("taking the chain's lock: %w", err)
		}
		if !got {
			return 0, false, nil
		}
		b = pgx.Batch{}
	} else {
		b.Queue(l.q.lock, l.q.lockName())
	}
	b.Queue(l.q.head)
	if l.unsealed {
		b.Queue(l.q.take, limit)
	}
	br := conn.SendBatch(ctx, &b)
	head, taken, err := l.readTake(br, wait)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, false, err
	}
	if len(taken)+len(own) == 0 {
		return 0, false, nil
	}
	if l.afterTake != nil {
		l.afterTake(conn.PgConn().PID())
	}
	recs := append(taken, own...)
	seqs := make([]int64, len(recs))
	convs := make([]string, len(recs))
	bodies := make([]string, len(recs))
	for i := range recs {
		if err := audit.Seal(head, &recs[i]); err != nil {
			return 0, false, err
		}
		body, err := recs[i].MarshalJSON()
		if err != nil {
			return 0, false, fmt.Errorf("%w: %v", audit.ErrInvalidRecord, err)
		}
		seqs[i], convs[i], bodies[i] = int64(recs[i].Seq), recs[i].ConversationID, string(body)
		head = recs[i].Anchor()
	}
	b = pgx.Batch{}
	b.Queue(l.q.insert, seqs, convs, bodies)
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, &b)
	_, err = br.Exec()
	if err == nil {
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
		return 0, false, err
	}
	l.mu.Lock()
	l.head.seq, l.head.body, l.head.anchor = seqs[len(seqs)-1], []byte(bodies[len(bodies)-1]), head
	l.mu.Unlock()
	copy(own, recs[len(taken):])
	return len(taken), int64(len(taken)) >= limit, nil
}

// readTake reads the results of BEGIN and the lock (when began), the head query
// and the take of the unsealed records: the anchor of the last record (the
// zero Anchor for an empty log) and the records taken, in the order of
// their insert.
func (l *Log) readTake(br pgx.BatchResults, began bool) (audit.Anchor, []audit.Record, error) {
	if began {
		if _, err := br.Exec(); err != nil { // BEGIN
			return audit.Anchor{}, nil, err
		}
		if _, err := br.Exec(); err != nil {
			return audit.Anchor{}, nil, fmt.Errorf("taking the chain's lock: %w", err)
		}
	}
	head, err := l.scanHead(br.QueryRow())
	if err != nil || !l.unsealed {
		return head, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return audit.Anchor{}, nil, fmt.Errorf("taking the unsealed records: %w", err)
	}
	defer rows.Close()
	type row struct {
		id   int64
		conv string
		body []byte
	}
	var taken []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.conv, &r.body); err != nil {
			return audit.Anchor{}, nil, &audit.RecordError{Problem: audit.ProblemUndecodable, Detail: "an unsealed row of the wrong types", Err: err}
		}
		taken = append(taken, r)
	}
	if err := rows.Err(); err != nil {
		return audit.Anchor{}, nil, fmt.Errorf("taking the unsealed records: %w", err)
	}
	// RETURNING has no order of its own.
	slices.SortFunc(taken, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	recs := make([]audit.Record, len(taken))
	for i, t := range taken {
		r, err := auditrows.DecodeUnsealed(t.id, t.conv, t.body)
		if err != nil {
			return audit.Anchor{}, nil, err
		}
		recs[i] = *r
	}
	return head, recs, nil
}

// scanHead reads the head query's row and returns the anchor of the last
// record, or the zero Anchor for an empty log. It decodes the record
// unless its row is the one of l.head.
func (l *Log) scanHead(row pgx.Row) (audit.Anchor, error) {
	var (
		seq  int64
		body []byte
	)
	err := row.Scan(&seq, &body)
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
// the log: the sealed records in sequence order, then those committed but
// not sealed yet, in the order of their insert, each exactly once (a seal
// batch moves records in one transaction). A row that does not hold a
// valid record (JSON that does not decode, an unknown version or kind, a
// record in another row or with another conversation than its row says,
// a sealed record among the unsealed) ends the sequence with a
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
			return
		}
		rows.Close()
		if !l.unsealed {
			return
		}
		if q != nil && q.ConversationID != "" {
			rows, err = tx.Query(ctx, l.q.unsealedOfConv, q.ConversationID)
		} else {
			rows, err = tx.Query(ctx, l.q.unsealedAll)
		}
		if err != nil {
			yield(nil, fmt.Errorf("postgres: read the audit log: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&seq, &conv, &body); err != nil {
				yield(nil, &audit.RecordError{Problem: audit.ProblemUndecodable, Detail: "an unsealed row of the wrong types", Err: err})
				return
			}
			r, err := auditrows.DecodeUnsealed(seq, conv, body)
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
// [audit.ErrBroken] when the last record cannot be read or the last batch
// of the Log's sealer found a record it cannot read. A readiness check
// calls it.
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
	_, err = br.Exec()
	if err == nil {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("taking the chain's lock: %w", err)
		}
	}
	if err == nil {
		_, err = l.scanHead(br.QueryRow())
	}
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
	if err == nil {
		l.mu.Lock()
		if errors.Is(l.sealErr, audit.ErrBroken) {
			err = fmt.Errorf("sealing: %w", l.sealErr)
		}
		l.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("postgres: probe: %w", err)
	}
	return nil
}
