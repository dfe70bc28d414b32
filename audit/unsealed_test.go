package audit_test

import (
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// unsealed returns the i-th sample record in the form of one committed but
// not sealed yet.
func unsealed(i int) audit.Record {
	r := *sample(i)
	return r
}

// TestVerifyUnsealed: records not sealed yet after the sealed ones are
// counted apart, with the head, anchors and incremental verification of
// the sealed ones unchanged; anything else about them is a broken log.
func TestVerifyUnsealed(t *testing.T) {
	c := chain(t, 3)
	log := append(append(sliceReader{}, c...), unsealed(7), unsealed(8))
	head := c[2].Anchor()
	for _, opts := range []*audit.VerifyOptions{nil, {Anchor: &head}, {From: &head}} {
		rep, err := audit.Verify(t.Context(), log, opts)
		if err != nil || rep.Head != head || rep.Unsealed != 2 {
			t.Errorf("Verify(%+v): %+v, %v; want head %v and 2 unsealed", opts, rep, err, head)
		}
	}
	if rep, err := audit.Verify(t.Context(), sliceReader{unsealed(0)}, nil); err != nil || rep.Records != 0 || rep.Unsealed != 1 {
		t.Errorf("Verify of a log of one unsealed record: %+v, %v", rep, err)
	}
	// The anchor's record is gone, unsealed or not: the tail was deleted.
	beyond := audit.Anchor{Seq: 4, Hash: head.Hash}
	_, err := audit.Verify(t.Context(), log, &audit.VerifyOptions{Anchor: &beyond})
	wantBroken(t, err, 4, audit.ProblemAnchorMismatch)

	withHash := unsealed(7)
	withHash.Hash = c[0].Hash
	withPrev := unsealed(7)
	withPrev.PrevHash = c[0].Hash
	badKind := unsealed(7)
	badKind.Kind = "forged"
	for _, tc := range []struct {
		name    string
		log     sliceReader
		seq     uint64
		problem audit.Problem
	}{
		{"a sealed record after an unsealed one", sliceReader{c[0], unsealed(5), c[1]}, 2, audit.ProblemOutOfSequence},
		{"seq 0 with a hash", sliceReader{c[0], withHash}, 2, audit.ProblemInvalidField},
		{"seq 0 with a prev_hash", sliceReader{c[0], withPrev}, 2, audit.ProblemInvalidField},
		{"an unknown kind", sliceReader{c[0], badKind}, 2, audit.ProblemUnknownKind},
	} {
		_, err := audit.Verify(t.Context(), tc.log, nil)
		t.Run(tc.name, func(t *testing.T) { wantBroken(t, err, tc.seq, tc.problem) })
	}
}

// TestUnsealedJSON: the JSON form of an unsealed record has seq 0 and
// empty hashes, and decodes as unsealed; seq 0 with a hash does not
// decode.
func TestUnsealedJSON(t *testing.T) {
	u := unsealed(3)
	if !u.Unsealed() {
		t.Fatal("a sample record before Append is not unsealed")
	}
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back audit.Record
	if err := back.UnmarshalJSON(b); err != nil || !back.Unsealed() || back.Reason != u.Reason || !back.Time.Equal(u.Time) {
		t.Errorf("decoded %+v, %v; want the unsealed record back", back, err)
	}
	c := chain(t, 1)[0]
	c.Seq = 0
	if _, err := c.MarshalJSON(); err == nil {
		t.Error("MarshalJSON of a record with seq 0 and a hash: no error")
	}
}
