package audit_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/audit"
)

// t0 is the time of the first test record.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// sample returns the i-th of a varied series of unsealed records: every
// kind but refused, every source, with and without a pause, digests and
// reasons.
func sample(i int) *audit.Record {
	kinds := []audit.Kind{audit.KindRequested, audit.KindDecided, audit.KindEdited, audit.KindExecuted, audit.KindDenied, audit.KindExpired}
	sources := []audit.Source{audit.SourceSystem, audit.SourcePerson, audit.SourceRule, audit.SourceStickyGrant}
	r := &audit.Record{
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
	return r
}

// appendSamples appends n sample records to l, one at a time.
func appendSamples(t testing.TB, l audit.Log, n int) []*audit.Record {
	t.Helper()
	rs := make([]*audit.Record, n)
	for i := range rs {
		rs[i] = sample(i)
		if err := l.Append(context.Background(), rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// sliceReader is a Reader over a slice of records, which the tests
// tamper with.
type sliceReader []audit.Record

func (s sliceReader) Records(ctx context.Context, q *audit.Query) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		for _, r := range s {
			if !q.Selects(&r) {
				continue
			}
			if !yield(&r, nil) {
				return
			}
		}
	}
}

// chain returns n sealed sample records.
func chain(t testing.TB, n int) sliceReader {
	t.Helper()
	l := audit.NewMemoryLog()
	rs := appendSamples(t, l, n)
	out := make(sliceReader, n)
	for i, r := range rs {
		out[i] = *r
	}
	return out
}

// wantBroken checks that err is a *RecordError with the given sequence
// number and problem.
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

func TestVerifyIntact(t *testing.T) {
	const n = 50
	l := audit.NewMemoryLog()
	rs := appendSamples(t, l, n)
	for i, r := range rs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d got sequence number %d", i, r.Seq)
		}
	}
	head := rs[n-1].Anchor()
	for _, tc := range []struct {
		name   string
		anchor *audit.Anchor
	}{
		{"no anchor", nil},
		{"anchor at the head", &head},
		{"anchor in the middle", &audit.Anchor{Seq: 20, Hash: rs[19].Hash}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := audit.Verify(t.Context(), l, &audit.VerifyOptions{Anchor: tc.anchor})
			if err != nil {
				t.Fatal(err)
			}
			want := &audit.Report{Records: n, Head: head, Anchored: tc.anchor != nil}
			if diff := cmp.Diff(want, rep); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
	// The records read back are those appended.
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
}

func TestVerifyEmpty(t *testing.T) {
	rep, err := audit.Verify(t.Context(), audit.NewMemoryLog(), nil)
	if err != nil || *rep != (audit.Report{}) {
		t.Errorf("Verify(empty) = %+v, %v; want an empty report", rep, err)
	}
	_, err = audit.Verify(t.Context(), audit.NewMemoryLog(), &audit.VerifyOptions{Anchor: &audit.Anchor{Seq: 1, Hash: vectorHash}})
	wantBroken(t, err, 1, audit.ProblemAnchorMismatch)
}

// TestVerifyAltered changes one field of one record (first, middle, last)
// and checks that Verify names that record.
func TestVerifyAltered(t *testing.T) {
	const n = 9
	other := strings.Repeat("0", 64)
	for _, tc := range []struct {
		field   string
		alter   func(*audit.Record)
		problem audit.Problem
	}{
		{"seq", func(r *audit.Record) { r.Seq += 100 }, audit.ProblemOutOfSequence},
		{"time", func(r *audit.Record) { r.Time = r.Time.Add(time.Nanosecond) }, audit.ProblemHashMismatch},
		{"conversation_id", func(r *audit.Record) { r.ConversationID += "x" }, audit.ProblemHashMismatch},
		{"pause_id", func(r *audit.Record) { r.PauseID = "" }, audit.ProblemHashMismatch},
		{"call_key", func(r *audit.Record) { r.CallKey = "#7" }, audit.ProblemHashMismatch},
		{"tool", func(r *audit.Record) { r.Tool = "cancelFlight" }, audit.ProblemHashMismatch},
		{"kind", func(r *audit.Record) { r.Kind = audit.KindRefused }, audit.ProblemHashMismatch},
		{"unknown kind", func(r *audit.Record) { r.Kind = "launched" }, audit.ProblemUnknownKind},
		{"actor id", func(r *audit.Record) { r.Actor.ID = "mallory" }, audit.ProblemHashMismatch},
		{"actor source", func(r *audit.Record) {
			r.Actor.Source = map[audit.Source]audit.Source{audit.SourcePerson: audit.SourceSystem}[r.Actor.Source]
			if r.Actor.Source == "" {
				r.Actor.Source = audit.SourcePerson
			}
		}, audit.ProblemHashMismatch},
		{"reason", func(r *audit.Record) { r.Reason = "allowed" }, audit.ProblemHashMismatch},
		{"args_digest", func(r *audit.Record) { r.ArgsDigest = "sha256:" + other }, audit.ProblemHashMismatch},
		{"args_digest removed", func(r *audit.Record) { r.ArgsDigest = "" }, audit.ProblemHashMismatch},
		{"prev_hash", func(r *audit.Record) { r.PrevHash = other }, audit.ProblemHashMismatch},
		{"hash", func(r *audit.Record) { r.Hash = other }, audit.ProblemHashMismatch},
		{"malformed hash", func(r *audit.Record) { r.Hash = "x" }, audit.ProblemInvalidField},
	} {
		for _, at := range []int{1, n / 2, n} {
			t.Run(fmt.Sprintf("%s of record %d", tc.field, at), func(t *testing.T) {
				recs := chain(t, n)
				before := recs[at-1]
				tc.alter(&recs[at-1])
				if cmp.Equal(before, recs[at-1]) {
					t.Fatal("the alteration changed nothing")
				}
				rep, err := audit.Verify(t.Context(), recs, nil)
				wantBroken(t, err, uint64(at), tc.problem)
				if rep.Records != uint64(at-1) {
					t.Errorf("report counts %d intact records, want %d", rep.Records, at-1)
				}
			})
		}
	}
}

// TestVerifyStructure deletes, reorders, inserts and rewrites records.
func TestVerifyStructure(t *testing.T) {
	const n = 9
	good := chain(t, n)
	head := good[n-1].Anchor()
	// forged returns a record sealed after rec (nil: the start).
	forged := func(after *audit.Record) audit.Record {
		var h audit.Anchor
		if after != nil {
			h = after.Anchor()
		}
		r := sample(100)
		if err := audit.Seal(h, r); err != nil {
			t.Fatal(err)
		}
		return *r
	}
	// rewriteFrom re-seals recs[i:] after recs[i-1], as someone who
	// changed record i and recomputed every hash after it would.
	rewriteFrom := func(recs sliceReader, i int) sliceReader {
		for j := i; j < len(recs); j++ {
			var h audit.Anchor
			if j > 0 {
				h = recs[j-1].Anchor()
			}
			r := recs[j]
			r.Seq, r.PrevHash, r.Hash = 0, "", ""
			if err := audit.Seal(h, &r); err != nil {
				t.Fatal(err)
			}
			recs[j] = r
		}
		return recs
	}
	type want struct {
		seq     uint64
		problem audit.Problem
	}
	for _, tc := range []struct {
		name       string
		tamper     func(sliceReader) sliceReader
		noAnchor   *want // nil: Verify without anchor finds nothing
		withAnchor want  // with the anchor of the intact log's head
	}{
		{"delete the first", func(r sliceReader) sliceReader { return slices.Delete(r, 0, 1) },
			&want{1, audit.ProblemOutOfSequence}, want{1, audit.ProblemOutOfSequence}},
		{"delete a middle one", func(r sliceReader) sliceReader { return slices.Delete(r, 4, 5) },
			&want{5, audit.ProblemOutOfSequence}, want{5, audit.ProblemOutOfSequence}},
		{"delete the last", func(r sliceReader) sliceReader { return r[:n-1] },
			nil, want{n, audit.ProblemAnchorMismatch}},
		{"delete the last three", func(r sliceReader) sliceReader { return r[:n-3] },
			nil, want{n - 2, audit.ProblemAnchorMismatch}},
		{"delete all", func(r sliceReader) sliceReader { return nil },
			nil, want{1, audit.ProblemAnchorMismatch}},
		{"swap two", func(r sliceReader) sliceReader { r[3], r[4] = r[4], r[3]; return r },
			&want{4, audit.ProblemOutOfSequence}, want{4, audit.ProblemOutOfSequence}},
		{"swap two, renumbered", func(r sliceReader) sliceReader {
			r[3], r[4] = r[4], r[3]
			r[3].Seq, r[4].Seq = 4, 5
			return r
		}, &want{4, audit.ProblemHashMismatch}, want{4, audit.ProblemHashMismatch}},
		{"insert a forged one", func(r sliceReader) sliceReader { return slices.Insert(r, 4, forged(&r[3])) },
			&want{6, audit.ProblemOutOfSequence}, want{6, audit.ProblemOutOfSequence}},
		{"replace the first", func(r sliceReader) sliceReader { r[0] = forged(nil); return r },
			&want{2, audit.ProblemBrokenLink}, want{2, audit.ProblemBrokenLink}},
		{"rewrite one with its hash", func(r sliceReader) sliceReader {
			r[4].Reason = "nothing to see"
			r[4].Hash = r[4].ComputeHash()
			return r
		}, &want{6, audit.ProblemBrokenLink}, want{6, audit.ProblemBrokenLink}},
		// Without a secret, whoever can write the log can recompute every
		// hash after a change: only an anchor kept elsewhere shows it.
		{"rewrite the tail with every hash", func(r sliceReader) sliceReader {
			r[4].Reason = "nothing to see"
			return rewriteFrom(r, 4)
		}, nil, want{n, audit.ProblemAnchorMismatch}},
		{"delete one, rewrite every hash after it", func(r sliceReader) sliceReader {
			return rewriteFrom(slices.Delete(r, 4, 5), 4)
		}, nil, want{n, audit.ProblemAnchorMismatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Verify(t.Context(), tc.tamper(slices.Clone(good)), nil)
			if tc.noAnchor == nil {
				if err != nil {
					t.Errorf("without an anchor: %v; want no error (the tampering is undetectable without one)", err)
				}
			} else {
				wantBroken(t, err, tc.noAnchor.seq, tc.noAnchor.problem)
			}
			_, err = audit.Verify(t.Context(), tc.tamper(slices.Clone(good)), &audit.VerifyOptions{Anchor: &head})
			wantBroken(t, err, tc.withAnchor.seq, tc.withAnchor.problem)
		})
	}
}

// errReader fails after yielding some records.
type errReader struct {
	recs sliceReader
	err  error
}

func (e errReader) Records(ctx context.Context, q *audit.Query) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		for r, err := range e.recs.Records(ctx, q) {
			if !yield(r, err) {
				return
			}
		}
		yield(nil, e.err)
	}
}

