package privacy

import (
	"strings"
	"testing"
)

// TestLowerIsFoldsCase checks the tagger's word tests against the
// tokens' kinds and strings.EqualFold on every token of a text with words
// of several scripts, hyphens, apostrophes, numbers, identifiers and
// punctuation.
func TestLowerIsFoldsCase(t *testing.T) {
	text := "The THE the thé Thé of OF Of-The o'f i'm I'm Mayer-Watkins 12 12th ; - ' \u00c0the x the_ [the] " +
		"ĀTHE the\u0301 straße STRASSE year-old YEAR-OLD Year-Old in IN In iN 12_ _12 x1 [12] 3a"
	words := []string{"the", "of", "i'm", "year-old", "in", "i", "m", "x", "strasse", "mayer-watkins"}
	l := theLexicon()
	toks := tokenize(l, text, 0, len(text), nil)
	g := &tagger{l: l, text: text, ts: toks, cased: true}
	for k, tk := range toks {
		if got, want := g.isWord(k), tk.kind == tWord && !tk.code; got != want {
			t.Errorf("isWord(%q) = %v, want %v", text[tk.s:tk.e], got, want)
		}
		if got, want := g.isNum(k), tk.kind == tNum && !tk.code; got != want {
			t.Errorf("isNum(%q) = %v, want %v", text[tk.s:tk.e], got, want)
		}
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

// TestPlaceSpanHeads checks that placeSpan, which stops where no longer
// place starts with the words it has read, ends where it would without
// stopping, on every place of several words: written capitalised, in
// lower case and in capitals, in a sentence and followed by more words,
// with the possessive and with dots.
func TestPlaceSpanHeads(t *testing.T) {
	l := theLexicon()
	all := *l
	all.heads = placeHeads{} // every word is a head
	var texts []string
	for key := range l.places {
		title := []byte(key)
		for i := range title {
			if i == 0 || title[i-1] == ' ' || title[i-1] == '-' {
				title[i] = upperASCII(title[i])
			}
		}
		texts = append(texts, "we moved to "+string(title)+"'s north. Then "+string(title)+" New York City",
			key+". in "+key+" of", strings.ToUpper(key))
	}
	texts = append(texts, "St. John's Wood and the People's Republic of China, the Republic of the Congo's capital")
	n := 0
	for _, text := range texts {
		toks := tokenize(l, text, 0, len(text), nil)
		for _, cased := range []bool{true, false} {
			g := &tagger{l: l, text: text, ts: toks, cased: cased}
			ref := &tagger{l: &all, text: text, ts: toks, cased: cased}
			for k := range toks {
				if got, want := g.placeSpan(k), ref.placeSpan(k); got != want {
					t.Fatalf("placeSpan(%d) of %q (cased %v) = %d, want %d", k, text, cased, got, want)
				}
				n++
			}
		}
	}
	if n < 100000 {
		t.Fatalf("only %d spans compared", n)
	}
}

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 32
	}
	return c
}
