// Package groupcommit runs the writes of a SQLite database that has one
// writing connection as group commits: the writes queued while a
// transaction commits run together in the next one, each inside a
// savepoint of its own, and share its single fsync.
//
// An operation that fails is rolled back to its savepoint alone; the
// others of its batch commit. Each caller gets its own outcome once the
// batch's commit is durable, never before. Operations run one after the
// other, in the order they were queued: an operation sees the effects of
// those before it in its batch, exactly as if each had committed alone.
// They run with a context that is not canceled, because interrupting a
// statement may make SQLite roll back the whole transaction, and with it
// the other operations of the batch; a caller whose context ends before
// its operation starts gets the context's error and nothing of its
// operation runs.
package groupcommit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// maxBatch bounds the operations of one transaction.
const maxBatch = 256

// writeOp is one queued write.
type writeOp struct {
	ctx  context.Context
	fn   func(context.Context, *sql.Tx) error
	done chan error // capacity 1
}

// Committer owns the transactions of a database's writing connection. It
// is safe for concurrent use.
type Committer struct {
	db     *sql.DB
	mapErr func(error) error
	undone func() // called after the committer undid an operation's writes, or nil

	mu     sync.RWMutex // held for reading to queue, for writing to close
	closed bool         // guarded by mu
	ops    chan *writeOp
	exited chan struct{} // closed when the goroutine returns

	// The savepoint statements, prepared on db by the goroutine before
	// the first transaction that needs them and closed when it returns;
	// used by that goroutine only.
	savepoint, rollbackTo, release *sql.Stmt
}

// The statements that isolate an operation from the others of its batch.
const (
	savepointSQL  = "SAVEPOINT op"
	rollbackToSQL = "ROLLBACK TO op"
	releaseSQL    = "RELEASE op"
)

// New starts the committer of db, whose transactions must all be its own
// (db should have a single connection, opened with BEGIN IMMEDIATE
// transactions). mapErr, when not nil, maps the errors of beginning,
// releasing and committing transactions. undone, when not nil, is called
// on the committer's goroutine each time it has undone writes of a
// transaction: rolled an operation that failed back to its savepoint, or
// rolled the transaction back; whoever keeps state that mirrors the
// transaction's writes then drops it. Close it when done.
func New(db *sql.DB, mapErr func(error) error, undone func()) *Committer {
	if mapErr == nil {
		mapErr = func(err error) error { return err }
	}
	if undone == nil {
		undone = func() {}
	}
	c := &Committer{db: db, mapErr: mapErr, undone: undone, ops: make(chan *writeOp, maxBatch), exited: make(chan struct{})}
	go c.loop()
	return c
}

// ErrClosed is returned for writes queued after Close.
var ErrClosed = errors.New("groupcommit: closed")

// Do runs fn in a write transaction shared with other writes and returns
// its outcome once committed. fn must use the context it is given, which
// is not canceled, never one of its caller's. A panic in fn is returned as
// an error.
func (c *Committer) Do(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := ops.Get().(*writeOp)
	op.ctx, op.fn = ctx, fn
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		op.ctx, op.fn = nil, nil
		ops.Put(op)
		return ErrClosed
	}
	c.ops <- op
	c.mu.RUnlock()
	// Wait even when ctx ends: the operation may be running, and its
	// caller must learn whether it committed.
	err := <-op.done
	op.ctx, op.fn = nil, nil
	ops.Put(op)
	return err
}

// ops pools the values Do queues, with their channels: an operation goes
// back to the pool once its caller has its outcome, when the committer no
// longer refers to it.
var ops = sync.Pool{New: func() any { return &writeOp{done: make(chan error, 1)} }}

// Close stops the committer once the writes already queued are done. It
// does not close the database. It is idempotent.
func (c *Committer) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.ops)
	}
	c.mu.Unlock()
	<-c.exited
}

func (c *Committer) loop() {
	defer close(c.exited)
	defer c.closeStatements()
	batch := make([]*writeOp, 0, maxBatch)
	for op := range c.ops {
		batch = append(batch[:0], op)
	more:
		for len(batch) < maxBatch {
			select {
			case op, ok := <-c.ops:
				if !ok {
					break more
				}
				batch = append(batch, op)
			default:
				break more
			}
		}
		c.run(batch)
		clear(batch)
	}
}

