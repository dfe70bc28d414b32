package privacy

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// byteCounter counts the bytes a scanner gives it.
type byteCounter struct{ n atomic.Int64 }

func (c *byteCounter) Recognize(_ context.Context, text string, dst []Finding) ([]Finding, error) {
	c.n.Add(int64(len(text)))
	return dst, nil
}

// TestStreamWorkIsLinear streams texts in small chunks, among them lists
// in which every word may begin a value (so that the embedded recognizer's
// segments follow each other without a gap): the stream must keep
// returning output (what it holds stays bounded, far below its limit),
// scan each byte a bounded number of times, and still equal the one-shot
// rewrite.
func TestStreamWorkIsLinear(t *testing.T) {
	texts := map[string]string{
		"names and numbers": strings.Repeat("Alice 12 Bob 34 Carol 56 ", 24<<10/25),
		"ids and statuses":  strings.Repeat("ID 7731 Status OK Seat 12A ", 24<<10/27),
		"a table":           strings.Repeat("| VX205 | LIS | 12:40 | On time |\n", 24<<10/34),
		"prose":             prose(24 << 10),
		"lower case":        strings.Repeat("the cat sat on a mat and then ", 24<<10/30),
	}
	for name, text := range texts {
		for _, n := range []int{1, 4, 16} {
			count := &byteCounter{}
			r := NewRewriter(NewScanner(&ScannerOptions{Recognizers: append(Builtins(), count)}), NewVault())
			s := r.Stream(ModeTokens, NoTypes())
			var out strings.Builder
			held := 0
			for i := 0; i < len(text); i += n {
				o, err := s.Write(t.Context(), text[i:min(i+n, len(text))])
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString(o)
				held = max(held, len(s.pending))
			}
			o, err := s.Flush(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(o)
			if got := count.n.Load(); got > 8*int64(len(text)) {
				t.Errorf("%s in chunks of %d: the recognizers read %d bytes of a %d-byte text (%.0f times each)", name, n, got, len(text), float64(got)/float64(len(text)))
			}
			if name != "lower case" && held > 3*maxEntityHold/2 {
				t.Errorf("%s in chunks of %d: held up to %d bytes, want at most %d", name, n, held, 3*maxEntityHold/2)
			}
			// Where the hold-back's bound made the stream cut inside a
			// segment, values may be labelled otherwise than in one shot,
			// but no word the one-shot rewrite hides may be left in plain
			// text.
			if want := oneShot(t, text, ModeTokens, NoTypes()); out.String() != want {
				plain, wantPlain := plainWords(out.String()), plainWords(want)
				for w, k := range plain {
					if k > wantPlain[w] {
						t.Errorf("%s in chunks of %d: %q is left in plain text %d times, %d in one shot", name, n, w, k, wantPlain[w])
					}
				}
			}
		}
	}
}

var tokenPattern = regexp.MustCompile(`\[[A-Z_]+_[0-9]+\]`)

// plainWords counts the words of a rewritten text outside its tokens.
func plainWords(s string) map[string]int {
	m := map[string]int{}
	for _, w := range strings.Fields(tokenPattern.ReplaceAllString(s, " ")) {
		m[w]++
	}
	return m
}
