// Package audittest is the conformance kit of [audit.Log]
// implementations: [Run] checks one.
//
//	func TestLog(t *testing.T) {
//		audittest.Run(t, func(t *testing.T) audittest.Opener {
//			l := audit.NewMemoryLog()
//			return func(t *testing.T) audit.Log { return l }
//		})
//	}
//
// The kit checks what every log must do whatever keeps it: the chain of
// sequence numbers and hashes, atomic appends, refusals of invalid
// records, reads by conversation, cancellation, and appends by many
// goroutines through several handles on one log at once (for a log in a
// database: several connections, as several processes would hold).
// Tampering with the stored form is specific to each implementation and
// stays in its own tests, and so do records written unsealed (for a log
// that implements [audit.Sealer]), which only its own entry points write.
package audittest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/audit"
)

// Opener opens another handle on one log: a Log of its own (its own
// connections, for a log in a database) on the same stored records. It
// may register cleanups with t.
type Opener func(t *testing.T) audit.Log

// Run runs the conformance tests of an [audit.Log] implementation.
// newLog makes a new, empty log for each subtest and returns its
// [Opener]; it may register cleanups with t.
func Run(t *testing.T, newLog func(t *testing.T) Opener) {
	t.Run("Chain", func(t *testing.T) { testChain(t, newLog(t)) })
	t.Run("Empty", func(t *testing.T) { testEmpty(t, newLog(t)) })
	t.Run("Atomic", func(t *testing.T) { testAtomic(t, newLog(t)) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, newLog(t)) })
	t.Run("Time", func(t *testing.T) { testTime(t, newLog(t)) })
	t.Run("Conversation", func(t *testing.T) { testConversation(t, newLog(t)) })
	t.Run("AfterOtherHandle", func(t *testing.T) { testAfterOtherHandle(t, newLog(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newLog(t)) })
	t.Run("Canceled", func(t *testing.T) { testCanceled(t, newLog(t)) })
	t.Run("EarlyBreak", func(t *testing.T) { testEarlyBreak(t, newLog(t)) })
	t.Run("Incremental", func(t *testing.T) { testIncremental(t, newLog(t)) })
	t.Run("Sealer", func(t *testing.T) { testSealer(t, newLog(t)) })
}

