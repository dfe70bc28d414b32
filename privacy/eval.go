package privacy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrEvalData is returned (wrapped) by [Evaluate] for data it cannot read
// as labelled records: malformed JSON, a value that is not a list of
// records, a record without its text, a span without a type or with
// offsets outside its text, or no record at all.
var ErrEvalData = errors.New("privacy: not labelled evaluation data")

// EvalOptions configure [Evaluate]. The zero value (or nil) scores the
// labels of the file as they are.
type EvalOptions struct {
	// Labels maps labels of the data to the types the scanner reports
	// (for example "GPE" to [Location] for data labelled in spaCy's
	// scheme). A label mapped to "" is ignored. Labels not in the map are
	// used as they are. nil means no mapping.
	Labels map[string]EntityType
}

// TypeScore is the detection quality for one type. Precision is NaN when
// nothing of the type was predicted, Recall and F2 are NaN when the data
// holds no value of the type (no support).
type TypeScore struct {
	Type                  EntityType
	TP, FP, FN            int
	Precision, Recall, F2 float64
}

// Support is the number of labelled values of the type.
func (t *TypeScore) Support() int { return t.TP + t.FN }

func (t *TypeScore) finish() {
	t.Precision, t.Recall, t.F2 = math.NaN(), math.NaN(), math.NaN()
	if t.TP+t.FP > 0 {
		t.Precision = float64(t.TP) / float64(t.TP+t.FP)
	}
	if t.TP+t.FN == 0 {
		return
	}
	t.Recall = float64(t.TP) / float64(t.TP+t.FN)
	switch p, r := t.Precision, t.Recall; {
	case t.TP == 0:
		t.F2 = 0
	default:
		t.F2 = 5 * p * r / (4*p + r)
	}
}

// Report is the result of [Evaluate].
type Report struct {
	// Types holds one score per type labelled in the data, most
	// frequent first; a labelled type the scanner never reports scores
	// its values as misses.
	Types []TypeScore
	// Unlabelled holds the predictions of types that the data never
	// labels: all false positives, also counted in Overall and Agnostic.
	Unlabelled []TypeScore
	// Overall sums the counts of Types and Unlabelled (micro average): a
	// prediction counts only with the right type.
	Overall TypeScore
	// Agnostic scores the spans regardless of type: a prediction of any
	// type matches a labelled value it overlaps enough.
	Agnostic TypeScore
	// Tokens scores the same predictions token by token, the way
	// presidio-research's evaluation does; it does not replace the span
	// scores above.
	Tokens TokenReport
	// Records is the number of texts, Bytes their total size.
	Records int
	Bytes   int
	// ScanTime is the time spent in [Scanner.Scan].
	ScanTime time.Duration
}

// TokenReport scores the predictions of a [Report] token by token. The
// text is cut into tokens: each run of letters, marks and digits is one,
// each other character that is not a space is one. A token takes the type
// of the labelled span it overlaps (none when it overlaps none), and the
// type of the prediction it overlaps. For a type T, a token labelled T
// and predicted T is a true positive, one predicted T and labelled
// otherwise a false positive, one labelled T and predicted otherwise a
// false negative. TP, FP and FN of a [TypeScore] count tokens here.
type TokenReport struct {
	// Types holds one score per type labelled in the data, most
	// frequent first; Unlabelled the predicted types the data never
	// labels.
	Types, Unlabelled []TypeScore
	// Overall sums the counts of Types and Unlabelled (micro average).
	Overall TypeScore
	// Agnostic ignores the types: a token labelled with any type and
	// predicted with any type is a true positive.
	Agnostic TypeScore
	// Count is the number of tokens in the data.
	Count int
}

// Score returns the span score of type t (labelled or not), or nil.
func (r *Report) Score(t EntityType) *TypeScore { return findScore(t, r.Types, r.Unlabelled) }

// Score returns the token score of type t (labelled or not), or nil.
func (r *TokenReport) Score(t EntityType) *TypeScore { return findScore(t, r.Types, r.Unlabelled) }

func findScore(t EntityType, lists ...[]TypeScore) *TypeScore {
	for _, list := range lists {
		for i := range list {
			if list[i].Type == t {
				return &list[i]
			}
		}
	}
	return nil
}

