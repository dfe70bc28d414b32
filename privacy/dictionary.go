package privacy

import (
	"context"
	"fmt"
	"slices"
)

// DictionaryOptions configure a [Dictionary]. The zero value (or nil) means
// exact case, whole words only, score 0.9.
type DictionaryOptions struct {
	// IgnoreCase matches ASCII letters regardless of case; false means
	// exact case. Letters outside ASCII always match exactly.
	IgnoreCase bool
	// AnyPosition also matches inside words ("Ann" in "Annual"); false
	// means a match must not be preceded or followed by a letter, a digit
	// or '_' (where the term itself starts or ends with one).
	AnyPosition bool
	// Score is the findings' score; 0 means 0.9.
	Score float64
}

// Dictionary is a recognizer for known values (customer names, account
// ids): it finds every occurrence of any of its terms in one pass over the
// text, with an Aho–Corasick automaton, in time linear in the text and the
// number of matches. It is immutable and safe for concurrent use.
type Dictionary struct {
	typ    EntityType
	opts   DictionaryOptions
	root   [256]int32 // transitions of the root
	nodes  []acNode
	edges  []acEdge
	terms  []int32 // term lengths, by term index
	outs   []int32 // output term indices, by node: outs[node.outStart:node.outEnd]
	maxLen int
}

type acNode struct {
	edgeStart, edgeEnd int32 // edges of the node, sorted by byte
	fail               int32
	depth              int32
	outStart, outEnd   int32
}

type acEdge struct {
	b  byte
	to int32
}

// NewDictionary returns a recognizer that reports the terms as findings of
// type t ("" means [Generic]). Empty terms are ignored; opts may be nil. It
// panics when the score is not a number in [0, 1].
func NewDictionary(t EntityType, terms []string, opts *DictionaryOptions) *Dictionary {
	d := &Dictionary{typ: t}
	if opts != nil {
		d.opts = *opts
	}
	if !validScore(d.opts.Score) {
		panic(fmt.Sprintf("privacy: DictionaryOptions.Score %v is not a number in [0, 1]", d.opts.Score))
	}
	if d.typ == "" {
		d.typ = Generic
	}
	if d.opts.Score == 0 {
		d.opts.Score = 0.9
	}
	// Build a trie with map edges, then flatten it.
	type bnode struct {
		next  map[byte]int32
		out   []int32
		depth int32
	}
	trie := []bnode{{next: map[byte]int32{}}}
	for _, term := range terms {
		if term == "" {
			continue
		}
		n := int32(0)
		for i := 0; i < len(term); i++ {
			c := d.fold(term[i])
			nx, ok := trie[n].next[c]
			if !ok {
				nx = int32(len(trie))
				trie = append(trie, bnode{next: map[byte]int32{}, depth: trie[n].depth + 1})
				trie[n].next[c] = nx
			}
			n = nx
		}
		trie[n].out = append(trie[n].out, int32(len(d.terms)))
		d.terms = append(d.terms, int32(len(term)))
		d.maxLen = max(d.maxLen, len(term))
	}
	d.nodes = make([]acNode, len(trie))
	for i, bn := range trie {
		keys := make([]byte, 0, len(bn.next))
		for k := range bn.next {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		d.nodes[i].edgeStart = int32(len(d.edges))
		for _, k := range keys {
			d.edges = append(d.edges, acEdge{b: k, to: bn.next[k]})
		}
		d.nodes[i].edgeEnd = int32(len(d.edges))
		d.nodes[i].depth = bn.depth
	}
	for c := range d.root {
		d.root[c] = d.child(0, byte(c))
		if d.root[c] < 0 {
			d.root[c] = 0
		}
	}
	// Breadth-first: failure links and output lists (own terms, then the
	// outputs of the failure node).
	outs := make([][]int32, len(trie))
	queue := []int32{0}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		outs[n] = append(slices.Clone(trie[n].out), outs[d.nodes[n].fail]...)
		if n == 0 {
			outs[0] = nil
		}
		for _, e := range d.edges[d.nodes[n].edgeStart:d.nodes[n].edgeEnd] {
			if n == 0 {
				d.nodes[e.to].fail = 0
			} else {
				d.nodes[e.to].fail = d.step(d.nodes[n].fail, e.b)
			}
			queue = append(queue, e.to)
		}
	}
	for i := range d.nodes {
		d.nodes[i].outStart = int32(len(d.outs))
		d.outs = append(d.outs, outs[i]...)
		d.nodes[i].outEnd = int32(len(d.outs))
	}
	return d
}

func (d *Dictionary) fold(c byte) byte {
	if d.opts.IgnoreCase {
		return lower(c)
	}
	return c
}

// child returns the child of n on c, or -1.
func (d *Dictionary) child(n int32, c byte) int32 {
	es := d.edges[d.nodes[n].edgeStart:d.nodes[n].edgeEnd]
	lo, hi := 0, len(es)
	for lo < hi {
		m := (lo + hi) / 2
		if es[m].b < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(es) && es[lo].b == c {
		return es[lo].to
	}
	return -1
}

// step returns the automaton's next state from n on c (c already folded).
func (d *Dictionary) step(n int32, c byte) int32 {
	for n != 0 {
		if nx := d.child(n, c); nx >= 0 {
			return nx
		}
		n = d.nodes[n].fail
	}
	return d.root[c]
}

// Recognize implements [Recognizer].
func (d *Dictionary) Recognize(_ context.Context, text string, dst []Finding) ([]Finding, error) {
	if len(d.terms) == 0 {
		return dst, nil
	}
	n := int32(0)
	for i := 0; i < len(text); i++ {
		n = d.step(n, d.fold(text[i]))
		node := &d.nodes[n]
		for _, t := range d.outs[node.outStart:node.outEnd] {
			e := i + 1
			s := e - int(d.terms[t])
			if !d.opts.AnyPosition && (wordChar(text[s]) && s > 0 && wordChar(text[s-1]) ||
				wordChar(text[e-1]) && e < len(text) && wordChar(text[e])) {
				continue
			}
			dst = append(dst, Finding{Start: s, End: e, Type: d.typ, Score: d.opts.Score})
		}
	}
	return dst, nil
}

// holdback returns the length of the longest suffix of text that is the
// start of a term, for a [Stream] to hold back.
func (d *Dictionary) holdback(text string) int {
	if len(d.terms) == 0 {
		return 0
	}
	n := int32(0)
	for i := max(0, len(text)-d.maxLen); i < len(text); i++ {
		n = d.step(n, d.fold(text[i]))
	}
	return int(d.nodes[n].depth)
}