// testSealer checks a log that implements [audit.Sealer]: Append seals at
// once all the same, so SealPending finds nothing to seal, and the chain
// stays intact; SealPending honours ctx.
func testSealer(t *testing.T, open Opener) {
	l := open(t)
	s, ok := l.(audit.Sealer)
	if !ok {
		t.Skip("the log seals as it appends: no audit.Sealer")
	}
	if n, err := s.SealPending(t.Context()); err != nil || n != 0 {
		t.Errorf("SealPending of an empty log: %d, %v", n, err)
	}
	rs := []*audit.Record{Sample(0), Sample(1)}
	if err := l.Append(t.Context(), rs...); err != nil {
		t.Fatal(err)
	}
	if rs[0].Seq != 1 || rs[1].Seq != 2 {
		t.Errorf("Append of a sealing log: seqs %d, %d; want 1, 2", rs[0].Seq, rs[1].Seq)
	}
	if n, err := s.SealPending(t.Context()); err != nil || n != 0 {
		t.Errorf("SealPending after Append: %d, %v; want nothing to seal", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.SealPending(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("SealPending with a canceled context: %v, want context.Canceled", err)
	}
	if rep := CheckIntact(t, l, 2); rep.Unsealed != 0 {
		t.Errorf("%d unsealed records after Append, want 0", rep.Unsealed)
	}
}

// t0 is a fixed instant with nanoseconds, which logs must keep.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)

// Sample returns the i-th of a varied series of valid, unsealed records:
// every kind and source in turn, three conversations, fixed times.
func Sample(i int) *audit.Record {
	kinds := audit.Kinds()
	sources := []audit.Source{audit.SourceSystem, audit.SourcePerson, audit.SourceRule, audit.SourceStickyGrant}
	return &audit.Record{
		Time:           t0.Add(time.Duration(i) * time.Second),
		ConversationID: fmt.Sprintf("conv-%d", i%3),
		PauseID:        fmt.Sprintf("p%d", i/4),
		CallKey:        fmt.Sprintf("c%d", i%2),
		Tool:           "bookFlight",
		Kind:           kinds[i%len(kinds)],
		Actor:          audit.Actor{ID: fmt.Sprintf("user-%d", i%5), Source: sources[i%len(sources)]},
		Reason:         fmt.Sprintf("reason %d ✓", i),
		ArgsDigest:     audit.Digest(fmt.Appendf(nil, `{"flight":"VX%d"}`, i)),
	}
}

// all reads every record of l selected by q.
func all(t *testing.T, l audit.Reader, q *audit.Query) []*audit.Record {
	t.Helper()
	var out []*audit.Record
	for r, err := range l.Records(t.Context(), q) {
		if err != nil {
			t.Fatalf("Records: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// CheckIntact checks that l holds an intact chain of exactly n records.
func CheckIntact(t *testing.T, l audit.Reader, n int) *audit.Report {
	t.Helper()
	rep, err := audit.Verify(t.Context(), l, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Records != uint64(n) || rep.Head.Seq != uint64(n) {
		t.Fatalf("Verify: %d records, head %v; want %d records", rep.Records, rep.Head, n)
	}
	return rep
}

func testChain(t *testing.T, open Opener) {
	const n = 30
	l := open(t)
	var rs []*audit.Record
	for i := range n {
		r := Sample(i)
		if err := l.Append(t.Context(), r); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		want := uint64(i + 1)
		if r.Seq != want || r.Hash != r.ComputeHash() || (i > 0 && r.PrevHash != rs[i-1].Hash) || (i == 0 && r.PrevHash != "") {
			t.Fatalf("record %d sealed as seq %d after %q (hash %q); want seq %d after the previous record", i, r.Seq, r.PrevHash, r.Hash, want)
		}
		rs = append(rs, r)
	}
	// A batch continues the chain.
	batch := []*audit.Record{Sample(n), Sample(n + 1), Sample(n + 2)}
	if err := l.Append(t.Context(), batch...); err != nil {
		t.Fatalf("Append of a batch: %v", err)
	}
	for i, r := range batch {
		if r.Seq != uint64(n+i+1) {
			t.Fatalf("batch record %d sealed as seq %d, want %d", i, r.Seq, n+i+1)
		}
	}
	rs = append(rs, batch...)
	rep := CheckIntact(t, l, len(rs))
	if rep.Head != rs[len(rs)-1].Anchor() {
		t.Errorf("Verify head %v, want %v", rep.Head, rs[len(rs)-1].Anchor())
	}
	if diff := cmp.Diff(rs, all(t, l, nil)); diff != "" {
		t.Errorf("records read (-appended +read):\n%s", diff)
	}
	head := rep.Head
	if rep, err := audit.Verify(t.Context(), open(t), &audit.VerifyOptions{Anchor: &head}); err != nil || !rep.Anchored {
		t.Errorf("another handle verifying against the head: %+v, %v", rep, err)
	}
}

func testEmpty(t *testing.T, open Opener) {
	l := open(t)
	if err := l.Append(t.Context()); err != nil {
		t.Fatalf("Append of nothing: %v", err)
	}
	if got := all(t, l, nil); len(got) != 0 {
		t.Fatalf("an empty log has %d records", len(got))
	}
	rep, err := audit.Verify(t.Context(), l, nil)
	if err != nil || rep.Records != 0 || rep.Head != (audit.Anchor{}) {
		t.Errorf("Verify of an empty log: %+v, %v", rep, err)
	}
	a := audit.Anchor{Seq: 1, Hash: Sample(0).ComputeHash()}
	if _, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{Anchor: &a}); !errors.Is(err, audit.ErrBroken) {
		t.Errorf("Verify of an empty log against an anchor: %v, want ErrBroken", err)
	}
}

func testAtomic(t *testing.T, open Opener) {
	l := open(t)
	if err := l.Append(t.Context(), Sample(0), Sample(1)); err != nil {
		t.Fatal(err)
	}
	ok, bad := Sample(2), Sample(3)
	bad.Kind = "approved"
	okBefore := *ok
	if err := l.Append(t.Context(), ok, bad); !errors.Is(err, audit.ErrInvalidRecord) {
		t.Fatalf("Append with an invalid second record: %v, want ErrInvalidRecord", err)
	}
	if *ok != okBefore {
		t.Error("a failed append changed a record of the caller's")
	}
	CheckIntact(t, l, 2)
	// The log goes on from where it was.
	r := Sample(4)
	if err := l.Append(t.Context(), r); err != nil || r.Seq != 3 {
		t.Errorf("Append after a refused one: seq %d, %v; want seq 3", r.Seq, err)
	}
}

func testInvalid(t *testing.T, open Opener) {
	l := open(t)
	for _, tc := range []struct {
		name string
		edit func(*audit.Record)
	}{
		{"unknown kind", func(r *audit.Record) { r.Kind = "launched" }},
		{"empty kind", func(r *audit.Record) { r.Kind = "" }},
		{"unknown source", func(r *audit.Record) { r.Actor.Source = "robot" }},
		{"conversation not UTF-8", func(r *audit.Record) { r.ConversationID = "\xff" }},
		{"reason not UTF-8", func(r *audit.Record) { r.Reason = "ok\xc3" }},
		{"digest malformed", func(r *audit.Record) { r.ArgsDigest = "md5:abc" }},
		{"year 10000", func(r *audit.Record) { r.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		r := Sample(0)
		tc.edit(r)
		if err := l.Append(t.Context(), r); !errors.Is(err, audit.ErrInvalidRecord) {
			t.Errorf("%s: Append: %v, want ErrInvalidRecord", tc.name, err)
		}
		if r.Seq != 0 || r.Hash != "" {
			t.Errorf("%s: a refused record was sealed", tc.name)
		}
	}
	if err := l.Append(t.Context(), Sample(0), nil); !errors.Is(err, audit.ErrInvalidRecord) {
		t.Errorf("Append with a nil record: %v, want ErrInvalidRecord", err)
	}
	CheckIntact(t, l, 0)
}

func testTime(t *testing.T, open Opener) {
	l := open(t)
	r := Sample(0)
	r.Time = time.Time{}
	before := time.Now()
	if err := l.Append(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if r.Time.Before(before.Add(-time.Second)) || r.Time.After(time.Now().Add(time.Second)) || r.Time.Location() != time.UTC {
		t.Errorf("a zero time became %v, want now in UTC", r.Time)
	}
	local := Sample(1)
	local.Time = t0.In(time.FixedZone("X", 3600))
	if err := l.Append(t.Context(), local); err != nil {
		t.Fatal(err)
	}
	got := all(t, l, nil)
	if len(got) != 2 || !got[0].Time.Equal(r.Time) || !got[1].Time.Equal(t0) || got[1].Time.Location() != time.UTC {
		t.Errorf("stored times %v, want %v and %v in UTC with nanoseconds", times(got), r.Time, t0)
	}
}

func times(rs []*audit.Record) []time.Time {
	var out []time.Time
	for _, r := range rs {
		out = append(out, r.Time)
	}
	return out
}

func testConversation(t *testing.T, open Opener) {
	l := open(t)
	var rs []*audit.Record
	for i := range 12 {
		rs = append(rs, Sample(i))
	}
	if err := l.Append(t.Context(), rs...); err != nil {
		t.Fatal(err)
	}
	var want []*audit.Record
	for _, r := range rs {
		if r.ConversationID == "conv-1" {
			want = append(want, r)
		}
	}
	if diff := cmp.Diff(want, all(t, l, &audit.Query{ConversationID: "conv-1"})); diff != "" {
		t.Errorf("records of conv-1 (-want +got):\n%s", diff)
	}
	if got := all(t, l, &audit.Query{ConversationID: "nobody"}); len(got) != 0 {
		t.Errorf("records of an unknown conversation: %d, want none", len(got))
	}
	if got := all(t, l, &audit.Query{}); len(got) != len(rs) {
		t.Errorf("the zero query selected %d records, want %d", len(got), len(rs))
	}
}

func testAfterOtherHandle(t *testing.T, open Opener) {
	ls := []audit.Log{open(t), open(t)}
	for i := range 8 {
		r := Sample(i)
		if err := ls[i%2].Append(t.Context(), r); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if r.Seq != uint64(i+1) {
			t.Fatalf("append %d through handle %d got seq %d, want %d", i, i%2, r.Seq, i+1)
		}
	}
	CheckIntact(t, ls[0], 8)
	CheckIntact(t, ls[1], 8)
}

// testConcurrent has many goroutines append at once through several
// handles: the chain must not fork, and every record must be there once.
func testConcurrent(t *testing.T, open Opener) {
	const appenders, each, handles = 16, 5, 3
	ls := make([]audit.Log, handles)
	for i := range ls {
		ls[i] = open(t)
	}
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	for g := range appenders {
		wg.Go(func() {
			for i := range each {
				recs := []*audit.Record{Sample(g*each + i)}
				if i%2 == 1 {
					recs = append(recs, Sample(1000+g*each+i))
				}
				if err := ls[g%handles].Append(context.Background(), recs...); err != nil {
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
	total := appenders * (each + each/2)
	CheckIntact(t, ls[0], total)
	var reasons []string
	for _, r := range all(t, ls[1], nil) {
		reasons = append(reasons, r.Reason)
	}
	slices.Sort(reasons)
	if len(slices.Compact(reasons)) != total {
		t.Errorf("%d distinct records, want %d", len(reasons), total)
	}
}

func testCanceled(t *testing.T, open Opener) {
	l := open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Append(ctx, Sample(0)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a canceled context: %v, want context.Canceled", err)
	}
	for _, err := range l.Records(ctx, nil) {
		if err == nil {
			t.Error("Records with a canceled context yielded a record")
		}
		break
	}
	CheckIntact(t, l, 0)
}

func testEarlyBreak(t *testing.T, open Opener) {
	l := open(t)
	for i := range 5 {
		if err := l.Append(t.Context(), Sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, err := range l.Records(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 {
			break
		}
	}
	// Breaking out left nothing held: the log still appends.
	r := Sample(5)
	if err := l.Append(t.Context(), r); err != nil || r.Seq != 6 {
		t.Errorf("Append after a loop broke out of Records: seq %d, %v", r.Seq, err)
	}
}

// testIncremental reads the records after a sequence number and verifies
// from a record verified before.
func testIncremental(t *testing.T, open Opener) {
	l := open(t)
	var rs []*audit.Record
	for i := range 12 {
		rs = append(rs, Sample(i))
	}
	if err := l.Append(t.Context(), rs...); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rs[7:], all(t, l, &audit.Query{After: 7})); diff != "" {
		t.Errorf("records after 7 (-want +got):\n%s", diff)
	}
	var want []*audit.Record
	for _, r := range rs[4:] {
		if r.ConversationID == "conv-2" {
			want = append(want, r)
		}
	}
	if diff := cmp.Diff(want, all(t, l, &audit.Query{ConversationID: "conv-2", After: 4})); diff != "" {
		t.Errorf("records of conv-2 after 4 (-want +got):\n%s", diff)
	}
	if got := all(t, l, &audit.Query{After: 12}); len(got) != 0 {
		t.Errorf("%d records after the last, want none", len(got))
	}

	from := rs[5].Anchor()
	rep, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{From: &from})
	if err != nil || rep.Records != 7 || rep.Head != rs[11].Anchor() {
		t.Errorf("Verify from record 6: %+v, %v; want 7 records up to record 12", rep, err)
	}
	head := rs[11].Anchor()
	if rep, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{From: &head}); err != nil || rep.Records != 1 {
		t.Errorf("Verify from the head: %+v, %v; want 1 record", rep, err)
	}
	wrong := audit.Anchor{Seq: 6, Hash: rs[6].Hash}
	if _, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{From: &wrong}); !isProblem(err, 6, audit.ProblemAnchorMismatch) {
		t.Errorf("Verify from record 6 with another hash: %v, want anchor_mismatch at 6", err)
	}
	beyond := audit.Anchor{Seq: 13, Hash: rs[11].Hash}
	if _, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{From: &beyond}); !isProblem(err, 13, audit.ProblemAnchorMismatch) {
		t.Errorf("Verify from a record past the end: %v, want anchor_mismatch at 13", err)
	}
}

func isProblem(err error, seq uint64, p audit.Problem) bool {
	var re *audit.RecordError
	return errors.As(err, &re) && re.Seq == seq && re.Problem == p
}