// MBPerSecond is the scan throughput in megabytes (10^6 bytes) per second.
func (r *Report) MBPerSecond() float64 {
	if r.ScanTime <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.ScanTime.Seconds()
}

type evalSpan struct {
	EntityType *string `json:"entity_type"`
	Start      *int    `json:"start_position"`
	End        *int    `json:"end_position"`
}

type evalRecord struct {
	FullText *string    `json:"full_text"`
	Spans    []evalSpan `json:"spans"`
}

type cpSpan struct {
	start, end int
	typ        EntityType
	matched    bool
}

// evalAlias maps predicted types to the label that presidio-research's
// data uses for them when the data has no label of their own: it labels
// whole URLs as DOMAIN_NAME.
var evalAlias = map[EntityType]EntityType{URL: DomainName}

// Evaluate scores s on labelled data: a JSON array of records
// {"full_text": ..., "spans": [{"entity_type", "start_position",
// "end_position"}]} with offsets in Unicode code points (the format of
// Presidio's evaluation data). opts may be nil.
//
// A prediction matches a labelled span when their intersection covers at
// least 90% of each (measured in code points); each labelled span and each
// prediction matches at most once. [Report.Tokens] scores the same
// predictions token by token as well (see [TokenReport]). Every type labelled in the data is
// scored: a type the scanner never predicts scores its values as misses.
// Predictions of types the data never labels are false positives, listed
// in [Report.Unlabelled]. A predicted URL counts as DOMAIN_NAME when the
// data labels no URL. F2 weighs recall twice as much as precision.
//
// Data that is not a list of such records is an error wrapping
// [ErrEvalData]; so is a list without records.
func Evaluate(r io.Reader, s *Scanner, opts *EvalOptions) (*Report, error) {
	var o EvalOptions
	if opts != nil {
		o = *opts
	}
	var recs []evalRecord
	dec := json.NewDecoder(r)
	if err := dec.Decode(&recs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEvalData, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrEvalData)
	}
	labelled := map[EntityType]bool{}
	for i, rec := range recs {
		if rec.FullText == nil {
			return nil, fmt.Errorf("%w: record %d has no full_text", ErrEvalData, i)
		}
		n := utf8.RuneCountInString(*rec.FullText)
		for j, sp := range rec.Spans {
			if sp.EntityType == nil || *sp.EntityType == "" || sp.Start == nil || sp.End == nil {
				return nil, fmt.Errorf("%w: record %d, span %d lacks entity_type, start_position or end_position", ErrEvalData, i, j)
			}
			if *sp.Start < 0 || *sp.Start >= *sp.End || *sp.End > n {
				return nil, fmt.Errorf("%w: record %d, span %d: offsets %d..%d outside a text of %d code points", ErrEvalData, i, j, *sp.Start, *sp.End, n)
			}
			if t := o.label(*sp.EntityType); t != "" {
				labelled[t] = true
			}
		}
	}
	rep := &Report{Records: len(recs)}
	scores := map[EntityType]*TypeScore{}
	score := func(t EntityType) *TypeScore {
		if scores[t] == nil {
			scores[t] = &TypeScore{Type: t}
		}
		return scores[t]
	}
	for t := range labelled {
		score(t)
	}
	rep.Agnostic.Type = "ANY"
	tokScores := map[EntityType]*TypeScore{}
	for t := range labelled {
		tokScores[t] = &TypeScore{Type: t}
	}
	ctx := context.Background()
	var byteAt []int
	var tags tokenTags
	for _, rec := range recs {
		text := *rec.FullText
		rep.Bytes += len(text)
		t0 := time.Now()
		fs, err := s.Scan(ctx, text)
		rep.ScanTime += time.Since(t0)
		if err != nil {
			return nil, err
		}
		byteAt = codePoints(text, byteAt)
		var gold, pred []cpSpan
		for _, g := range rec.Spans {
			if t := o.label(*g.EntityType); t != "" {
				gold = append(gold, cpSpan{start: *g.Start, end: *g.End, typ: t})
			}
		}
		for _, f := range fs {
			t := f.Type
			if a, ok := evalAlias[t]; ok && !labelled[t] {
				t = a
			}
			pred = append(pred, cpSpan{start: byteAt[f.Start], end: byteAt[f.End], typ: t})
		}
		match(gold, pred, true)
		for _, g := range gold {
			if g.matched {
				score(g.typ).TP++
			} else {
				score(g.typ).FN++
			}
		}
		for _, p := range pred {
			if !p.matched {
				score(p.typ).FP++
			}
		}
		tp, fp, fn := match(gold, pred, false)
		rep.Agnostic.TP += tp
		rep.Agnostic.FP += fp
		rep.Agnostic.FN += fn
		rep.Tokens.Count += tags.score(text, gold, pred, tokScores, &rep.Tokens.Agnostic)
	}
	rep.Overall.Type = "ALL"
	for _, sc := range scores {
		sc.finish()
		if labelled[sc.Type] {
			rep.Types = append(rep.Types, *sc)
		} else {
			rep.Unlabelled = append(rep.Unlabelled, *sc)
		}
		rep.Overall.TP += sc.TP
		rep.Overall.FP += sc.FP
		rep.Overall.FN += sc.FN
	}
	bySupport := func(a, b TypeScore) int {
		if c := cmp.Compare(b.Support(), a.Support()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.FP, a.FP); c != 0 {
			return c
		}
		return cmp.Compare(a.Type, b.Type)
	}
	slices.SortFunc(rep.Types, bySupport)
	slices.SortFunc(rep.Unlabelled, bySupport)
	rep.Overall.finish()
	rep.Agnostic.finish()
	tr := &rep.Tokens
	tr.Overall.Type, tr.Agnostic.Type = "ALL", "ANY"
	for _, sc := range tokScores {
		sc.finish()
		if labelled[sc.Type] {
			tr.Types = append(tr.Types, *sc)
		} else {
			tr.Unlabelled = append(tr.Unlabelled, *sc)
		}
		tr.Overall.TP += sc.TP
		tr.Overall.FP += sc.FP
		tr.Overall.FN += sc.FN
	}
	slices.SortFunc(tr.Types, bySupport)
	slices.SortFunc(tr.Unlabelled, bySupport)
	tr.Overall.finish()
	tr.Agnostic.finish()
	return rep, nil
}

