package privacy

import (
	"strings"
	"testing"
)

// TestLowerIsFoldsCase checks the tagger's word test against
// strings.EqualFold on every token of a text with words of several
// scripts, hyphens, apostrophes, numbers and punctuation.
func TestLowerIsFoldsCase(t *testing.T) {
	text := "The THE the thé Thé of OF Of-The o'f i'm I'm Mayer-Watkins 12 12th ; - ' \u00c0the x the_ [the] " +
		"ĀTHE the\u0301 straße STRASSE year-old YEAR-OLD Year-Old in IN In iN"
	words := []string{"the", "of", "i'm", "year-old", "in", "i", "m", "x", "strasse", "mayer-watkins"}
	l := theLexicon()
	toks := tokenize(l, text, 0, len(text), nil)
	g := &tagger{l: l, text: text, ts: toks, cased: true}
	for k, tk := range toks {
		for _, w := range words {
			want := tk.kind == tWord && !tk.code && strings.EqualFold(text[tk.s:tk.e], w) && len(text[tk.s:tk.e]) == len(w)
			if got := g.lowerIs(k, w); got != want {
				t.Errorf("lowerIs(%q, %q) = %v, want %v", text[tk.s:tk.e], w, got, want)
			}
		}
	}
	for _, k := range []int{-1, len(toks), len(toks) + 5} {
		if g.lowerIs(k, "the") {
			t.Errorf("lowerIs(%d) outside the tokens is true", k)
		}
	}
}
