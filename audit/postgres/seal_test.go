package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
	"github.com/toolgate/toolgate/audit/postgres"
)

// commitUnsealed writes records in a transaction of their own on conn, as
// a state change of the store does, and commits it.
func commitUnsealed(t *testing.T, l *postgres.Log, conn *pgx.Conn, recs ...*audit.Record) {
	t.Helper()
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AppendTx(t.Context(), tx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// reasons returns the reasons of the records l holds, in order, with
// whether each is sealed.
func reasons(t *testing.T, l audit.Reader, q *audit.Query) []string {
	t.Helper()
	var out []string
	for r, err := range l.Records(t.Context(), q) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s", r.Seq, r.Reason))
	}
	return out
}

// TestUnsealedVisibleThenSealed: a record committed but not sealed is
// read after the sealed ones, by conversation too, and counted apart by
// Verify, which also verifies incrementally and against an anchor of the
// sealed head meanwhile; once sealed, the chain verifies with it, in the
// order of the commits, and the anchor still holds.
func TestUnsealedVisibleThenSealed(t *testing.T) {
	schema, sealed := filled(t, 3)
	l := openIn(t, schema, &postgres.Options{SealInterval: -1})
	conn := raw(t, schema)
	ctx := t.Context()

	a, b, c := audittest.Sample(3), audittest.Sample(4), audittest.Sample(6)
	a.Reason, b.Reason, c.Reason = "a", "b", "c"
	commitUnsealed(t, l, conn, a, b)
	commitUnsealed(t, l, conn, c)
	got := reasons(t, l, nil)
	want := []string{"1 " + sealed[0].Reason, "2 " + sealed[1].Reason, "3 " + sealed[2].Reason, "0 a", "0 b", "0 c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records before sealing: %q, want %q", got, want)
	}
	if got := reasons(t, l, &audit.Query{ConversationID: c.ConversationID, After: 2}); len(got) == 0 || got[len(got)-1] != "0 c" {
		t.Errorf("records of conversation %s after 2: %q, want the unsealed one last", c.ConversationID, got)
	}
	head := sealed[2].Anchor()
	for _, opts := range []*audit.VerifyOptions{nil, {Anchor: &head}, {From: &head}} {
		rep, err := audit.Verify(ctx, openIn(t, schema, &postgres.Options{ReadOnly: true}), opts)
		if err != nil || rep.Head != head || rep.Unsealed != 3 {
			t.Errorf("Verify(%+v) before sealing: %+v, %v; want head %v and 3 unsealed", opts, rep, err, head)
		}
	}

	if n, err := l.SealPending(ctx); err != nil || n != 3 {
		t.Fatalf("SealPending: %d, %v; want 3", n, err)
	}
	want = []string{"1 " + sealed[0].Reason, "2 " + sealed[1].Reason, "3 " + sealed[2].Reason, "4 a", "5 b", "6 c"}
	if got := reasons(t, l, nil); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records after sealing: %q, want %q", got, want)
	}
	rep, err := audit.Verify(ctx, l, &audit.VerifyOptions{Anchor: &head})
	if err != nil || rep.Records != 6 || rep.Unsealed != 0 || !rep.Anchored {
		t.Errorf("Verify after sealing: %+v, %v; want 6 records, anchored, none unsealed", rep, err)
	}
	if rep, err := audit.Verify(ctx, l, &audit.VerifyOptions{From: &head}); err != nil || rep.Records != 4 {
		t.Errorf("Verify from the head sealed before: %+v, %v; want 4 records from it", rep, err)
	}
	if n, err := l.SealPending(ctx); err != nil || n != 0 {
		t.Errorf("SealPending with nothing to seal: %d, %v", n, err)
	}
}

