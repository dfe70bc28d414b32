package privacy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// EvalTypes are the types [Evaluate] scores: those the built-in recognizers
// cover in the labelled dev-set format.
var EvalTypes = []EntityType{CreditCard, PhoneNumber, EmailAddress, USSSN, IBANCode, IPAddress, DomainName}

// evalAlias maps predicted types to the label the dev set uses for them:
// the dev set labels whole URLs as DOMAIN_NAME.
var evalAlias = map[EntityType]EntityType{URL: DomainName}

// TypeScore is the detection quality for one type.
type TypeScore struct {
	Type                  EntityType
	TP, FP, FN            int
	Precision, Recall, F2 float64
}

func (t *TypeScore) finish() {
	if t.TP+t.FP > 0 {
		t.Precision = float64(t.TP) / float64(t.TP+t.FP)
	}
	if t.TP+t.FN > 0 {
		t.Recall = float64(t.TP) / float64(t.TP+t.FN)
	}
	if p, r := t.Precision, t.Recall; p+r > 0 {
		t.F2 = 5 * p * r / (4*p + r)
	}
}

// Report is the result of [Evaluate].
type Report struct {
	// Types holds one score per type of [EvalTypes], in that order.
	Types []TypeScore
	// Overall sums the counts of Types (micro average).
	Overall TypeScore
	// Records is the number of texts, Bytes their total size.
	Records int
	Bytes   int
	// ScanTime is the time spent in [Scanner.Scan].
	ScanTime time.Duration
}

// Score returns the score of type t, or nil.
func (r *Report) Score(t EntityType) *TypeScore {
	for i := range r.Types {
		if r.Types[i].Type == t {
			return &r.Types[i]
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

type evalRecord struct {
	FullText string `json:"full_text"`
	Spans    []struct {
		EntityType string `json:"entity_type"`
		Start      int    `json:"start_position"`
		End        int    `json:"end_position"`
	} `json:"spans"`
}

type cpSpan struct {
	start, end int
	typ        EntityType
	matched    bool
}

// Evaluate scores s on labelled data: a JSON array of records
// {"full_text": ..., "spans": [{"entity_type", "start_position",
// "end_position"}]} with offsets in Unicode code points (the format of
// Presidio's evaluation data).
//
// A prediction matches a gold span of the same type when their
// intersection covers at least 90% of the gold span and at least 90% of
// the prediction (both measured in code points); each gold span and each
// prediction matches at most once. Unmatched predictions are false
// positives, unmatched gold spans false negatives. Only [EvalTypes] are
// scored; predicted URLs count as DOMAIN_NAME, the dev set's label for
// them. F2 weighs recall twice as much as precision.
func Evaluate(r io.Reader, s *Scanner) (*Report, error) {
	var recs []evalRecord
	dec := json.NewDecoder(r)
	if err := dec.Decode(&recs); err != nil {
		return nil, fmt.Errorf("privacy: reading evaluation data: %w", err)
	}
	rep := &Report{Records: len(recs)}
	scores := map[EntityType]*TypeScore{}
	for _, t := range EvalTypes {
		scores[t] = &TypeScore{Type: t}
	}
	ctx := context.Background()
	var byteAt []int
	for _, rec := range recs {
		text := rec.FullText
		rep.Bytes += len(text)
		t0 := time.Now()
		fs, err := s.Scan(ctx, text)
		rep.ScanTime += time.Since(t0)
		if err != nil {
			return nil, err
		}
		// Code point index of every byte offset.
		byteAt = byteAt[:0]
		cp := 0
		for i := range text {
			for len(byteAt) < i {
				byteAt = append(byteAt, cp)
			}
			byteAt = append(byteAt, cp)
			cp++
		}
		for len(byteAt) <= len(text) {
			byteAt = append(byteAt, cp)
		}
		var gold, pred []cpSpan
		for _, g := range rec.Spans {
			t := EntityType(g.EntityType)
			if scores[t] != nil {
				gold = append(gold, cpSpan{start: g.Start, end: g.End, typ: t})
			}
		}
		for _, f := range fs {
			t := f.Type
			if a, ok := evalAlias[t]; ok {
				t = a
			}
			if scores[t] != nil {
				pred = append(pred, cpSpan{start: byteAt[f.Start], end: byteAt[f.End], typ: t})
			}
		}
		for gi := range gold {
			g := &gold[gi]
			for pi := range pred {
				p := &pred[pi]
				if p.matched || p.typ != g.typ {
					continue
				}
				inter := min(g.end, p.end) - max(g.start, p.start)
				if inter > 0 && float64(inter) >= 0.9*float64(g.end-g.start) && float64(inter) >= 0.9*float64(p.end-p.start) {
					p.matched, g.matched = true, true
					break
				}
			}
			if g.matched {
				scores[g.typ].TP++
			} else {
				scores[g.typ].FN++
			}
		}
		for _, p := range pred {
			if !p.matched {
				scores[p.typ].FP++
			}
		}
	}
	rep.Overall.Type = "ALL"
	for _, t := range EvalTypes {
		sc := scores[t]
		sc.finish()
		rep.Types = append(rep.Types, *sc)
		rep.Overall.TP += sc.TP
		rep.Overall.FP += sc.FP
		rep.Overall.FN += sc.FN
	}
	rep.Overall.finish()
	return rep, nil
}

// WriteText writes the report as a table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "type\tTP\tFP\tFN\tprecision\trecall\tF2\t\n")
	for _, t := range append(slices.Clone(r.Types), r.Overall) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t\n", t.Type, t.TP, t.FP, t.FN, t.Precision, t.Recall, t.F2)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d texts, %d bytes, scan %.1f MB/s\n", r.Records, r.Bytes, r.MBPerSecond())
	return err
}
