package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
	"github.com/toolgate/toolgate/audit/postgres"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// testURL returns the connection string of the database the tests use,
// from TOOLGATE_POSTGRES_URL. Without it the test is skipped, or fails
// when CI is set: CI must run these tests (.ci/postgres.sh starts a
// server for them).
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.URL(t)
}

// newSchema returns the name of a schema no other test uses, and drops it
// when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	_, schema := pgtest.Schema(t, "toolgate_audit_test_")
	return schema
}

// openIn opens a log with a connection pool of its own, as an instance of
// the service would, and closes it when the test ends.
func openIn(t testing.TB, schema string, opts *postgres.Options) *postgres.Log {
	t.Helper()
	o := postgres.Options{Schema: schema}
	if opts != nil {
		o = *opts
		o.Schema = schema
	}
	l, err := postgres.Open(context.Background(), testURL(t), &o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// raw returns a connection whose search_path is the schema, as someone
// tampering with the tables.
func raw(t testing.TB, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t testing.TB, conn *pgx.Conn, query string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func wantBroken(t *testing.T, err error, seq uint64, problem audit.Problem) {
	t.Helper()
	var re *audit.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v, want a *RecordError (%s at record %d)", err, problem, seq)
	}
	if re.Seq != seq || re.Problem != problem {
		t.Errorf("got %s at record %d (%v), want %s at record %d", re.Problem, re.Seq, err, problem, seq)
	}
}

func TestConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audittest.Opener {
		schema := newSchema(t)
		return func(t *testing.T) audit.Log { return openIn(t, schema, nil) }
	})
}

// filled returns a schema holding a log of n sample records.
func filled(t *testing.T, n int) (string, []*audit.Record) {
	t.Helper()
	schema := newSchema(t)
	l := openIn(t, schema, nil)
	rs := make([]*audit.Record, n)
	for i := range rs {
		rs[i] = audittest.Sample(i)
	}
	if err := l.Append(t.Context(), rs...); err != nil {
		t.Fatal(err)
	}
	return schema, rs
}

// TestTampered changes the stored rows with raw SQL and checks that
// verification names the record.
func TestTampered(t *testing.T) {
	const n = 6
	zeros := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name    string
		sql     string
		seq     uint64
		problem audit.Problem
	}{
		{"reason", `UPDATE audit_records SET body = jsonb_set(body::jsonb, '{reason}', '"forged"')::text WHERE seq = 3`, 3, audit.ProblemHashMismatch},
		{"hash", `UPDATE audit_records SET body = jsonb_set(body::jsonb, '{hash}', '"` + zeros + `"')::text WHERE seq = 1`, 1, audit.ProblemHashMismatch},
		{"body not JSON", `UPDATE audit_records SET body = 'forged' WHERE seq = 6`, 6, audit.ProblemUndecodable},
		{"conversation column", `UPDATE audit_records SET conversation_id = 'forged' WHERE seq = 2`, 2, audit.ProblemInvalidField},
		{"middle deleted", `DELETE FROM audit_records WHERE seq = 4`, 4, audit.ProblemOutOfSequence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, _ := filled(t, n)
			mustExec(t, raw(t, schema), tc.sql)
			rep, err := audit.Verify(t.Context(), openIn(t, schema, &postgres.Options{ReadOnly: true}), nil)
			wantBroken(t, err, tc.seq, tc.problem)
			if rep.Records != tc.seq-1 {
				t.Errorf("report counts %d intact records, want %d", rep.Records, tc.seq-1)
			}
		})
	}
	t.Run("last deleted", func(t *testing.T) {
		schema, rs := filled(t, n)
		head := rs[n-1].Anchor()
		mustExec(t, raw(t, schema), "DELETE FROM audit_records WHERE seq = $1", n)
		l := openIn(t, schema, &postgres.Options{ReadOnly: true})
		if _, err := audit.Verify(t.Context(), l, nil); err != nil {
			t.Errorf("without an anchor: %v, want no error (the documented limit)", err)
		}
		_, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{Anchor: &head})
		wantBroken(t, err, n, audit.ProblemAnchorMismatch)
	})
}

