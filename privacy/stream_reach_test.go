package privacy

import (
	"encoding/json"
	"strings"
	"testing"
)

// reachTexts hold values that the words after them complete backwards:
// a postal code or a street type that makes the words before it a street
// line, a second street that makes "the corner of" an address, a house
// number that makes a name a street.
var reachTexts = []string{
	"A 0 AA aAAAA BY 00000",
	"Meet me at the corner of Main St and 5th Ave tomorrow.",
	"Ship to Rua de la Paix 5 then",
	"Visit Hotel de la Ville at 12 Rue du Bac",
	"Send it to Cesta v Gorice 12, 1000 Ljubljana please.",
	"Post to 12 van der Berg Straat 7, 1012 AB Amsterdam.",
	"Write to Yesenin pr., 385, AZ1000 Quba today",
	"Deliver to ul. k Mostu 3, 00-950 Warszawa",
	"It is 12 aBc of the dEf Road, then",
}

// TestStreamBackwardReach writes each text in two pieces cut at every
// position, and byte by byte, and compares with the one-shot rewrite.
func TestStreamBackwardReach(t *testing.T) {
	for _, text := range reachTexts {
		for _, m := range []OutputMode{ModeTokens, ModeRedact} {
			want := oneShot(t, text, m, NoTypes())
			for i := 0; i <= len(text); i++ {
				if got, _ := streamed(t, text, []int{i}, m, NoTypes()); got != want {
					t.Errorf("%q, mode %v, split at %d:\n got %q\nwant %q", text, m, i, got, want)
					break
				}
			}
			var splits []int
			for i := 1; i < len(text); i++ {
				splits = append(splits, i)
			}
			if got, _ := streamed(t, text, splits, m, NoTypes()); got != want {
				t.Errorf("%q, mode %v, byte by byte:\n got %q\nwant %q", text, m, got, want)
			}
		}
	}
}

// TestStreamFailsClosed makes a stream cut inside an address (its hold
// limit reached): the part of the address after the cut is rewritten all
// the same, never passed on as it is.
func TestStreamFailsClosed(t *testing.T) {
	r := newRewriter()
	st := r.Stream(ModeTokens, NoTypes())
	st.limit = 16
	var b strings.Builder
	for _, c := range []string{"Ship to 12 Main ", "Street, Springfield, IL 62704 now"} {
		out, err := st.Write(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(out)
	}
	out, err := st.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(out)
	got := b.String()
	for _, v := range []string{"Street", "Springfield", "62704"} {
		if strings.Contains(got, v) {
			t.Errorf("%q passed as it is: %q", v, got)
		}
	}
	if !strings.Contains(got, "[ADDRESS_") {
		t.Errorf("no address token in %q", got)
	}
}

// chunked writes text to a new stream in pieces whose lengths are the
// bytes of sizes (1 to 16 each, in turn), with the stream's hold limit
// set to limit (0: the default), and returns the output and the rewriter.
func chunked(t testing.TB, text string, sizes []byte, limit int, m OutputMode) (string, *Rewriter) {
	t.Helper()
	r := newRewriter()
	r.Tokenize(ctx, "ann@example.com 4111111111111111")
	st := r.Stream(m, NoTypes())
	if limit > 0 {
		st.limit = limit
	}
	var b strings.Builder
	for i, k := 0, 0; i < len(text); k++ {
		n := 1
		if len(sizes) > 0 {
			n = int(sizes[k%len(sizes)])%16 + 1
		}
		out, err := st.Write(ctx, text[i:min(i+n, len(text))])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(out)
		i += n
	}
	out, err := st.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(out)
	return b.String(), r
}

// FuzzStreamChunks checks the stream's promise on text written in pieces
// of any sizes: the output is the one-shot output, so no value that the
// one-shot scan finds reaches the reader unrewritten.
func FuzzStreamChunks(f *testing.F) {
	for _, text := range reachTexts {
		f.Add(text, []byte{3, 1, 7})
	}
	f.Add(streamText, []byte{0})
	for _, tc := range caselessCases {
		f.Add(tc.text, []byte{2, 5})
	}
	for _, text := range []string{"Send it to Calz. Independencia s/n.\nGuadalajara, 44100", "Mail it to 3 Ross Road, Stanley, 00100, Falkland Islands (Islas Malvinas)",
		"Please post the keys to\n16 Rowan Crescent\nLeeds LS6 2AB", "The fitter comes to 5 Harcourt Parade, Little Hadham HG93 12K tomorrow.",
		"We flew to Côte d’Ivoire with Siobhan O’Connor and G`ulom."} {
		f.Add(text, []byte{1, 4})
	}
	f.Fuzz(func(t *testing.T, text string, sizes []byte) {
		if len(text) > 4096 {
			return
		}
		r := newRewriter()
		r.Tokenize(ctx, "ann@example.com 4111111111111111")
		want, err := r.Output(ctx, text, ModeTokens, NoTypes())
		if err != nil {
			return
		}
		if got, _ := chunked(t, text, sizes, 0, ModeTokens); got != want {
			t.Fatalf("pieces %v of %q:\n got %q\nwant %q", sizes, text, got, want)
		}
	})
}

// FuzzStreamFailsClosed makes the stream cut where it must (a hold limit
// of 24 bytes), so that it cuts inside values and rewrites their parts on
// both sides of a cut, and checks that the output is whole: restoring its
// tokens gives back exactly the text. (TestStreamFailsClosed checks that
// the part after such a cut is a token.)
func FuzzStreamFailsClosed(f *testing.F) {
	for _, text := range reachTexts {
		f.Add(text, []byte{5, 2})
	}
	f.Add("Ship to 12 Main Street, Springfield, IL 62704 now", []byte{15})
	f.Fuzz(func(t *testing.T, text string, sizes []byte) {
		if len(text) > 2048 || strings.IndexByte(text, tokenOpen) >= 0 {
			return
		}
		got, r := chunked(t, text, sizes, 24, ModeTokens)
		if back := r.Restore(got, AllTypes()); back != text {
			t.Fatalf("pieces %v of %q: restored %q", sizes, text, back)
		}
	})
}

// TestStreamDevSet streams every text of the dev set in pieces of 7 bytes
// and compares with the one-shot rewrite.
func TestStreamDevSet(t *testing.T) {
	all, _, _ := devSplit(t)
	var recs []struct {
		Text string `json:"full_text"`
	}
	if err := json.Unmarshal([]byte(all), &recs); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, rec := range recs {
		r := newRewriter()
		r.Tokenize(ctx, "ann@example.com 4111111111111111")
		want, err := r.Output(ctx, rec.Text, ModeTokens, NoTypes())
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := chunked(t, rec.Text, []byte{6}, 0, ModeTokens); got != want {
			if bad++; bad <= 3 {
				t.Errorf("%q:\n got %q\nwant %q", rec.Text, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d texts differ", bad, len(recs))
	}
}