// tokenTags holds, per code point of one text, the labelled and the
// predicted type ("" for none); its buffers are reused between texts.
type tokenTags struct{ gold, pred []EntityType }

// score cuts text into tokens (see [TokenReport]), adds each token's
// outcome to the per-type token scores (creating those of predicted types)
// and to agnostic, and returns the number of tokens.
func (tt *tokenTags) score(text string, gold, pred []cpSpan, scores map[EntityType]*TypeScore, agnostic *TypeScore) int {
	n := utf8.RuneCountInString(text)
	fill := func(buf []EntityType, spans []cpSpan) []EntityType {
		buf = slices.Grow(buf[:0], n)[:n]
		clear(buf)
		for _, sp := range spans {
			for i := max(sp.start, 0); i < min(sp.end, n); i++ {
				if buf[i] == "" {
					buf[i] = sp.typ
				}
			}
		}
		return buf
	}
	tt.gold, tt.pred = fill(tt.gold, gold), fill(tt.pred, pred)
	first := func(buf []EntityType, from, to int) EntityType {
		for i := from; i < to; i++ {
			if buf[i] != "" {
				return buf[i]
			}
		}
		return ""
	}
	count, start, cp := 0, -1, 0
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }
	token := func(from, to int) {
		count++
		g, p := first(tt.gold, from, to), first(tt.pred, from, to)
		switch {
		case g != "" && p != "":
			agnostic.TP++
		case p != "":
			agnostic.FP++
		case g != "":
			agnostic.FN++
		}
		if g != "" && g == p {
			scores[g].TP++
			return
		}
		if g != "" {
			scores[g].FN++
		}
		if p != "" {
			if scores[p] == nil {
				scores[p] = &TypeScore{Type: p}
			}
			scores[p].FP++
		}
	}
	for _, r := range text {
		switch {
		case word(r):
			if start < 0 {
				start = cp
			}
		default:
			if start >= 0 {
				token(start, cp)
				start = -1
			}
			if !unicode.IsSpace(r) {
				token(cp, cp+1)
			}
		}
		cp++
	}
	if start >= 0 {
		token(start, cp)
	}
	return count
}