func TestAppendAfterCorruptHead(t *testing.T) {
	schema, _ := filled(t, 3)
	l := openIn(t, schema, nil)
	// l knows the head now; a change of the row must still be seen.
	if err := l.Append(t.Context(), audittest.Sample(3)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, raw(t, schema), "UPDATE audit_records SET body = '{' WHERE seq = 4")
	if err := l.Append(t.Context(), audittest.Sample(4)); !errors.Is(err, audit.ErrBroken) {
		t.Errorf("append after a corrupt last record: %v, want an error matching ErrBroken", err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	empty := newSchema(t)
	if _, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: empty, ReadOnly: true}); !errors.Is(err, postgres.ErrNotLog) {
		t.Errorf("read-only open of a schema without a log: %v, want ErrNotLog", err)
	}
	schema, _ := filled(t, 1)
	ro := openIn(t, schema, &postgres.Options{ReadOnly: true})
	if err := ro.Append(t.Context(), audittest.Sample(1)); err == nil {
		t.Error("a read-only log accepted an append")
	}
	mustExec(t, raw(t, schema), "UPDATE audit_schema SET version = 99")
	for _, readOnly := range []bool{true, false} {
		if _, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema, ReadOnly: readOnly}); !errors.Is(err, postgres.ErrNotLog) {
			t.Errorf("open (read-only %v) of a log of version 99: %v, want ErrNotLog", readOnly, err)
		}
	}
	if _, err := postgres.Open(t.Context(), "postgres://user:secret@[::1", nil); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("open with a malformed connection string: %v, want an error that does not quote it", err)
	}
}

