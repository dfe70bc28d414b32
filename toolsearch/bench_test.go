package toolsearch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolsearch"
)

// thousandTools returns 1,000 entries: the fixture's 300 tools, repeated
// with numbered names and a distinguishing word.
func thousandTools(b *testing.B) []toolsearch.Entry {
	fixture := fixtureEntries(loadFixture(b))
	out := make([]toolsearch.Entry, 1000)
	for i := range out {
		e := fixture[i%len(fixture)]
		if n := i / len(fixture); n > 0 {
			d := e.Definition
			d.Name = fmt.Sprintf("%s_v%d", d.Name, n+1)
			d.Description = fmt.Sprintf("%s Region %d edition.", d.Description, n)
			e.Definition = d
		}
		out[i] = e
	}
	return out
}

// BenchmarkIndex1000 builds the index of 1,000 tools.
func BenchmarkIndex1000(b *testing.B) {
	ctx := context.Background()
	entries := thousandTools(b)
	x := toolsearch.NewBM25Index()
	b.ReportAllocs()
	for b.Loop() {
		if err := x.Index(ctx, "c", entries); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearch1000 runs one query over 1,000 tools.
func BenchmarkSearch1000(b *testing.B) {
	ctx := context.Background()
	x := toolsearch.NewBM25Index()
	if err := x.Index(ctx, "c", thousandTools(b)); err != nil {
		b.Fatal(err)
	}
	q := &toolsearch.Query{Text: "refund the customer's card payment for the order", Max: 5}
	b.ReportAllocs()
	for b.Loop() {
		hits, err := x.Search(ctx, "c", q)
		if err != nil || len(hits) != 5 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}

// BenchmarkOffer1000 is the cost of a round after the first in a request
// with 1,000 tools: the same instances, nothing to describe or index.
func BenchmarkOffer1000(b *testing.B) {
	ctx := context.Background()
	entries := thousandTools(b)
	tools := make([]*toolgate.Tool, len(entries))
	for i, e := range entries {
		tools[i] = toolgate.NewTool(e.Definition, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	}
	rs, err := toolsearch.New(nil).Begin(ctx, &toolgate.BeginParams{ConversationID: "c"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rs.Offer(ctx, nil, tools); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequest1000 is the per-request cost of tool search with 1,000
// tools already indexed for the conversation: a new request describes the
// tools once and finds the index up to date.
func BenchmarkRequest1000(b *testing.B) {
	ctx := context.Background()
	entries := thousandTools(b)
	tools := make([]*toolgate.Tool, len(entries))
	for i, e := range entries {
		tools[i] = toolgate.NewTool(e.Definition, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	}
	search := toolsearch.New(nil)
	r := &toolgate.BeginParams{ConversationID: "c"}
	b.ReportAllocs()
	for b.Loop() {
		rs, err := search.Begin(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rs.Offer(ctx, nil, tools); err != nil {
			b.Fatal(err)
		}
	}
}