func (o *EvalOptions) label(l string) EntityType {
	if t, ok := o.Labels[l]; ok {
		return t
	}
	return EntityType(l)
}

// codePoints returns, for every byte offset of text (and its end), the
// index of the code point it falls in.
func codePoints(text string, byteAt []int) []int {
	byteAt = byteAt[:0]
	cp := 0
	for i := range text {
		for len(byteAt) < i {
			byteAt = append(byteAt, cp-1)
		}
		byteAt = append(byteAt, cp)
		cp++
	}
	for len(byteAt) <= len(text) {
		byteAt = append(byteAt, cp)
	}
	return byteAt
}

// match pairs gold and predicted spans one to one (same type when typed)
// and marks them; it returns the counts of matched pairs, unmatched
// predictions and unmatched gold spans. The marks are reset first.
func match(gold, pred []cpSpan, typed bool) (tp, fp, fn int) {
	for i := range gold {
		gold[i].matched = false
	}
	for i := range pred {
		pred[i].matched = false
	}
	for gi := range gold {
		g := &gold[gi]
		for pi := range pred {
			p := &pred[pi]
			if p.matched || typed && p.typ != g.typ {
				continue
			}
			inter := min(g.end, p.end) - max(g.start, p.start)
			if inter > 0 && float64(inter) >= 0.9*float64(g.end-g.start) && float64(inter) >= 0.9*float64(p.end-p.start) {
				p.matched, g.matched = true, true
				tp++
				break
			}
		}
		if !g.matched {
			fn++
		}
	}
	for _, p := range pred {
		if !p.matched {
			fp++
		}
	}
	return tp, fp, fn
}

// ParseLabels parses a label map written as "GPE=LOCATION,PER=PERSON"
// (the form of the --labels flag of toolgate eval pii). An empty target
// ("MISC=") makes [Evaluate] ignore that label. A label mapped twice is
// an error, even to the same type: a map with a typo'd duplicate would
// otherwise score one of the two silently.
func ParseLabels(s string) (map[string]EntityType, error) {
	m := map[string]EntityType{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("privacy: label map entry %q is not LABEL=TYPE", kv)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("privacy: label %q is mapped twice in the label map", k)
		}
		m[k] = EntityType(v)
	}
	return m, nil
}

func fmtScore(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", f)
}

// WriteText writes the report as two tables, the span scores and then the
// token scores ([Report.Tokens]), each with the labelled types, the
// overall (typed) and type-agnostic scores, then the predictions of types
// the data does not label.
func (r *Report) WriteText(w io.Writer) error {
	if err := writeTable(w, r.Types, r.Unlabelled, r.Overall, r.Agnostic); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%d texts, %d bytes, scan %.1f MB/s\n\ntoken level (counts are tokens; each token's type, as presidio-research scores):\n", r.Records, r.Bytes, r.MBPerSecond()); err != nil {
		return err
	}
	t := &r.Tokens
	if err := writeTable(w, t.Types, t.Unlabelled, t.Overall, t.Agnostic); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d tokens\n", t.Count)
	return err
}

func writeTable(w io.Writer, types, unlabelled []TypeScore, overall, agnostic TypeScore) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "type\tsupport\tTP\tFP\tFN\tprecision\trecall\tF2\t\n")
	row := func(t TypeScore) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", t.Type, t.Support(), t.TP, t.FP, t.FN, fmtScore(t.Precision), fmtScore(t.Recall), fmtScore(t.F2))
	}
	for _, t := range types {
		row(t)
	}
	row(overall)
	row(agnostic)
	if len(unlabelled) > 0 {
		fmt.Fprintf(tw, "predicted, not labelled in the data:\t\t\t\t\t\t\t\t\n")
		for _, t := range unlabelled {
			row(t)
		}
	}
	return tw.Flush()
}
