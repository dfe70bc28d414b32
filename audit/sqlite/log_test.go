package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
	"github.com/toolgate/toolgate/audit/sqlite"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// sample returns the i-th of a varied series of unsealed records (no kind
// refused, no pause id "forged").
func sample(i int) *audit.Record {
	kinds := []audit.Kind{audit.KindRequested, audit.KindDecided, audit.KindEdited, audit.KindExecuted, audit.KindDenied, audit.KindExpired}
	sources := []audit.Source{audit.SourceSystem, audit.SourcePerson, audit.SourceRule, audit.SourceStickyGrant}
	return &audit.Record{
		Time:           t0.Add(time.Duration(i) * time.Second),
		ConversationID: fmt.Sprintf("conv-%d", i%3),
		PauseID:        fmt.Sprintf("p%d", i/4),
		CallKey:        fmt.Sprintf("c%d", i%2),
		Tool:           "bookFlight",
		Kind:           kinds[i%len(kinds)],
		Actor:          audit.Actor{ID: fmt.Sprintf("user-%d", i%5), Source: sources[i%len(sources)]},
		Reason:         fmt.Sprintf("reason %d", i),
		ArgsDigest:     audit.Digest(fmt.Appendf(nil, `{"flight":"VX%d"}`, i)),
	}
}

// openAt opens the log at path, closing it at the end of the test.
func openAt(t testing.TB, path string, opts *sqlite.Options) *sqlite.Log {
	t.Helper()
	l, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// raw opens a plain connection to the file, as someone tampering with it.
func raw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// filled returns the path of a new log holding n sample records, and the
// records.
func filled(t testing.TB, n int) (string, []*audit.Record) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	l := openAt(t, path, nil)
	rs := make([]*audit.Record, n)
	for i := range rs {
		rs[i] = sample(i)
	}
	if err := l.Append(context.Background(), rs...); err != nil {
		t.Fatal(err)
	}
	return path, rs
}