// TestTwoInstancesOneChain: two Logs with pools and sealers of their own,
// as two instances of the service, write records in transactions at once
// and wake their sealers; after they close, the schema holds one valid
// chain with every record exactly once and none unsealed.
func TestTwoInstancesOneChain(t *testing.T) {
	schema := newSchema(t)
	const goroutines, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	logs := make([]*postgres.Log, 2)
	for i := range logs {
		pool, err := pgxpool.New(t.Context(), testURL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if _, err := pool.Exec(t.Context(), "SET search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		if logs[i], err = postgres.New(t.Context(), pool, &postgres.Options{Schema: schema, SealInterval: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		for g := range goroutines {
			wg.Go(func() {
				for j := range each {
					r := audittest.Sample(j)
					r.Reason = fmt.Sprintf("instance %d goroutine %d record %d", i, g, j)
					err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
						return logs[i].AppendTx(context.Background(), tx, r)
					})
					if err != nil {
						errs <- err
						return
					}
					logs[i].Wake()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	verifier := openIn(t, schema, &postgres.Options{ReadOnly: true})
	rep := audittest.CheckIntact(t, verifier, 2*goroutines*each)
	if rep.Unsealed != 0 {
		t.Errorf("%d records unsealed after both logs closed, want 0", rep.Unsealed)
	}
	seen := map[string]bool{}
	for _, r := range reasons(t, verifier, nil) {
		if seen[r] {
			t.Errorf("record %q twice", r)
		}
		seen[r] = true
	}
}

// TestSealerKilledMidBatch: the backend of a seal batch is terminated
// after the batch took the unsealed records and before it inserted them
// sealed: the batch's transaction is aborted, so the records are still
// unsealed and the chain is as it was; the next seal seals them all.
func TestSealerKilledMidBatch(t *testing.T) {
	schema, _ := filled(t, 2)
	l := openIn(t, schema, &postgres.Options{SealInterval: -1})
	conn := raw(t, schema)
	commitUnsealed(t, l, conn, audittest.Sample(2), audittest.Sample(3), audittest.Sample(4))
	killer := raw(t, schema)
	killed := false
	postgres.SetAfterTake(l, func(pid uint32) {
		killed = true
		mustExec(t, killer, "SELECT pg_terminate_backend($1)", int(pid))
	})
	if n, err := l.SealPending(t.Context()); err == nil || n != 0 {
		t.Fatalf("SealPending whose backend was killed: %d, %v; want an error and nothing sealed", n, err)
	}
	if !killed {
		t.Fatal("the seal batch never reached the point of the kill")
	}
	verifier := openIn(t, schema, &postgres.Options{ReadOnly: true})
	if rep := audittest.CheckIntact(t, verifier, 2); rep.Unsealed != 3 {
		t.Errorf("after the killed batch: %d unsealed, want the 3 it had taken", rep.Unsealed)
	}
	postgres.SetAfterTake(l, nil)
	if n, err := l.SealPending(t.Context()); err != nil || n != 3 {
		t.Fatalf("SealPending after the kill: %d, %v; want 3", n, err)
	}
	if rep := audittest.CheckIntact(t, verifier, 5); rep.Unsealed != 0 {
		t.Errorf("%d unsealed after the second seal, want 0", rep.Unsealed)
	}
}

// TestCloseSeals: records committed without waking the sealer are sealed
// by Close.
func TestCloseSeals(t *testing.T) {
	schema := newSchema(t)
	l, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema, SealInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	commitUnsealed(t, l, raw(t, schema), audittest.Sample(0), audittest.Sample(1))
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if rep := audittest.CheckIntact(t, openIn(t, schema, &postgres.Options{ReadOnly: true}), 2); rep.Unsealed != 0 {
		t.Errorf("%d unsealed after Close, want 0", rep.Unsealed)
	}
}

// observed opens a Log on a pool of its own whose sealer reports each
// round's error on the returned channel.
func observed(t *testing.T, schema string, interval time.Duration) (*postgres.Log, <-chan error) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rounds := make(chan error, 1)
	l, err := postgres.NewObserved(t.Context(), pool, &postgres.Options{Schema: schema, SealInterval: interval}, func(err error) {
		select {
		case rounds <- err:
		default: // the test reads the rounds it waits for
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		pool.Close()
	})
	return l, rounds
}

// TestBackgroundSealer: a Wake makes the sealer seal soon, without any
// call of the caller's.
func TestBackgroundSealer(t *testing.T) {
	schema := newSchema(t)
	l, rounds := observed(t, schema, time.Hour)
	commitUnsealed(t, l, raw(t, schema), audittest.Sample(0))
	l.Wake()
	if err := <-rounds; err != nil {
		t.Fatalf("the sealer's round: %v", err)
	}
	if rep := audittest.CheckIntact(t, l, 1); rep.Unsealed != 0 {
		t.Errorf("after the sealer's round: %d unsealed, want 0", rep.Unsealed)
	}
}

// TestTamperedUnsealedAndSealed: a record sealed by the sealer and then
// edited fails verification; a broken unsealed row ends reads with a
// RecordError, and stops sealing (nothing sealed, no record skipped), as
// the probe reports, until it is repaired.
func TestTamperedUnsealedAndSealed(t *testing.T) {
	schema, _ := filled(t, 2)
	l := openIn(t, schema, &postgres.Options{SealInterval: -1})
	conn := raw(t, schema)
	commitUnsealed(t, l, conn, audittest.Sample(2))
	if _, err := l.SealPending(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, `UPDATE audit_records SET body = jsonb_set(body::jsonb, '{reason}', '"forged"')::text WHERE seq = 3`)
	_, err := audit.Verify(t.Context(), l, nil)
	wantBroken(t, err, 3, audit.ProblemHashMismatch)
	mustExec(t, conn, `DELETE FROM audit_records WHERE seq = 3`)

	sealedBody := func() string {
		var b string
		if err := conn.QueryRow(t.Context(), "SELECT body FROM audit_records WHERE seq = 1").Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}()
	for _, tc := range []struct {
		name, conv, body string
		problem          audit.Problem
	}{
		{"not JSON", audittest.Sample(0).ConversationID, "{", audit.ProblemUndecodable},
		{"a sealed record", audittest.Sample(0).ConversationID, sealedBody, audit.ProblemInvalidField},
		{"another conversation", "elsewhere", func() string {
			u := *audittest.Sample(0)
			b, err := u.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}(), audit.ProblemInvalidField},
		{"an unknown kind", audittest.Sample(0).ConversationID, `{"v":1,"seq":0,"time":"2026-05-01T12:00:00.000000000Z","conversation_id":"` + audittest.Sample(0).ConversationID + `","pause_id":"","call_key":"","tool":"","kind":"forged","actor":{"id":"","source":"system"},"reason":"","args_digest":"","prev_hash":"","hash":""}`, audit.ProblemUnknownKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := audittest.Sample(5)
			commitUnsealed(t, l, conn, good)
			mustExec(t, conn, "INSERT INTO audit_unsealed (conversation_id, body) VALUES ($1, $2)", tc.conv, tc.body)
			_, err := audit.Verify(t.Context(), l, nil)
			wantBroken(t, err, 3, tc.problem)
			n, err := l.SealPending(t.Context())
			if !errors.Is(err, audit.ErrBroken) || n != 0 {
				t.Errorf("SealPending with a broken unsealed row: %d, %v; want ErrBroken, nothing sealed", n, err)
			}
			if err := l.Append(t.Context(), audittest.Sample(6)); !errors.Is(err, audit.ErrBroken) {
				t.Errorf("Append with a broken unsealed row: %v, want ErrBroken", err)
			}
			bg, rounds := observed(t, schema, time.Hour)
			bg.Wake()
			if err := <-rounds; !errors.Is(err, audit.ErrBroken) {
				t.Errorf("the sealer's round with a broken unsealed row: %v, want ErrBroken", err)
			}
			if err := bg.ProbeWrite(t.Context()); !errors.Is(err, audit.ErrBroken) {
				t.Errorf("ProbeWrite once the sealer met a broken unsealed row: %v, want ErrBroken", err)
			}
			mustExec(t, conn, "DELETE FROM audit_unsealed WHERE body = $1", tc.body)
			bg.Wake()
			if err := <-rounds; err != nil {
				t.Errorf("the sealer's round once repaired: %v", err)
			}
			if err := bg.ProbeWrite(t.Context()); err != nil {
				t.Errorf("ProbeWrite once repaired: %v", err)
			}
			rep := audittest.CheckIntact(t, l, 3)
			if rep.Unsealed != 0 {
				t.Errorf("after the repair: %d unsealed, want 0", rep.Unsealed)
			}
			mustExec(t, conn, "DELETE FROM audit_records WHERE seq = 3")
		})
	}
}

// TestMigrateFromVersion1: a schema written by a build that sealed in the
// state change's transaction (version 1: no table of unsealed records) is
// read as it is by a read-only Log, and upgraded by a writing one: its
// records stay as they were and verify, and the new ones chain after them.
func TestMigrateFromVersion1(t *testing.T) {
	schema := newSchema(t)
	conn := raw(t, schema)
	mustExec(t, conn, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	mustExec(t, conn, `CREATE TABLE audit_records (seq bigint PRIMARY KEY, conversation_id text NOT NULL, body text NOT NULL);
		CREATE INDEX audit_records_conversation ON audit_records (conversation_id, seq);
		CREATE TABLE audit_schema (version integer NOT NULL); INSERT INTO audit_schema VALUES (1)`)
	old := audit.NewMemoryLog()
	for i := range 3 {
		r := audittest.Sample(i)
		if err := old.Append(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		body, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, "INSERT INTO audit_records VALUES ($1, $2, $3)", int64(r.Seq), r.ConversationID, string(body))
	}
	if rep := audittest.CheckIntact(t, openIn(t, schema, &postgres.Options{ReadOnly: true}), 3); rep.Unsealed != 0 {
		t.Errorf("a version 1 log read-only: %d unsealed, want 0", rep.Unsealed)
	}
	l := openIn(t, schema, &postgres.Options{SealInterval: -1})
	var v int
	if err := conn.QueryRow(t.Context(), "SELECT version FROM audit_schema").Scan(&v); err != nil || v != postgres.SchemaVersion {
		t.Errorf("version after a writing Open: %d, %v; want %d", v, err, postgres.SchemaVersion)
	}
	commitUnsealed(t, l, conn, audittest.Sample(3))
	if n, err := l.SealPending(t.Context()); err != nil || n != 1 {
		t.Fatalf("SealPending: %d, %v", n, err)
	}
	audittest.CheckIntact(t, openIn(t, schema, &postgres.Options{ReadOnly: true}), 4)
	want, err := audit.Verify(t.Context(), old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{Anchor: &want.Head}); err != nil || !rep.Anchored {
		t.Errorf("the head written by the old build, as an anchor: %+v, %v", rep, err)
	}
}

// TestCrashedInstanceSealedBySurvivor: an instance commits records and
// dies before any sealer of its own ran (its connections just end); the
// timer of another instance's sealer, which was never woken, seals them.
func TestCrashedInstanceSealedBySurvivor(t *testing.T) {
	schema, _ := filled(t, 1)
	pool, err := pgxpool.New(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	crashed, err := postgres.New(t.Context(), pool, &postgres.Options{Schema: schema, SealInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return crashed.AppendTx(t.Context(), tx, audittest.Sample(1), audittest.Sample(2))
	})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close() // the instance is gone, its Log never closed
	survivor, rounds := observed(t, schema, 10*time.Millisecond)
	// The records were committed before the survivor started: its first
	// round, which its timer starts, seals them.
	if err := <-rounds; err != nil {
		t.Fatalf("the survivor's round: %v", err)
	}
	if rep := audittest.CheckIntact(t, survivor, 3); rep.Unsealed != 0 {
		t.Errorf("after the survivor's round: %d unsealed, want 0", rep.Unsealed)
	}
}
