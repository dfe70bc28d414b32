package audit

import (
	"context"
	"errors"
	"fmt"
)

// VerifyOptions configure [Verify]. A nil *VerifyOptions means all
// defaults.
type VerifyOptions struct {
	// Anchor, when not nil, is a record the log must hold: one with
	// Anchor.Seq and Anchor.Hash, typically the head of the log published
	// or kept elsewhere at some earlier time. Nil means no anchor: then the
	// deletion of records at the end of the log goes unnoticed, since what
	// is left is a valid chain.
	Anchor *Anchor
	// From, when not nil, makes the verification incremental: it starts
	// at this record, one an earlier verification found intact (its
	// [Report.Head]), which the log must still hold with this hash, and
	// checks only the records after it. The records before it are taken
	// as verified. Nil means from record 1.
	From *Anchor
}

// Report is what [Verify] found intact.
type Report struct {
	// Records is the number of records found intact: all of them when
	// Verify returns no error, else those before the break; with
	// [VerifyOptions.From], those from that record on.
	Records uint64
	// Head is the last intact record; the zero Anchor when there is none.
	// Publish it to detect later deletions at the end of the log.
	Head Anchor
	// Anchored is true when an anchor was given and the log holds it.
	Anchored bool
	// Unsealed is the number of records the log holds after Head that are
	// not sealed into the chain yet ([Record.Unsealed]): committed with
	// the change they describe, waiting for the log's sealer to give them
	// a sequence number and hash. Their fields are checked, but no hash
	// covers them yet, so neither the chain nor an anchor protects them
	// until they are sealed. Zero for a log that seals as it appends.
	Unsealed uint64
}

// Verify reads every record of r in order and checks the chain:
//   - each record decodes, with a known version and kind (the reader
//     reports those that do not);
//   - sequence numbers run 1, 2, 3, … without gap, repeat or reordering;
//   - each record's Hash is [Record.ComputeHash] of its fields;
//   - each record's PrevHash is the Hash of the record before it ("" for
//     record 1);
//   - with [VerifyOptions.Anchor], the log holds the anchored record;
//   - records not sealed yet ([Record.Unsealed]) come after every sealed
//     one and have valid fields; they are counted in [Report.Unsealed],
//     not in Records, and are not part of the chain.
//
// The first broken record gives a [*RecordError] naming its sequence
// number and the [Problem]; the report then covers the records before it.
// An altered field shows as [ProblemHashMismatch] on its record; a deleted,
// inserted or reordered record as [ProblemOutOfSequence] or
// [ProblemBrokenLink]; a record rewritten together with its hash as
// [ProblemBrokenLink] on the record after it. Errors of the reader that are
// not a *RecordError (I/O, ctx) are returned as they are. opts may be nil.
func Verify(ctx context.Context, r Reader, opts *VerifyOptions) (*Report, error) {
	var anchor *Anchor
	if opts != nil && opts.Anchor != nil {
		a := *opts.Anchor
		anchor = &a
	}
	rep := &Report{}
	var (
		head Anchor
		q    *Query
		from *Anchor
	)
	if opts != nil && opts.From != nil && opts.From.Seq > 0 {
		a := *opts.From
		from = &a
		// The record before From is not read: its hash is From's
		// prev_hash, taken on trust.
		q = &Query{After: a.Seq - 1}
		head.Seq = a.Seq - 1
	}
	for rec, err := range r.Records(ctx, q) {
		want := head.Seq + 1
		if err != nil {
			var re *RecordError
			if errors.As(err, &re) {
				e := *re
				e.Seq = want
				return rep, &e
			}
			return rep, err
		}
		if rec == nil {
			return rep, &RecordError{Seq: want, Problem: ProblemUndecodable, Detail: "the reader returned no record"}
		}
		if err := rec.check(); err != nil {
			err.Seq = want
			return rep, err
		}
		if rec.Unsealed() {
			rep.Unsealed++
			continue
		}
		if rep.Unsealed > 0 {
			return rep, &RecordError{Seq: want, Problem: ProblemOutOfSequence,
				Detail: fmt.Sprintf("found record %d after %d records not sealed yet: sealed records come first", rec.Seq, rep.Unsealed)}
		}
		if rec.Seq != want {
			return rep, &RecordError{Seq: want, Problem: ProblemOutOfSequence, Detail: outOfSequence(want, rec.Seq)}
		}
		if rec.ComputeHash() != rec.Hash {
			return rep, &RecordError{Seq: want, Problem: ProblemHashMismatch, Detail: "the stored hash is not the hash of the record's fields: the record was altered"}
		}
		if from != nil && rec.Seq == from.Seq {
			if rec.Hash != from.Hash {
				return rep, &RecordError{Seq: want, Problem: ProblemAnchorMismatch, Detail: fmt.Sprintf("the record verified before had hash %s", from.Hash)}
			}
			head.Hash = rec.PrevHash
		}
		if rec.PrevHash != head.Hash {
			return rep, &RecordError{Seq: want, Problem: ProblemBrokenLink, Detail: "prev_hash is not the hash of the record before it: a record before it was removed, replaced or rewritten"}
		}
		if anchor != nil && rec.Seq == anchor.Seq && rec.Hash != anchor.Hash {
			return rep, &RecordError{Seq: want, Problem: ProblemAnchorMismatch, Detail: fmt.Sprintf("the anchor says hash %s", anchor.Hash)}
		}
		head = rec.Anchor()
		rep.Records++
		rep.Head = head
	}
	if from != nil && head.Seq < from.Seq {
		return rep, &RecordError{Seq: from.Seq, Problem: ProblemAnchorMismatch,
			Detail: fmt.Sprintf("the log no longer holds record %d, verified before: records at its end were deleted", from.Seq)}
	}
	if anchor != nil {
		if head.Seq < anchor.Seq {
			return rep, &RecordError{Seq: head.Seq + 1, Problem: ProblemAnchorMismatch,
				Detail: fmt.Sprintf("the log ends at record %d, before the anchor's record %d: records at its end were deleted", head.Seq, anchor.Seq)}
		}
		rep.Anchored = true
	}
	return rep, nil
}

// outOfSequence describes finding record got where record want belongs.
func outOfSequence(want, got uint64) string {
	switch {
	case got == want+1:
		return fmt.Sprintf("found record %d: record %d is missing or out of place", got, want)
	case got > want:
		return fmt.Sprintf("found record %d: records %d to %d are missing or out of place", got, want, got-1)
	default:
		return fmt.Sprintf("found record %d again or out of order", got)
	}
}
