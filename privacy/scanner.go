package privacy

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Limits bound the work done for one input. Exceeding one makes the call
// fail with a [*LimitError].
type Limits struct {
	// MaxBytes is the largest text or JSON payload accepted; 0 means 1 MiB.
	MaxBytes int
	// MaxDepth is the deepest nesting of JSON arrays and objects; 0 means 64.
	MaxDepth int
	// MaxNodes is the largest number of JSON values in a payload; 0 means
	// 100000.
	MaxNodes int
	// MaxFindings is the largest number of findings (after merging) in one
	// text or payload; 0 means 10000.
	MaxFindings int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes == 0 {
		l.MaxBytes = 1 << 20
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = 64
	}
	if l.MaxNodes == 0 {
		l.MaxNodes = 100000
	}
	if l.MaxFindings == 0 {
		l.MaxFindings = 10000
	}
	return l
}

// ScannerOptions configure a [Scanner]. The zero value (or nil) means all
// built-in recognizers and default limits.
type ScannerOptions struct {
	// Recognizers are the recognizers to run; nil means [Builtins](). Add
	// custom recognizers with append(privacy.Builtins(), ...).
	Recognizers []Recognizer
	// MinScore drops findings with a lower score; 0 means 0.5.
	MinScore float64
	// Limits bound the inputs; the zero value means the defaults.
	Limits Limits
}

// Scanner finds personal data and secrets in text. The built-in
// recognizers it holds run fused in a single pass over the text that looks
// closer only at a few trigger bytes (digits, '@', ':', '.', ...); other
// recognizers run one after another. Overlapping findings are merged.
//
// A Scanner is immutable and safe for concurrent use.
type Scanner struct {
	table    [256]uint16
	skip     byteRanges // covers every trigger byte, to pass over others eight at a time
	fused    []*builtin
	others   []Recognizer
	index    []int // the position of each of others in the options
	minScore float64
	limits   Limits
}

// NewScanner returns a scanner; opts may be nil. It panics when the
// options are invalid (see [ScannerOptions.Check]): these are programming
// errors.
func NewScanner(opts *ScannerOptions) *Scanner {
	var o ScannerOptions
	if opts != nil {
		o = *opts
	}
	if err := o.Check(); err != nil {
		panic(err.Error())
	}
	rs := o.Recognizers
	if rs == nil {
		rs = Builtins()
	}
	s := &Scanner{minScore: o.MinScore, limits: o.Limits.withDefaults()}
	if s.minScore == 0 {
		s.minScore = 0.5
	}
	for i, r := range rs {
		b, ok := r.(*builtin)
		if !ok || len(s.fused) == 16 {
			s.others = append(s.others, r)
			s.index = append(s.index, i)
			continue
		}
		if slices.Contains(s.fused, b) {
			continue
		}
		for k := 0; k < len(b.triggers); k++ {
			s.table[b.triggers[k]] |= 1 << len(s.fused)
		}
		s.fused = append(s.fused, b)
	}
	s.skip = rangesOf(&s.table)
	return s
}

// byteRanges is a superset of a set of bytes as at most two ranges of
// ASCII bytes (lo < b < hi), plus all bytes of 0x80 and above when high is
// set, tested on eight bytes at once.
type byteRanges struct {
	lo, hi [2]uint64 // each byte of lo[k] is the range's low bound minus 1, of hi[k] its high bound plus 1
	high   bool
}

// rangesOf returns the ranges that cover the bytes marked in tab, merging
// the ranges closest to each other while there are more than two (a third
// test per block costs more than the few blocks it would pass over).
func rangesOf(tab *[256]uint16) byteRanges {
	var r byteRanges
	type span struct{ a, b int } // a..b inclusive
	var spans []span
	for c := 0; c < 0x80; c++ {
		if tab[c] == 0 {
			continue
		}
		if n := len(spans); n > 0 && spans[n-1].b == c-1 {
			spans[n-1].b = c
		} else {
			spans = append(spans, span{c, c})
		}
	}
	for c := 0x80; c < 0x100; c++ {
		r.high = r.high || tab[c] != 0
	}
	for len(spans) > len(r.lo) {
		k := 0
		for j := 1; j+1 < len(spans); j++ {
			if spans[j+1].a-spans[j].b < spans[k+1].a-spans[k].b {
				k = j
			}
		}
		spans[k].b = spans[k+1].b
		spans = slices.Delete(spans, k+1, k+2)
	}
	const ones = 0x0101010101010101
	for k := range r.lo {
		m, n := uint64(0), uint64(0) // no byte is in (0, 0)
		if k < len(spans) {
			m, n = uint64(spans[k].a-1), uint64(spans[k].b+1)
			if spans[k].a == 0 {
				m, n = 0, uint64(spans[k].b+1) // byte 0 is never a trigger of a built-in
			}
		}
		r.lo[k], r.hi[k] = ones*(127-m), ones*(127+n)
	}
	return r
}

