package privacy

import (
	"fmt"
	"strings"
	"testing"
)

// TestWordTable: the frozen table answers as the map it was built from,
// for words present and absent, in any case, ASCII or not.
func TestWordTable(t *testing.T) {
	m := map[string]uint32{}
	for i := range 5000 {
		m[fmt.Sprintf("w%dx", i*7)] = uint32(i + 1)
	}
	for _, w := range []string{"a", "anna", "müller", "straße", "o'brien", "mayer-watkins", strings.Repeat("z", 64), strings.Repeat("y", 70)} {
		m[w] = uint32(len(w))
	}
	l := &lexicon{table: newWordTable(m)}
	for w, want := range m {
		if len(w) > 64 {
			want = 0 // longer words are never looked up
		}
		for _, form := range []string{w, strings.ToUpper(w), capitalized(w)} {
			if got := l.lookup(form); got != want {
				t.Errorf("lookup(%q) = %d, want %d", form, got, want)
			}
		}
	}
	for _, w := range []string{"", "b", "annas", "w1x", "w7", "MÜLLERS", "strasse", strings.Repeat("z", 63)} {
		if got := l.lookup(w); got != 0 {
			t.Errorf("lookup(%q) = %d, want 0", w, got)
		}
	}
}

// TestLexiconLookupCases: the embedded lists answer the same in any case.
func TestLexiconLookupCases(t *testing.T) {
	l := theLexicon()
	for _, w := range []string{"maria", "lisbon", "street", "the", "zürich", "peter", "inc"} {
		f := l.lookup(w)
		if f == 0 {
			t.Errorf("lookup(%q) = 0, want classes", w)
		}
		for _, form := range []string{strings.ToUpper(w), capitalized(w)} {
			if got := l.lookup(form); got != f {
				t.Errorf("lookup(%q) = %#x, want %#x as for %q", form, got, f, w)
			}
		}
	}
}

// capitalized returns w with its first letter upper case.
func capitalized(w string) string {
	for i, r := range w {
		return strings.ToUpper(string(r)) + w[i+len(string(r)):]
	}
	return w
}
