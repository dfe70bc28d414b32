package groupcommit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite"
)

// store is a database with its committer, for tests.
type store struct {
	db     *sql.DB
	commit *Committer
}

func (s *store) inTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	return s.commit.Do(ctx, fn)
}

// openRaw opens a database file in WAL mode with one writing connection
// and a table t(k TEXT PRIMARY KEY).
func openRaw(t testing.TB) *store {
	t.Helper()
	return openRawWith(t, nil)
}

// openRawWith is openRaw with the committer's undone function.
func openRawWith(t testing.TB, undone func()) *store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	s := &store{db: db, commit: New(db, nil, undone)}
	t.Cleanup(func() {
		s.commit.Close()
		db.Close()
	})
	if err := s.inTx(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "CREATE TABLE t (k TEXT PRIMARY KEY)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func insert(k string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (k) VALUES (?)", k)
		return err
	}
}

func keys(t *testing.T, s *store) string {
	t.Helper()
	rows, err := s.db.Query("SELECT k FROM t ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ks []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}

// batch queues ops while the committer is held by a first operation, so
// that they run together in the next transaction; it returns their
// outcomes in order.
func batch(t *testing.T, s *store, ctxs []context.Context, ops ...func(context.Context, *sql.Tx) error) []error {
	return batchThen(t, s, ctxs, func() {}, ops...)
}

// batchThen is batch calling queued once every op is queued, before the
// batch runs.
func batchThen(t *testing.T, s *store, ctxs []context.Context, queued func(), ops ...func(context.Context, *sql.Tx) error) []error {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.inTx(context.Background(), func(context.Context, *sql.Tx) error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		// Queue in order: each goroutine has queued once the channel
		// holds it.
		wg.Go(func() { errs[i] = s.inTx(ctx, op) })
		for len(s.commit.ops) < i+1 {
			runtime.Gosched()
		}
	}
	queued()
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

func TestIsolatesFailures(t *testing.T) {
	s := openRaw(t)
	errs := batch(t, s, nil,
		insert("a"),
		insert("a"), // a duplicate of the one before it in the batch
		insert("b"),
		func(context.Context, *sql.Tx) error { panic("boom") },
		insert("c"),
		func(ctx context.Context, tx *sql.Tx) error { // writes, then fails: undone
			if err := insert("d")(ctx, tx); err != nil {
				return err
			}
			return errors.New("refused")
		},
	)
	want := []string{"", "UNIQUE", "", "panicked: boom", "", "refused"}
	for i, err := range errs {
		switch {
		case want[i] == "" && err != nil:
			t.Errorf("op %d: %v, want success", i, err)
		case want[i] != "" && (err == nil || !strings.Contains(err.Error(), want[i])):
			t.Errorf("op %d: %v, want an error saying %q", i, err, want[i])
		}
	}
	if got := keys(t, s); got != "a,b,c" {
		t.Errorf("rows %q, want a,b,c", got)
	}
}

// TestReportsUndone: the committer says when it has undone writes, once
// per failed operation of a batch and once for a failed operation alone
// in its transaction, and never for operations that succeed.
func TestReportsUndone(t *testing.T) {
	var undone atomic.Int64
	s := openRawWith(t, func() { undone.Add(1) })
	batch(t, s, nil,
		insert("a"),
		insert("a"), // fails
		insert("b"),
		func(context.Context, *sql.Tx) error { panic("boom") },
		insert("c"),
	)
	if n := undone.Load(); n != 2 {
		t.Errorf("a batch with two failed operations: undone called %d times, want 2", n)
	}
	if err := s.inTx(t.Context(), insert("a")); err == nil {
		t.Fatal("a duplicate alone in its transaction succeeded")
	}
	if n := undone.Load(); n != 3 {
		t.Errorf("after a failed operation alone: undone called %d times in all, want 3", n)
	}
	if err := s.inTx(t.Context(), insert("d")); err != nil {
		t.Fatal(err)
	}
	if n := undone.Load(); n != 3 {
		t.Errorf("after a successful operation: undone called %d times in all, want 3", n)
	}
}

func TestSkipsCanceledOperations(t *testing.T) {
	s := openRaw(t)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	// A context that ends once its op has run: the op commits and its
	// caller learns it.
	late, lateCancel := context.WithCancel(context.Background())
	errs := batch(t, s, []context.Context{nil, late, nil},
		insert("a"),
		insert("m"),
		func(ctx context.Context, tx *sql.Tx) error {
			lateCancel()
			return insert("b")(ctx, tx)
		},
	)
	if err := errors.Join(errs...); err != nil {
		t.Errorf("outcomes: %v", err)
	}
	if got := keys(t, s); got != "a,b,m" {
		t.Errorf("rows %q, want a,b,m", got)
	}
	if err := s.inTx(canceled, insert("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled before queueing: %v", err)
	}
	// A context that ends while its op waits in the queue: the op does
	// not run.
	waiting, stop := context.WithCancel(context.Background())
	errs = batchThen(t, s, []context.Context{nil, waiting}, stop, insert("c"), insert("y"))
	if errs[0] != nil || !errors.Is(errs[1], context.Canceled) {
		t.Errorf("outcomes %v, want nil and context.Canceled", errs)
	}
	if got := keys(t, s); got != "a,b,c,m" {
		t.Errorf("rows %q, want a,b,c,m", got)
	}
}

func TestOrder(t *testing.T) {
	s := openRaw(t)
	var seen []string
	var ops []func(context.Context, *sql.Tx) error
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		ops = append(ops, func(ctx context.Context, tx *sql.Tx) error {
			// Each op sees the rows of those before it in the batch.
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
				return err
			}
			seen = append(seen, fmt.Sprint(n))
			return insert(k)(ctx, tx)
		})
	}
	for i, err := range batch(t, s, nil, ops...) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if got := strings.Join(seen, " "); got != "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19" {
		t.Errorf("counts seen %q", got)
	}
}

func TestClose(t *testing.T) {
	s := openRaw(t)
	s.commit.Close()
	if err := s.inTx(context.Background(), insert("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v, want ErrClosed", err)
	}
	s.commit.Close() // idempotent
}

func TestMapsErrors(t *testing.T) {
	s := openRaw(t)
	s.db.Close() // every transaction now fails to begin
	mapped := errors.New("mapped")
	c := New(s.db, func(error) error { return mapped }, nil)
	defer c.Close()
	if err := c.Do(context.Background(), insert("x")); !errors.Is(err, mapped) {
		t.Errorf("got %v, want the mapped error", err)
	}
}