// TestTwoInstances has two instances (each a Log with its own connection
// pool, created concurrently on a fresh schema) append at full speed at
// the same time, from several goroutines each: the deployment's one chain
// must hold every record once, numbered without gaps, and verify.
func TestTwoInstances(t *testing.T) {
	schema := newSchema(t)
	ls := make([]*postgres.Log, 2)
	var wg sync.WaitGroup
	for i := range ls {
		wg.Go(func() { ls[i] = openIn(t, schema, nil) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	const goroutines, each = 8, 20
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if err := ls[g%2].Append(context.Background(), audittest.Sample(g*each+i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	audittest.CheckIntact(t, ls[0], goroutines*each)
	audittest.CheckIntact(t, openIn(t, schema, &postgres.Options{ReadOnly: true}), goroutines*each)
}

// TestAppendTx writes records inside a transaction of the caller's:
// they exist, unsealed, when it commits, and not at all when it rolls
// back; it takes no lock, so an Append meanwhile does not wait for it, and
// an Append after the commit seals them first.
func TestAppendTx(t *testing.T) {
	schema := newSchema(t)
	l := openIn(t, schema, &postgres.Options{SealInterval: -1})
	other := openIn(t, schema, &postgres.Options{SealInterval: -1})
	conn := raw(t, schema)
	ctx := t.Context()

	mustExec(t, conn, "CREATE TABLE audited (x int)")
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO audited VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	rolledBack := audittest.Sample(0)
	if err := l.AppendTx(ctx, tx, rolledBack); err != nil {
		t.Fatal(err)
	}
	// The open transaction holds no lock: this append goes through.
	waiting := audittest.Sample(1)
	if err := other.Append(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if waiting.Seq != 1 {
		t.Errorf("the append beside a transaction that rolled back got seq %d, want 1", waiting.Seq)
	}

	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO audited VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	committed := []*audit.Record{audittest.Sample(2), audittest.Sample(3)}
	committed[1].Time = time.Time{}
	if err := l.AppendTx(ctx, tx, committed...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !committed[0].Unsealed() || !committed[1].Unsealed() || committed[1].Time.IsZero() {
		t.Errorf("records written in a transaction: %+v; want unsealed, with a time", committed)
	}
	rep, err := audit.Verify(ctx, other, nil)
	if err != nil || rep.Records != 1 || rep.Unsealed != 2 {
		t.Errorf("Verify after the commit: %+v, %v; want 1 record and 2 unsealed", rep, err)
	}
	last := audittest.Sample(4)
	if err := other.Append(ctx, last); err != nil {
		t.Fatal(err)
	}
	if last.Seq != 4 {
		t.Errorf("the append after two committed unsealed records got seq %d, want 4: it seals them first", last.Seq)
	}
	rs := audittest.CheckIntact(t, other, 4)
	if rs.Unsealed != 0 {
		t.Errorf("%d records unsealed after an Append, want 0", rs.Unsealed)
	}
	var got []string
	for r, err := range other.Records(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Reason)
	}
	want := []string{waiting.Reason, committed[0].Reason, committed[1].Reason, last.Reason}
	if !slices.Equal(got, want) {
		t.Errorf("the chain holds %q, want %q", got, want)
	}
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM audited").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("rows of the audited table: %d, %v; want 1", rows, err)
	}
	if err := l.AppendTx(ctx, nil, audittest.Sample(5)); err == nil {
		t.Error("AppendTx without a transaction: no error")
	}
}

// TestQueueTx queues the inserts of unsealed records on the caller's
// batch: nothing is sent; they exist once that batch is sent and the
// transaction commits, and are sealed in the order they were queued.
// Invalid input queues nothing.
func TestQueueTx(t *testing.T) {
	schema := newSchema(t)
	l := openIn(t, schema, &postgres.Options{SealInterval: -1})
	conn := raw(t, schema)
	ctx := t.Context()

	var b pgx.Batch
	if err := l.QueueTx(nil, audittest.Sample(0)); err == nil {
		t.Error("QueueTx without a batch: no error")
	}
	bad := audittest.Sample(0)
	bad.Kind = "forged"
	for _, recs := range [][]*audit.Record{{audittest.Sample(0), nil}, {audittest.Sample(0), bad}} {
		if err := l.QueueTx(&b, recs...); !errors.Is(err, audit.ErrInvalidRecord) {
			t.Errorf("QueueTx of %v: %v, want ErrInvalidRecord", recs, err)
		}
	}
	if b.Len() != 0 {
		t.Fatalf("refused records queued %d statements, want none", b.Len())
	}
	ro := openIn(t, schema, &postgres.Options{ReadOnly: true})
	if err := ro.QueueTx(&b, audittest.Sample(0)); err == nil {
		t.Error("QueueTx on a read-only log: no error")
	}
	if n, err := ro.SealPending(ctx); err == nil || n != 0 {
		t.Errorf("SealPending on a read-only log: %d, %v; want an error", n, err)
	}
	ro.Wake() // no sealer: nothing to wake, and no block
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := []*audit.Record{audittest.Sample(0), audittest.Sample(1)}
	if err := l.QueueTx(&b, first...); err != nil {
		t.Fatal(err)
	}
	second := audittest.Sample(2)
	if err := l.QueueTx(&b, second); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 2 {
		t.Fatalf("%d statements queued, want the two inserts", b.Len())
	}
	b.Queue("COMMIT")
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := l.SealPending(ctx); err != nil || n != 3 {
		t.Fatalf("SealPending: %d, %v; want 3 sealed", n, err)
	}
	var reasons []string
	for r, err := range l.Records(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, r.Reason)
	}
	if want := []string{first[0].Reason, first[1].Reason, second.Reason}; !slices.Equal(reasons, want) {
		t.Errorf("sealed in the order %q, want %q", reasons, want)
	}
	audittest.CheckIntact(t, l, 3)

	// A batch never sent leaves nothing: the transaction rolls back.
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b = pgx.Batch{}
	if err := l.QueueTx(&b, audittest.Sample(4)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rep := audittest.CheckIntact(t, l, 3); rep.Unsealed != 0 {
		t.Errorf("%d unsealed records after a rollback, want 0", rep.Unsealed)
	}
}

// TestProbeWriteAndTimeouts checks the probe of a healthy log, of one
// whose last record is broken, and that a chain lock held past the
// statement timeout fails appends and probes fast instead of hanging.
func TestProbeWriteAndTimeouts(t *testing.T) {
	schema, _ := filled(t, 2)
	l := openIn(t, schema, nil)
	if err := l.ProbeWrite(t.Context()); err != nil {
		t.Fatalf("ProbeWrite of a healthy log: %v", err)
	}
	if err := openIn(t, schema, &postgres.Options{ReadOnly: true}).ProbeWrite(t.Context()); err == nil {
		t.Error("ProbeWrite of a read-only log: no error")
	}

	// Another instance holds the chain's lock in a transaction it does
	// not end.
	holder := raw(t, schema)
	tx, err := holder.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "toolgate audit chain "+schema); err != nil {
		t.Fatal(err)
	}
	short, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema, StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	start := time.Now()
	if err := short.Append(t.Context(), audittest.Sample(3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Append while the lock is held: %v, want DeadlineExceeded", err)
	}
	if err := short.ProbeWrite(t.Context()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ProbeWrite while the lock is held: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the two refusals took %v, want about twice the 200ms timeout", d)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := short.ProbeWrite(t.Context()); err != nil {
		t.Errorf("ProbeWrite once the lock is free: %v", err)
	}

	mustExec(t, raw(t, schema), "UPDATE audit_records SET body = '{' WHERE seq = 2")
	if err := l.ProbeWrite(t.Context()); !errors.Is(err, audit.ErrBroken) {
		t.Errorf("ProbeWrite of a log whose last record is broken: %v, want ErrBroken", err)
	}
}