// skip returns the first i' >= i, i' = i + 8k, at which the eight bytes of
// text[i':] may hold a byte of the set (a SWAR test of byte ranges, after
// Hacker's Delight's "has between"), or where fewer than eight are left.
func (r *byteRanges) skip(text string, i int) int {
	const low7 = 0x7f7f7f7f7f7f7f7f
	const high = 0x8080808080808080
	lo0, lo1 := r.lo[0], r.lo[1]
	hi0, hi1 := r.hi[0], r.hi[1]
	hm := uint64(0)
	if r.high {
		hm = high
	}
	for ; i+8 <= len(text); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(text[i : i+8]))
		y := x & low7
		z := ((hi0-y)&(y+lo0) | (hi1-y)&(y+lo1)) &^ x
		if (z|x&hm)&high != 0 {
			return i
		}
	}
	return i
}

// validScore reports whether x is a score: a number in [0, 1].
func validScore(x float64) bool { return x >= 0 && x <= 1 } // false for NaN

// Check reports what is wrong with the options, or nil: a minimum score
// that is not a number in [0, 1] (NaN and infinities included), a negative
// limit, an empty but non-nil list of recognizers (which would detect
// nothing), a nil recognizer, or a [Rule] without a pattern or with an
// invalid score. [NewScanner] panics on such options.
func (o *ScannerOptions) Check() error {
	switch {
	case !validScore(o.MinScore):
		return fmt.Errorf("privacy: ScannerOptions.MinScore %v is not a number in [0, 1]", o.MinScore)
	case o.Limits.MaxBytes < 0 || o.Limits.MaxDepth < 0 || o.Limits.MaxNodes < 0 || o.Limits.MaxFindings < 0:
		return errors.New("privacy: ScannerOptions.Limits has a negative limit")
	case o.Recognizers != nil && len(o.Recognizers) == 0:
		return errors.New("privacy: ScannerOptions.Recognizers is empty, so the scanner would detect nothing; use nil for the built-in recognizers")
	}
	for i, r := range o.Recognizers {
		switch r := r.(type) {
		case nil:
			return fmt.Errorf("privacy: recognizer %d is nil", i)
		case *Rule:
			if r == nil || r.Pattern == nil {
				return fmt.Errorf("privacy: recognizer %d is a Rule without a pattern", i)
			}
			if !validScore(r.Score) {
				return fmt.Errorf("privacy: recognizer %d is a Rule whose score %v is not a number in [0, 1]", i, r.Score)
			}
		}
	}
	return nil
}

// Limits returns the scanner's limits with defaults filled in.
func (s *Scanner) Limits() Limits { return s.limits }

// Scan returns the findings in text: sorted by offset, not overlapping,
// each with a score of at least the minimum. Where findings overlap, one
// finding covers their union (so no part of a value is left out), labelled
// by the finding with the highest score, then the most specific type.
//
// Scan fails when text is longer than the byte limit, when there are more
// findings than the limit, or when a recognizer fails.
func (s *Scanner) Scan(ctx context.Context, text string) ([]Finding, error) {
	return s.scan(ctx, text, nil)
}

func (s *Scanner) scan(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	if len(text) > s.limits.MaxBytes {
		return dst, &LimitError{Limit: "bytes", Max: s.limits.MaxBytes}
	}
	return s.scanAny(ctx, text, dst)
}

