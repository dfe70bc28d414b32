// Command evalcorpus converts named-entity data in the CoNLL-style IOB2
// files of Universal NER (one token a line, the sentence's text on a
// "# text = " line before it) into the evaluation format of toolgate eval
// pii: a JSON array of {"full_text", "spans": [{"entity_type",
// "start_position", "end_position"}]} with offsets in code points.
//
// docs/PRIVACY.md (Evaluation) says which corpora it was used on and how:
//
//	go run ./privacy/internal/evalcorpus < en_ewt-ud-test.iob2 > ewt-test.json
//	toolgate eval pii --data ewt-test.json --labels PER=PERSON,LOC=LOCATION,ORG=ORGANIZATION
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

func main() {
	if err := convert(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "evalcorpus:", err)
		os.Exit(1)
	}
}

type span struct {
	Type  string `json:"entity_type"`
	Start int    `json:"start_position"`
	End   int    `json:"end_position"`
}

type record struct {
	Text  string `json:"full_text"`
	Spans []span `json:"spans"`
}

type token struct{ form, tag string }

// convert reads IOB2 sentences from r and writes their records to w.
func convert(r io.Reader, w io.Writer) error {
	recs := []record{}
	var text string
	var haveText bool
	var toks []token
	flush := func(line int) error {
		if !haveText {
			if len(toks) > 0 {
				return fmt.Errorf("line %d: a sentence without a \"# text = \" line", line)
			}
			return nil
		}
		rec, err := sentence(text, toks)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		recs = append(recs, rec)
		text, haveText, toks = "", false, toks[:0]
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if !utf8.ValidString(line) {
			return fmt.Errorf("line %d: not UTF-8", n)
		}
		switch {
		case strings.HasPrefix(line, "# text = "):
			text, haveText = strings.TrimPrefix(line, "# text = "), true
		case strings.HasPrefix(line, "#"):
		case strings.TrimSpace(line) == "":
			if err := flush(n); err != nil {
				return err
			}
		default:
			f := strings.Split(line, "\t")
			if len(f) < 3 {
				return fmt.Errorf("line %d: %d columns, want at least 3", n, len(f))
			}
			if strings.ContainsAny(f[0], "-.") {
				continue // a multi-word token or an empty node
			}
			toks = append(toks, token{f[1], f[2]})
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(n); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(recs)
}

// sentence finds each token in text, in order, and joins B- and I- tags
// of one type into spans.
func sentence(text string, toks []token) (record, error) {
	rec := record{Text: text, Spans: []span{}}
	pos := 0
	open := -1 // index in rec.Spans of the span the last token continues
	for _, t := range toks {
		i := strings.Index(text[pos:], t.form)
		if t.form == "" || i < 0 {
			return rec, fmt.Errorf("token %q not found in the sentence's text", t.form)
		}
		s := utf8.RuneCountInString(text[:pos+i])
		pos += i + len(t.form)
		e := s + utf8.RuneCountInString(t.form)
		typ, inside := strings.CutPrefix(t.tag, "I-")
		if !inside {
			var begin bool
			typ, begin = strings.CutPrefix(t.tag, "B-")
			if !begin {
				open = -1
				continue
			}
		}
		if typ == "" {
			return rec, fmt.Errorf("tag %q without a type", t.tag)
		}
		if inside && open >= 0 && rec.Spans[open].Type == typ {
			rec.Spans[open].End = e
			continue
		}
		rec.Spans = append(rec.Spans, span{typ, s, e})
		open = len(rec.Spans) - 1
	}
	return rec, nil
}