func TestVerifyReaderErrors(t *testing.T) {
	recs := chain(t, 3)
	io := errors.New("disk on fire")
	rep, err := audit.Verify(t.Context(), errReader{recs, io}, nil)
	if err != io {
		t.Errorf("got error %v, want the reader's %v as it is", err, io)
	}
	if rep.Records != 3 {
		t.Errorf("report counts %d records, want 3", rep.Records)
	}
	// A reader's *RecordError is reported at the position in the chain.
	_, err = audit.Verify(t.Context(), errReader{recs, &audit.RecordError{Seq: 17, Problem: audit.ProblemUndecodable, Detail: "row 17"}}, nil)
	wantBroken(t, err, 4, audit.ProblemUndecodable)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := audit.Verify(ctx, audit.NewMemoryLog(), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestAppendInvalid(t *testing.T) {
	l := audit.NewMemoryLog()
	appendSamples(t, l, 2)
	for _, tc := range []struct {
		name  string
		alter func(*audit.Record)
	}{
		{"no kind", func(r *audit.Record) { r.Kind = "" }},
		{"unknown kind", func(r *audit.Record) { r.Kind = "approved" }},
		{"no source", func(r *audit.Record) { r.Actor.Source = "" }},
		{"invalid UTF-8", func(r *audit.Record) { r.Reason = "\xff" }},
		{"bad digest", func(r *audit.Record) { r.ArgsDigest = "sha256:abc" }},
		{"raw arguments as digest", func(r *audit.Record) { r.ArgsDigest = `{"card":"4111111111111111"}` }},
		{"year 10000", func(r *audit.Record) { r.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, bad := sample(10), sample(11)
			tc.alter(bad)
			before := *bad
			err := l.Append(t.Context(), ok, bad)
			if !errors.Is(err, audit.ErrInvalidRecord) {
				t.Fatalf("Append: got error %v, want one matching ErrInvalidRecord", err)
			}
			if ok.Seq != 0 || !cmp.Equal(before, *bad) {
				t.Error("a failed append changed the caller's records")
			}
			rep, err := audit.Verify(t.Context(), l, nil)
			if err != nil || rep.Records != 2 {
				t.Errorf("after a failed append: %d records, %v; want 2 intact", rep.Records, err)
			}
		})
	}
	if err := l.Append(t.Context(), nil); !errors.Is(err, audit.ErrInvalidRecord) {
		t.Errorf("Append(nil record): %v, want ErrInvalidRecord", err)
	}
}

func TestAppendSetsTime(t *testing.T) {
	l := audit.NewMemoryLog()
	before := time.Now()
	r := sample(0)
	r.Time = time.Time{}
	if err := l.Append(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if r.Time.Before(before.Add(-time.Second)) || r.Time.Location() != time.UTC {
		t.Errorf("Append set Time %v, want about now in UTC", r.Time)
	}
	if _, err := audit.Verify(t.Context(), l, nil); err != nil {
		t.Error(err)
	}
}

func TestRecordsOfConversation(t *testing.T) {
	l := audit.NewMemoryLog()
	appendSamples(t, l, 10)
	var seqs []uint64
	for r, err := range l.Records(t.Context(), &audit.Query{ConversationID: "conv-1"}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, r.Seq)
	}
	if want := []uint64{2, 5, 8}; !slices.Equal(seqs, want) {
		t.Errorf("records of conv-1: %v, want %v", seqs, want)
	}
}

func TestMemoryConcurrentAppend(t *testing.T) {
	const appenders, each = 32, 20
	l := audit.NewMemoryLog()
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	for g := range appenders {
		wg.Go(func() {
			for i := range each {
				if err := l.Append(context.Background(), sample(g*each+i)); err != nil {
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
	rep, err := audit.Verify(t.Context(), l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != appenders*each || rep.Head.Seq != appenders*each {
		t.Errorf("report %+v, want %d records", rep, appenders*each)
	}
}
