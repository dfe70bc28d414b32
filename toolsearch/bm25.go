package toolsearch

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Field weights of [BM25Index]: a word of the tool's name counts three
// times a word of its description; a property name of its input schema,
// and its category, in between.
const (
	weightName        = 2
	weightDescription = 1
	weightProperty    = 1.5
	weightCategory    = 1
	// weightSynonym scales the score of a word the query did not use but
	// means (see synonyms).
	weightSynonym = 0.6
	bm25K1        = 1.2
	bm25B         = 0.75
	// maxQueryTerms caps the distinct terms of a query that are scored.
	maxQueryTerms = 64
	// maxSchemaDepth caps how deep property names are collected.
	maxSchemaDepth = 4
)

// BM25Index is the embedded [Index]: Okapi BM25 over each tool's name
// (split at camelCase and snake_case boundaries), description, input
// schema property names and category, in memory, with no external service.
// A conversation's index is built by [BM25Index.Index] and replaced whole.
//
// A BM25Index is safe for concurrent use; its zero value is not usable:
// call [NewBM25Index]. It keeps every conversation it is given until
// [BM25Index.Clear]; a [Searcher] bounds them.
type BM25Index struct {
	mu    sync.RWMutex
	convs map[string]*corpus // guarded by mu
}

// NewBM25Index returns an empty index.
func NewBM25Index() *BM25Index {
	return &BM25Index{convs: make(map[string]*corpus)}
}

// corpus is the immutable index of one conversation's tools.
type corpus struct {
	names []string
	cats  []string // lower-cased
	norm  []float32
	terms map[string]*term
}

type term struct {
	idf  float32
	post []posting
}

type posting struct {
	doc int32
	tf  float32 // weighted term frequency
}

// Index implements [Index].
func (x *BM25Index) Index(ctx context.Context, conversationID string, entries []Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := buildCorpus(entries)
	x.mu.Lock()
	x.convs[conversationID] = c
	x.mu.Unlock()
	return nil
}

// Clear implements [Index].
func (x *BM25Index) Clear(_ context.Context, conversationID string) error {
	x.mu.Lock()
	delete(x.convs, conversationID)
	x.mu.Unlock()
	return nil
}

// Len reports how many conversations the index holds.
func (x *BM25Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.convs)
}

// Search implements [Index]. Ties are broken by name, so that equal
// queries give equal results.
func (x *BM25Index) Search(ctx context.Context, conversationID string, q *Query) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x.mu.RLock()
	c := x.convs[conversationID]
	x.mu.RUnlock()
	if c == nil || q == nil || q.Max <= 0 {
		return nil, nil
	}
	return c.search(q), nil
}

func buildCorpus(entries []Entry) *corpus {
	n := len(entries)
	c := &corpus{names: make([]string, n), cats: make([]string, n), norm: make([]float32, n), terms: make(map[string]*term)}
	lens := make([]float32, n)
	tf := make(map[string]float32)
	var total float64
	for i, e := range entries {
		c.names[i] = e.Definition.Name
		c.cats[i] = strings.ToLower(e.Category)
		clear(tf)
		var dl float32
		add := func(w float32) func(string) {
			return func(t string) { tf[t] += w; dl += w }
		}
		tokenize(e.Definition.Name, add(weightName))
		tokenize(e.Definition.Description, add(weightDescription))
		tokenize(e.Category, add(weightCategory))
		propertyNames(e.Definition.InputSchema, 0, add(weightProperty))
		lens[i] = dl
		total += float64(dl)
		for t, f := range tf {
			tm := c.terms[t]
			if tm == nil {
				tm = &term{}
				c.terms[t] = tm
			}
			tm.post = append(tm.post, posting{doc: int32(i), tf: f})
		}
	}
	avg := float32(1)
	if n > 0 && total > 0 {
		avg = float32(total / float64(n))
	}
	for i, l := range lens {
		c.norm[i] = bm25K1 * (1 - bm25B + bm25B*l/avg)
	}
	for _, tm := range c.terms {
		df := float64(len(tm.post))
		tm.idf = float32(math.Log(1 + (float64(n)-df+0.5)/(df+0.5)))
	}
	return c
}

// propertyNames emits the terms of the property names of s and of its
// nested object and array schemas.
func propertyNames(s *jsonschema.Schema, depth int, emit func(string)) {
	if s == nil || depth > maxSchemaDepth {
		return
	}
	for name, p := range s.Properties {
		tokenize(name, emit)
		propertyNames(p, depth+1, emit)
	}
	propertyNames(s.Items, depth+1, emit)
}

func (c *corpus) search(q *Query) []Hit {
	cat := strings.ToLower(q.Category)
	type qterm struct {
		t string
		w float32
	}
	var qterms []qterm
	has := func(t string) bool {
		return slices.ContainsFunc(qterms, func(q qterm) bool { return q.t == t })
	}
	tokenize(q.Text, func(t string) {
		if len(qterms) < maxQueryTerms && !has(t) {
			qterms = append(qterms, qterm{t, 1})
		}
	})
	if len(qterms) == 0 {
		return nil
	}
	for _, q := range qterms[:len(qterms):len(qterms)] {
		for _, syn := range synonyms[q.t] {
			if !has(syn) {
				qterms = append(qterms, qterm{syn, weightSynonym})
			}
		}
	}
	scores := make([]float32, len(c.names))
	var touched []int32
	for _, q := range qterms {
		tm := c.terms[q.t]
		if tm == nil {
			continue
		}
		for _, p := range tm.post {
			if cat != "" && c.cats[p.doc] != cat {
				continue
			}
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += q.w * tm.idf * p.tf * (bm25K1 + 1) / (p.tf + c.norm[p.doc])
		}
	}
	slices.SortFunc(touched, func(a, b int32) int {
		if s := cmp.Compare(scores[b], scores[a]); s != 0 {
			return s
		}
		return strings.Compare(c.names[a], c.names[b])
	})
	if len(touched) > q.Max {
		touched = touched[:q.Max]
	}
	hits := make([]Hit, len(touched))
	for i, d := range touched {
		hits[i] = Hit{Name: c.names[d], Score: float64(scores[d])}
	}
	return hits
}

// synonyms maps a term to the terms that often mean the same in what tools
// do; a query also scores them, at [weightSynonym]. Built from
// synonymGroups.
var synonyms = map[string][]string{}

// synonymGroups are words that tool descriptions and requests use for the
// same thing. Keep them generic: they apply to every index.
var synonymGroups = []string{
	"email mail inbox mailbox",
	"find search look lookup",
	"reply answer respond",
	"meeting event appointment",
	"create add make",
	"update change edit modify move reschedule",
	"delete remove erase",
	"restore recover undelete",
	"share access permission grant",
	"sms text",
	"churn cancel attrition",
	"employee staff colleague worker",
	"manager boss supervisor",
	"flight fly airline plane",
	"payment pay charge",
	"refund reimburse reimbursement",
	"invoice bill",
	"file document doc spreadsheet",
	"folder directory",
	"picture image photo",
	"deal opportunity",
	"customer client",
	"vacation holiday leave pto",
	"salary compensation wage",
	"website site web",
	"error exception failure",
	"ship shipment delivery parcel package",
	"chat channel",
	"revenue income sales",
}

func init() {
	for _, g := range synonymGroups {
		var terms []string
		for _, w := range strings.Fields(g) {
			tokenize(w, func(t string) {
				if !slices.Contains(terms, t) {
					terms = append(terms, t)
				}
			})
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !slices.Contains(synonyms[t], u) {
					synonyms[t] = append(synonyms[t], u)
				}
			}
		}
	}
}