// verifyFile verifies the log in the file at path, opened read-only.
func verifyFile(t *testing.T, path string, anchor *audit.Anchor) (*audit.Report, error) {
	t.Helper()
	l := openAt(t, path, &sqlite.Options{ReadOnly: true})
	return audit.Verify(t.Context(), l, &audit.VerifyOptions{Anchor: anchor})
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

func TestChain(t *testing.T) {
	const n = 40
	path := filepath.Join(t.TempDir(), "audit.db")
	l := openAt(t, path, nil)
	var rs []*audit.Record
	for i := range n {
		r := sample(i)
		if err := l.Append(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d got sequence number %d", i, r.Seq)
		}
		rs = append(rs, r)
	}
	rep, err := audit.Verify(t.Context(), l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (audit.Report{Records: n, Head: rs[n-1].Anchor()}); *rep != want {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	var got []*audit.Record
	for r, err := range l.Records(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if diff := cmp.Diff(rs, got); diff != "" {
		t.Errorf("records (-appended +read):\n%s", diff)
	}
	var conv1 []uint64
	for r, err := range l.Records(t.Context(), &audit.Query{ConversationID: "conv-1"}) {
		if err != nil {
			t.Fatal(err)
		}
		conv1 = append(conv1, r.Seq)
	}
	if len(conv1) != n/3 || conv1[0] != 2 || conv1[1] != 5 {
		t.Errorf("records of conv-1: %v, want 2, 5, 8, …", conv1)
	}

	// Another Log on the file, read-only, sees the same chain; it cannot
	// append.
	head := rs[n-1].Anchor()
	rep, err = verifyFile(t, path, &head)
	if err != nil || !rep.Anchored || rep.Records != n {
		t.Errorf("read-only verification: %+v, %v", rep, err)
	}
	ro := openAt(t, path, &sqlite.Options{ReadOnly: true})
	if err := ro.Append(t.Context(), sample(0)); err == nil {
		t.Error("a read-only log accepted an append")
	}
	// An append after a reopen continues the chain.
	l.Close()
	l2 := openAt(t, path, nil)
	r := sample(n)
	if err := l2.Append(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != n+1 || r.PrevHash != head.Hash {
		t.Errorf("after a reopen: record %d after %s, want %d after %s", r.Seq, r.PrevHash, n+1, head.Hash)
	}
}

func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := sqlite.Open(t.Context(), missing, &sqlite.Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a read-only open created the file")
	}
	other := filepath.Join(dir, "other.db")
	mustExec(t, raw(t, other), "CREATE TABLE t (x)")
	if _, err := sqlite.Open(t.Context(), other, &sqlite.Options{ReadOnly: true}); !errors.Is(err, sqlite.ErrNotLog) {
		t.Errorf("read-only open of a database without a log: %v, want ErrNotLog", err)
	}
	future, _ := filled(t, 1)
	mustExec(t, raw(t, future), "UPDATE audit_schema SET version = 99")
	for _, ro := range []bool{true, false} {
		if _, err := sqlite.Open(t.Context(), future, &sqlite.Options{ReadOnly: ro}); !errors.Is(err, sqlite.ErrNotLog) {
			t.Errorf("open (read-only %v) of a log of schema 99: %v, want ErrNotLog", ro, err)
		}
	}
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 500)), 0o600)
	if _, err := sqlite.Open(t.Context(), garbage, &sqlite.Options{ReadOnly: true}); err == nil {
		t.Error("a file that is not a database opened")
	}
}

// TestTamperedField changes one field of one record (first, middle, last)
// in the file with raw SQL, and checks that verification names it.
func TestTamperedField(t *testing.T) {
	const n = 7
	zeros := strings.Repeat("0", 64)
	for _, tc := range []struct {
		field   string
		set     string // the SET clause of the UPDATE of the record's row
		problem audit.Problem
	}{
		{"v", `body = json_set(body, '$.v', 2)`, audit.ProblemUnknownVersion},
		{"seq", `body = json_set(body, '$.seq', seq + 1000)`, audit.ProblemOutOfSequence},
		{"time", `body = json_set(body, '$.time', '2001-01-01T00:00:00.000000000Z')`, audit.ProblemHashMismatch},
		{"conversation_id, body", `body = json_set(body, '$.conversation_id', 'forged')`, audit.ProblemInvalidField},
		{"conversation_id, both", `body = json_set(body, '$.conversation_id', 'forged'), conversation_id = 'forged'`, audit.ProblemHashMismatch},
		{"pause_id", `body = json_set(body, '$.pause_id', 'forged')`, audit.ProblemHashMismatch},
		{"call_key", `body = json_set(body, '$.call_key', 'forged')`, audit.ProblemHashMismatch},
		{"tool", `body = json_set(body, '$.tool', 'forged')`, audit.ProblemHashMismatch},
		{"kind", `body = json_set(body, '$.kind', 'refused')`, audit.ProblemHashMismatch},
		{"kind unknown", `body = json_set(body, '$.kind', 'launched')`, audit.ProblemUnknownKind},
		{"actor.id", `body = json_set(body, '$.actor.id', 'forged')`, audit.ProblemHashMismatch},
		{"actor.source", `body = json_set(body, '$.actor.source', CASE json_extract(body, '$.actor.source') WHEN 'person' THEN 'system' ELSE 'person' END)`, audit.ProblemHashMismatch},
		{"actor.source unknown", `body = json_set(body, '$.actor.source', 'robot')`, audit.ProblemInvalidField},
		{"reason", `body = json_set(body, '$.reason', 'forged')`, audit.ProblemHashMismatch},
		{"args_digest", `body = json_set(body, '$.args_digest', 'sha256:` + zeros + `')`, audit.ProblemHashMismatch},
		{"prev_hash", `body = json_set(body, '$.prev_hash', '` + zeros + `')`, audit.ProblemHashMismatch},
		{"hash", `body = json_set(body, '$.hash', '` + zeros + `')`, audit.ProblemHashMismatch},
		{"extra member", `body = json_set(body, '$.note', 'x')`, audit.ProblemUndecodable},
		{"member removed", `body = json_remove(body, '$.reason')`, audit.ProblemHashMismatch},
		{"body not JSON", `body = 'forged'`, audit.ProblemUndecodable},
		{"body a blob", `body = x'00ff'`, audit.ProblemUndecodable},
		{"seq column", `seq = seq + 1000`, audit.ProblemOutOfSequence},
		{"conversation_id column", `conversation_id = 'forged'`, audit.ProblemInvalidField},
	} {
		for _, at := range []int{1, n / 2, n} {
			t.Run(fmt.Sprintf("%s of record %d", tc.field, at), func(t *testing.T) {
				path, _ := filled(t, n)
				db := raw(t, path)
				var before string
				if err := db.QueryRow("SELECT body FROM audit_records WHERE seq = ?", at).Scan(&before); err != nil {
					t.Fatal(err)
				}
				res, err := db.Exec("UPDATE audit_records SET "+tc.set+" WHERE seq = ?", at)
				if err != nil {
					t.Fatal(err)
				}
				if k, _ := res.RowsAffected(); k != 1 {
					t.Fatalf("the UPDATE changed %d rows", k)
				}
				rep, err := verifyFile(t, path, nil)
				wantBroken(t, err, uint64(at), tc.problem)
				if rep.Records != uint64(at-1) {
					t.Errorf("report counts %d intact records, want %d", rep.Records, at-1)
				}
			})
		}
	}
}

func TestDeletedRecord(t *testing.T) {
	const n = 7
	for _, tc := range []struct {
		name     string
		delete   string
		noAnchor *audit.RecordError // nil: undetectable without an anchor
		anchored audit.RecordError
	}{
		{"first", "seq = 1", &audit.RecordError{Seq: 1, Problem: audit.ProblemOutOfSequence}, audit.RecordError{Seq: 1, Problem: audit.ProblemOutOfSequence}},
		{"middle", "seq = 4", &audit.RecordError{Seq: 4, Problem: audit.ProblemOutOfSequence}, audit.RecordError{Seq: 4, Problem: audit.ProblemOutOfSequence}},
		{"last", "seq = 7", nil, audit.RecordError{Seq: 7, Problem: audit.ProblemAnchorMismatch}},
		{"last two", "seq >= 6", nil, audit.RecordError{Seq: 6, Problem: audit.ProblemAnchorMismatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, rs := filled(t, n)
			head := rs[n-1].Anchor()
			mustExec(t, raw(t, path), "DELETE FROM audit_records WHERE "+tc.delete)
			rep, err := verifyFile(t, path, nil)
			if tc.noAnchor == nil {
				// The documented limit: what is left is a valid chain.
				if err != nil {
					t.Errorf("without an anchor: %v, want no error", err)
				}
				if rep.Head.Seq >= n {
					t.Errorf("report head %v, want one before record %d", rep.Head, n)
				}
			} else {
				wantBroken(t, err, tc.noAnchor.Seq, tc.noAnchor.Problem)
			}
			_, err = verifyFile(t, path, &head)
			wantBroken(t, err, tc.anchored.Seq, tc.anchored.Problem)
		})
	}
}

func TestReordered(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query string
	}{
		{"bodies swapped", "UPDATE audit_records SET body = CASE seq WHEN 3 THEN (SELECT body FROM audit_records WHERE seq = 4) ELSE (SELECT body FROM audit_records WHERE seq = 3) END WHERE seq IN (3, 4)"},
		{"rows renumbered", "UPDATE audit_records SET seq = CASE seq WHEN 3 THEN -4 ELSE -3 END WHERE seq IN (3, 4); UPDATE audit_records SET seq = -seq WHERE seq < 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := filled(t, 6)
			mustExec(t, raw(t, path), tc.query)
			_, err := verifyFile(t, path, nil)
			wantBroken(t, err, 3, audit.ProblemOutOfSequence)
		})
	}
}