// run runs a batch in one transaction and tells every operation its
// outcome.
func (c *Committer) run(batch []*writeOp) {
	errs := make([]error, len(batch))
	live := 0 // operations whose context had not ended
	for i, op := range batch {
		if errs[i] = op.ctx.Err(); errs[i] == nil {
			live++
		}
	}
	if live > 0 {
		c.runLive(batch, errs, live)
	}
	for i, op := range batch {
		op.done <- errs[i]
	}
}

// prepare prepares the savepoint statements unless they are. It must run
// outside a transaction: the database's one connection must be free.
func (c *Committer) prepare(ctx context.Context) error {
	for _, st := range []struct {
		stmt  **sql.Stmt
		query string
	}{{&c.savepoint, savepointSQL}, {&c.rollbackTo, rollbackToSQL}, {&c.release, releaseSQL}} {
		if *st.stmt != nil {
			continue
		}
		stmt, err := c.db.PrepareContext(ctx, st.query)
		if err != nil {
			return err
		}
		*st.stmt = stmt
	}
	return nil
}

// closeStatements closes the savepoint statements.
func (c *Committer) closeStatements() {
	for _, stmt := range []*sql.Stmt{c.savepoint, c.rollbackTo, c.release} {
		if stmt != nil {
			stmt.Close()
		}
	}
}

// runLive runs the operations of batch whose errs entry is nil.
func (c *Committer) runLive(batch []*writeOp, errs []error, live int) {
	ctx := context.Background()
	if live > 1 {
		if err := c.prepare(ctx); err != nil {
			setLive(errs, c.mapErr(err))
			return
		}
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		setLive(errs, c.mapErr(err))
		return
	}
	// The savepoint statements of this transaction, when it needs them.
	var savepoint, rollbackTo, release *sql.Stmt
	if live > 1 {
		savepoint, rollbackTo, release = tx.StmtContext(ctx, c.savepoint), tx.StmtContext(ctx, c.rollbackTo), tx.StmtContext(ctx, c.release)
	}
	ok := make([]bool, len(batch)) // ran and succeeded, not yet committed
	for i, op := range batch {
		if errs[i] != nil {
			continue
		}
		opCtx := context.WithoutCancel(op.ctx)
		if live == 1 {
			// Alone in its transaction: no savepoint needed.
			if errs[i] = call(opCtx, op.fn, tx); errs[i] != nil {
				tx.Rollback()
				c.undone()
				return
			}
			ok[i] = true
			continue
		}
		if _, err := savepoint.ExecContext(ctx); err != nil {
			c.abort(tx, errs, ok, c.mapErr(err))
			return
		}
		if errs[i] = call(opCtx, op.fn, tx); errs[i] != nil {
			_, err := rollbackTo.ExecContext(ctx)
			c.undone()
			if err != nil {
				c.abort(tx, errs, ok, c.mapErr(err))
				return
			}
		} else {
			ok[i] = true
		}
		if _, err := release.ExecContext(ctx); err != nil {
			c.abort(tx, errs, ok, c.mapErr(err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		c.undone()
		for i := range ok {
			if ok[i] {
				errs[i] = c.mapErr(err)
			}
		}
	}
}

// call runs fn, turning a panic into an error so that the committer and
// the other operations of the batch survive it.
func call(ctx context.Context, fn func(context.Context, *sql.Tx) error, tx *sql.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("groupcommit: write operation panicked: %v", r)
		}
	}()
	return fn(ctx, tx)
}

// abort rolls the transaction back after a failure of its savepoints: the
// operations that had succeeded, and those not yet run, get err.
func (c *Committer) abort(tx *sql.Tx, errs []error, ok []bool, err error) {
	tx.Rollback()
	c.undone()
	for i := range errs {
		if ok[i] || errs[i] == nil {
			errs[i] = err
		}
	}
}

// setLive sets err for every operation still without an outcome.
func setLive(errs []error, err error) {
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
}