// scanAny is scan without the byte limit, for texts the caller bounded.
func (s *Scanner) scanAny(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	base := len(dst)
	var err error
	if dst, err = s.scanFusedSafe(text, dst); err != nil {
		return dst[:base], err
	}
	for k, r := range s.others {
		if err := ctx.Err(); err != nil {
			return dst[:base], err
		}
		var err error
		n := len(dst)
		dst, err = s.recognize(ctx, k, r, text, dst)
		if err != nil {
			return dst[:base], err
		}
		// Check the findings of custom recognizers: an invalid score or
		// span fails the scan, empty findings are dropped.
		out := dst[:n]
		for _, f := range dst[n:] {
			if !validScore(f.Score) {
				return dst[:base], s.recognizerError(k, r, "score", nil)
			}
			if f.Start < 0 || f.End > len(text) || f.Start > f.End {
				return dst[:base], s.recognizerError(k, r, "span", nil)
			}
			if f.Start < f.End {
				out = append(out, f)
			}
		}
		dst = out
	}
	merged := merge(dst[base:], s.minScore)
	dst = dst[:base+len(merged)]
	if len(merged) > s.limits.MaxFindings {
		return dst[:base], &LimitError{Limit: "findings", Max: s.limits.MaxFindings}
	}
	return dst, nil
}

// recognize runs the k-th custom recognizer. A panic becomes an error that
// holds nothing of the panic value (it may quote the text), and so does an
// error, except a context error and an [*AnalyzerError], which hold no text.
func (s *Scanner) recognize(ctx context.Context, k int, r Recognizer, text string, dst []Finding) (out []Finding, err error) {
	n := len(dst)
	defer func() {
		if p := recover(); p != nil {
			out, err = dst[:n], s.recognizerError(k, r, "panic", nil)
		}
	}()
	out, err = r.Recognize(ctx, text, dst)
	if err == nil {
		return out, nil
	}
	var ae *AnalyzerError
	switch {
	case errors.As(err, &ae):
		return out, ae
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return out, ctx.Err()
	}
	return out, s.recognizerError(k, r, "error", err)
}

func (s *Scanner) recognizerError(k int, r Recognizer, reason string, err error) *RecognizerError {
	return &RecognizerError{Index: s.index[k], Recognizer: fmt.Sprintf("%T", r), Reason: reason, Err: err}
}

// scanFusedSafe is scanFused with a panic turned into an error.
func (s *Scanner) scanFusedSafe(text string, dst []Finding) (out []Finding, err error) {
	n := len(dst)
	defer func() {
		if p := recover(); p != nil {
			out, err = dst[:n], &RecognizerError{Index: -1, Recognizer: "built-in", Reason: "panic"}
		}
	}()
	return s.scanFused(text, dst), nil
}

// scanFused runs the built-in finders in one pass.
func (s *Scanner) scanFused(text string, dst []Finding) []Finding {
	if len(s.fused) == 0 {
		return dst
	}
	var next [16]int
	tab := &s.table
	skip := &s.skip
	for i := 0; i < len(text); {
		// Most bytes trigger nothing: pass over them eight at a time.
		i = skip.skip(text, i)
		for end := min(i+8, len(text)); i < end; i++ {
			m := tab[text[i]]
			for m != 0 {
				k := bits.TrailingZeros16(m)
				m &= m - 1
				if i >= next[k] {
					dst, next[k] = s.fused[k].find(text, i, dst)
				}
			}
		}
	}
	return dst
}

// better reports whether a should label a merged span rather than b.
func better(a, b Finding) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return specificity(a.Type) > specificity(b.Type)
}

// merge drops findings under min, sorts the rest and merges overlapping
// ones in place; it returns the merged prefix of fs.
func merge(fs []Finding, min float64) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if f.Score >= min {
			out = append(out, f)
		}
	}
	fs = out
	if len(fs) < 2 {
		return fs
	}
	slices.SortFunc(fs, func(a, b Finding) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(b.End, a.End)
	})
	out = fs[:1]
	for _, f := range fs[1:] {
		cur := &out[len(out)-1]
		if f.Start < cur.End {
			end := max(cur.End, f.End)
			if better(f, *cur) {
				cur.Type, cur.Score = f.Type, f.Score
			}
			cur.End = end
			continue
		}
		out = append(out, f)
	}
	return out
}

// readsCase reports whether the scanner holds the embedded recognizer,
// whose reading of a text depends on whether it has capital letters.
func (s *Scanner) readsCase() bool {
	for _, r := range s.others {
		if _, ok := r.(*entities); ok {
			return true
		}
	}
	return false
}

// holdback returns how much of the end of text a recognizer needs to see
// continued before it can decide (a dictionary term cut short).
func (s *Scanner) holdback(text string) int {
	n := 0
	for _, r := range s.others {
		if h, ok := r.(interface{ holdback(string) int }); ok {
			n = max(n, h.holdback(text))
		}
	}
	return n
}
