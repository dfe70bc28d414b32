package toolsearch_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolsearch"
)

// fixtureTool is one tool of testdata/tools.json.
type fixtureTool struct {
	toolgate.ToolDefinition
	Category string `json:"category"`
}

// loadFixture reads the 300 tool definitions of testdata/tools.json.
func loadFixture(t testing.TB) []fixtureTool {
	t.Helper()
	b, err := os.ReadFile("testdata/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tools []fixtureTool `json:"tools"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Tools) != 300 {
		t.Fatalf("the fixture has %d tools, want 300", len(f.Tools))
	}
	return f.Tools
}

func fixtureEntries(tools []fixtureTool) []toolsearch.Entry {
	out := make([]toolsearch.Entry, len(tools))
	for i, t := range tools {
		out[i] = toolsearch.Entry{Definition: t.ToolDefinition, Category: t.Category}
	}
	return out
}

// TestRecallAt5 measures the embedded index on 40 natural-language
// requests: the share of expected tools among the first five hits.
func TestRecallAt5(t *testing.T) {
	ctx := context.Background()
	tools := loadFixture(t)
	b, err := os.ReadFile("testdata/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Queries []struct {
			Query    string   `json:"query"`
			Expected []string `json:"expected"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Queries) != 40 {
		t.Fatalf("the fixture has %d queries, want 40", len(f.Queries))
	}
	x := toolsearch.NewBM25Index()
	if err := x.Index(ctx, "c", fixtureEntries(tools)); err != nil {
		t.Fatal(err)
	}
	var found, expected int
	for _, q := range f.Queries {
		hits, err := x.Search(ctx, "c", &toolsearch.Query{Text: q.Query, Max: 5})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range hits {
			names = append(names, h.Name)
		}
		for _, e := range q.Expected {
			expected++
			if slices.Contains(names, e) {
				found++
			} else {
				t.Logf("%q: %s not in the top 5 %v", q.Query, e, names)
			}
		}
	}
	recall := float64(found) / float64(expected)
	t.Logf("recall@5 = %.3f (%d of %d expected tools, %d queries over %d tools)", recall, found, expected, len(f.Queries), len(tools))
	if recall < 0.9 {
		t.Errorf("recall@5 = %.3f, want >= 0.9", recall)
	}
}