// TestInserted adds a forged row after the last record: one whose
// prev_hash is not the last hash.
func TestInserted(t *testing.T) {
	path, rs := filled(t, 5)
	forged := sample(99)
	if err := audit.Seal(rs[2].Anchor(), forged); err != nil { // links to record 3, not 5
		t.Fatal(err)
	}
	forged.Seq = 6
	forged.Hash = forged.ComputeHash()
	body, err := forged.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, raw(t, path), "INSERT INTO audit_records (seq, conversation_id, body) VALUES (6, ?, ?)", forged.ConversationID, string(body))
	_, err = verifyFile(t, path, nil)
	wantBroken(t, err, 6, audit.ProblemBrokenLink)
}

func TestAppendAfterCorruptHead(t *testing.T) {
	path, _ := filled(t, 3)
	mustExec(t, raw(t, path), "UPDATE audit_records SET body = '{' WHERE seq = 3")
	l := openAt(t, path, nil)
	err := l.Append(t.Context(), sample(3))
	if !errors.Is(err, audit.ErrBroken) {
		t.Errorf("append after a corrupt last record: %v, want an error matching ErrBroken", err)
	}
}

// TestAppendAfterHeadChanged changes the last record under a Log that has
// just appended it: the Log must read the row again, not reuse what it
// knew of the record it wrote.
func TestAppendAfterHeadChanged(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		broken    bool
	}{
		{"body corrupted", "UPDATE audit_records SET body = '{' WHERE seq = 3", true},
		{"last record deleted", "DELETE FROM audit_records WHERE seq = 3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			l := openAt(t, path, nil)
			rs := []*audit.Record{sample(0), sample(1), sample(2)}
			if err := l.Append(t.Context(), rs...); err != nil {
				t.Fatal(err)
			}
			mustExec(t, raw(t, path), tc.sql)
			r := sample(3)
			err := l.Append(t.Context(), r)
			if tc.broken {
				if !errors.Is(err, audit.ErrBroken) {
					t.Errorf("append after the last record changed: %v, want an error matching ErrBroken", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := rs[1].Anchor(); r.Seq != want.Seq+1 || r.PrevHash != want.Hash {
				t.Errorf("appended record %d after %q, want %d after %q", r.Seq, r.PrevHash, want.Seq+1, want.Hash)
			}
		})
	}
}

// TestAppendAfterOtherLog appends through two Logs on one file in turn:
// each must continue the chain from the other's last record.
func TestAppendAfterOtherLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	ls := []*sqlite.Log{openAt(t, path, nil), openAt(t, path, nil)}
	for i := range 6 {
		if err := ls[i%2].Append(t.Context(), sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := verifyFile(t, path, nil)
	if err != nil || rep.Records != 6 {
		t.Errorf("after appends through two Logs: %+v, %v; want 6 intact records", rep, err)
	}
}

func TestAppendAtomic(t *testing.T) {
	path, _ := filled(t, 2)
	l := openAt(t, path, nil)
	ok, bad := sample(2), sample(3)
	bad.Kind = "approved"
	if err := l.Append(t.Context(), ok, bad); !errors.Is(err, audit.ErrInvalidRecord) {
		t.Fatalf("Append: %v, want ErrInvalidRecord", err)
	}
	if ok.Seq != 0 {
		t.Error("a failed append set a record's sequence number")
	}
	rep, err := audit.Verify(t.Context(), l, nil)
	if err != nil || rep.Records != 2 {
		t.Errorf("after a failed append: %+v, %v; want 2 intact records", rep, err)
	}
}

// TestConcurrentAppend has 32 goroutines append at once, through four Logs
// on one file (so through SQLite's lock, not only the Logs' own queues).
func TestConcurrentAppend(t *testing.T) {
	const appenders, each, logs = 32, 6, 4
	path := filepath.Join(t.TempDir(), "audit.db")
	ls := make([]*sqlite.Log, logs)
	for i := range ls {
		ls[i] = openAt(t, path, &sqlite.Options{BusyTimeout: time.Minute})
	}
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	for g := range appenders {
		wg.Go(func() {
			for i := range each {
				if err := ls[g%logs].Append(context.Background(), sample(g*each+i)); err != nil {
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
	checkContiguous(t, path, appenders*each)
}

// checkContiguous checks that the log at path holds an intact chain of n
// records numbered 1 to n, each row in its place.
func checkContiguous(t *testing.T, path string, n int) {
	t.Helper()
	rep, err := verifyFile(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != uint64(n) || rep.Head.Seq != uint64(n) {
		t.Errorf("report %+v, want %d records", rep, n)
	}
	var count, lo, hi int
	if err := raw(t, path).QueryRow("SELECT count(*), min(seq), max(seq) FROM audit_records").Scan(&count, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if count != n || lo != 1 || hi != n {
		t.Errorf("rows: %d numbered %d to %d, want %d numbered 1 to %d", count, lo, hi, n, n)
	}
}

// TestNoArgumentsStored appends the events of a call whose arguments carry
// personal data, and checks that neither the records nor the database
// files contain any part of those values.
func TestNoArgumentsStored(t *testing.T) {
	secrets := []string{"ada.lovelace@example.com", "GB82WEST12345698765432", "+44 20 7946 0958", "Ada Lovelace", "4111 1111 1111 1111"}
	args := fmt.Sprintf(`{"passenger":{"name":%q,"email":%q,"phone":%q},"iban":%q,"card":%q}`, secrets[3], secrets[0], secrets[2], secrets[1], secrets[4])
	path := filepath.Join(t.TempDir(), "audit.db")
	l := openAt(t, path, nil)
	var recs []*audit.Record
	for i, k := range audit.Kinds() {
		r := &audit.Record{
			Time: t0.Add(time.Duration(i) * time.Second), ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight",
			Kind: k, Actor: audit.Actor{ID: "alice", Source: audit.SourcePerson}, Reason: string(k),
			ArgsDigest: audit.Digest([]byte(args)),
		}
		if k == audit.KindEdited {
			r.ArgsDigest = audit.KeyedDigest([]byte("key"), []byte(args))
		}
		recs = append(recs, r)
	}
	if err := l.Append(t.Context(), recs...); err != nil {
		t.Fatal(err)
	}
	var stored strings.Builder
	for r, err := range l.Records(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		stored.Write(b)
	}
	l.Close()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		stored.Write(b)
	}
	if !strings.Contains(stored.String(), "bookFlight") {
		t.Fatal("the stored bytes lack even the tool name: the check reads the wrong thing")
	}
	// Every piece of at least 5 bytes of every value is absent; the
	// records' times are fixed, so the outcome is the same on every run.
	const piece = 5
	for _, s := range secrets {
		for i := 0; i+piece <= len(s); i++ {
			if p := s[i : i+piece]; strings.Contains(stored.String(), p) {
				t.Errorf("the stored audit log contains %q, part of an argument", p)
			}
		}
	}
}

func TestConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audittest.Opener {
		path := filepath.Join(t.TempDir(), "audit.db")
		return func(t *testing.T) audit.Log { return openAt(t, path, &sqlite.Options{BusyTimeout: time.Minute}) }
	})
}

// TestProbeWrite checks the probe of a healthy log, of one whose last
// record is broken, and of one whose write lock another connection holds
// past the busy timeout.
func TestProbeWrite(t *testing.T) {
	path, _ := filled(t, 2)
	l := openAt(t, path, &sqlite.Options{BusyTimeout: 200 * time.Millisecond})
	if err := l.ProbeWrite(t.Context()); err != nil {
		t.Fatalf("ProbeWrite of a healthy log: %v", err)
	}
	if err := openAt(t, path, &sqlite.Options{ReadOnly: true}).ProbeWrite(t.Context()); err == nil {
		t.Error("ProbeWrite of a read-only log: no error")
	}
	db := raw(t, path)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := l.ProbeWrite(t.Context()); err == nil {
		t.Error("ProbeWrite while another connection holds the write lock: no error")
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := l.ProbeWrite(t.Context()); err != nil {
		t.Errorf("ProbeWrite once the lock is free: %v", err)
	}
	mustExec(t, db, "UPDATE audit_records SET body = '{' WHERE seq = 2")
	if err := l.ProbeWrite(t.Context()); !errors.Is(err, audit.ErrBroken) {
		t.Errorf("ProbeWrite of a log whose last record is broken: %v, want ErrBroken", err)
	}
}

// TestAppendAfterSavepointRollback appends in one transaction, undoes an
// append by a rollback to a savepoint, as a group commit undoes a failed
// write, and appends again in the same transaction: the record takes the
// undone one's number and is sealed after the record before it, and the
// chain verifies, in that transaction and in the next.
func TestAppendAfterSavepointRollback(t *testing.T) { testAppendAfterSavepointRollback(t, false) }

// TestAppendAfterReportedRollback is TestAppendAfterSavepointRollback with
// a Log that keeps the head of its chain for the appends after the first
// in a transaction, told of each rollback with Undone.
func TestAppendAfterReportedRollback(t *testing.T) { testAppendAfterSavepointRollback(t, true) }

func testAppendAfterSavepointRollback(t *testing.T, reportsUndone bool) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shared.db")
	db, inTx := sharedDB(t, path, "_txlock=immediate")
	read, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	l, err := sqlite.NewSharedWith(ctx, db, inTx, read, &sqlite.SharedOptions{ReportsUndone: reportsUndone})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	var kept []*audit.Record
	err = inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		first, undone, after := sample(0), sample(1), sample(2)
		if err := l.AppendTx(ctx, tx, first); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			return err
		}
		if err := l.AppendTx(ctx, tx, undone); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
			return err
		}
		if reportsUndone {
			l.Undone()
		}
		if err := l.AppendTx(ctx, tx, after); err != nil {
			return err
		}
		if after.Seq != 2 || after.PrevHash != first.Hash {
			t.Errorf("the append after the rollback got sequence number %d after %q, want 2 after %q", after.Seq, after.PrevHash, first.Hash)
		}
		// An undone append whose record had the same number as the next
		// one: the next append is sealed after the right record too.
		if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			return err
		}
		if err := l.AppendTx(ctx, tx, sample(3), sample(4)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
			return err
		}
		if reportsUndone {
			l.Undone()
		}
		last := sample(5)
		if err := l.AppendTx(ctx, tx, last); err != nil {
			return err
		}
		kept = []*audit.Record{first, after, last}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	next := sample(6)
	if err := l.Append(ctx, next); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, next)
	rep, err := audit.Verify(ctx, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (audit.Report{Records: uint64(len(kept)), Head: next.Anchor()}); *rep != want {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	for i, r := range kept {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d kept with sequence number %d", i, r.Seq)
		}
	}
}

// sharedDB opens the database at path with one connection (query holds
// the options of its name) and returns it, closed when tb ends, with an
// inTx for [sqlite.NewShared] that runs fn in a transaction of it.
func sharedDB(tb testing.TB, path, query string) (*sql.DB, func(context.Context, func(context.Context, *sql.Tx) error) error) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?"+query)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	inTx := func(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(ctx, tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	return db, inTx
}
