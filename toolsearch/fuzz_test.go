package toolsearch

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// TestTokenize pins the splitting of names and text into terms.
func TestTokenize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sendEmail", "send email"},
		{"crm_create_lead", "crm creat lead"},
		{"HTTPServerError", "http server error"},
		{"files.convert_to_pdf", "file convert pdf"},
		{"ipv4Address", "ipv 4 address"},
		{"Send an e-mail", "send e email mail"},
		{"The invoices were scheduled", "invoic were schedul"},
		{"cancelled bookings", "cancel book"},
		{"", ""},
		{"Ünïcode Straße", "ünïcode straße"},
	} {
		var got []string
		tokenize(tc.in, func(s string) { got = append(got, s) })
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("tokenize(%q) = %q, want %q", tc.in, g, tc.want)
		}
	}
}

// FuzzSearch feeds any text to the tokenizer and to a search over a small
// index: nothing panics, every term is valid UTF-8 of bounded length, and
// a search returns at most Max hits, all indexed.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"", "send an e-mail", "HTTPServer-v2_ipv6", "\xff\xfe", strings.Repeat("a-", 100), "İ", "crm.create_lead"} {
		f.Add(s, 3, "")
	}
	ctx := context.Background()
	x := NewBM25Index()
	names := map[string]bool{}
	var entries []Entry
	for _, n := range []string{"sendEmail", "crm.create_lead", "bookFlight", "HTTPServerRestart", "files.convert_to_pdf"} {
		names[n] = true
		entries = append(entries, Entry{Definition: toolgate.ToolDefinition{Name: n, Description: "does " + n}, Category: nameCategory(toolgate.ToolDefinition{Name: n})})
	}
	if err := x.Index(ctx, "c", entries); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, limit int, category string) {
		tokenize(text, func(term string) {
			if term == "" || !utf8.ValidString(term) || len(term) > 2*maxTermLen {
				t.Fatalf("tokenize(%q) gave the term %q", text, term)
			}
		})
		hits, err := x.Search(ctx, "c", &Query{Text: text, Max: limit, Category: category})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) > max(limit, 0) {
			t.Fatalf("%d hits for max %d", len(hits), limit)
		}
		for _, h := range hits {
			if !names[h.Name] || h.Score <= 0 {
				t.Fatalf("hit %+v", h)
			}
		}
	})
}
