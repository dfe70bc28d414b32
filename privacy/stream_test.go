package privacy

import (
	"errors"
	"strings"
	"testing"
)

const streamText = "Hi [EMAIL_ADDRESS_1], your card [CREDIT_CARD_1] is on file. Call +1 (415) 555-0132 or mail bob@example.org; " +
	"IBAN GB82 WEST 1234 5698 7654 32, forged [EMAIL_ADDRESS_9], ip 10.1.2.3.\n" + pemBlock + "\nbye"

func oneShot(t *testing.T, text string, m OutputMode, g Grant) string {
	t.Helper()
	r := newRewriter()
	r.Tokenize(ctx, "ann@example.com 4111111111111111")
	out, err := r.Output(ctx, text, m, g)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func streamed(t testing.TB, text string, splits []int, m OutputMode, g Grant) (string, bool) {
	r := newRewriter()
	r.Tokenize(ctx, "ann@example.com 4111111111111111")
	st := r.Stream(m, g)
	var b strings.Builder
	immediate := true
	last := 0
	for _, p := range append(splits, len(text)) {
		out, err := st.Write(ctx, text[last:p])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(out)
		last = p
	}
	out, err := st.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(out)
	return b.String(), immediate
}

// TestStreamEverySplit cuts the text at every split point (and at every
// pair of split points) and compares with the one-shot rewrite.
func TestStreamEverySplit(t *testing.T) {
	for _, m := range []OutputMode{ModeTokens, ModeRestore, ModeRedact} {
		g := Types(EmailAddress, PhoneNumber)
		want := oneShot(t, streamText, m, g)
		for i := 0; i <= len(streamText); i++ {
			if got, _ := streamed(t, streamText, []int{i}, m, g); got != want {
				t.Fatalf("mode %v, split at %d:\n got %q\nwant %q", m, i, got, want)
			}
		}
		for i := 0; i <= len(streamText); i += 7 {
			for j := i; j <= len(streamText); j += 3 {
				if got, _ := streamed(t, streamText, []int{i, j}, m, g); got != want {
					t.Fatalf("mode %v, splits at %d, %d:\n got %q\nwant %q", m, i, j, got, want)
				}
			}
		}
	}
	// Byte by byte.
	var splits []int
	for i := 1; i < len(streamText); i++ {
		splits = append(splits, i)
	}
	want := oneShot(t, streamText, ModeRestore, AllTypes())
	if got, _ := streamed(t, streamText, splits, ModeRestore, AllTypes()); got != want {
		t.Fatalf("byte by byte:\n got %q\nwant %q", got, want)
	}
}

// TestStreamEmitsEarly checks that a stream returns text as soon as no
// value can reach back into it: a line ended, or the text has run on.
func TestStreamEmitsEarly(t *testing.T) {
	r := newRewriter()
	r.Tokenize(ctx, "ann@example.com")
	st := r.Stream(ModeRestore, AllTypes())
	var all strings.Builder
	write := func(chunk string) string {
		t.Helper()
		out, err := st.Write(ctx, chunk)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(out)
		return out
	}
	// A token's prefix is held; the line before it is final.
	if out := write("Hello there, dear\n[EMAIL_ADD"); out != "Hello there, dear\n" {
		t.Errorf("got %q, want the line before the token prefix", out)
	}
	// The restored token once complete; a phone number in groups is held
	// until it is complete.
	out := write("RESS_1] how are you doing on this fine day? I would like to ask you something. Call 415 555")
	if !strings.HasPrefix(out, "ann@example.com how are you") || strings.Contains(out, "415") {
		t.Errorf("got %q, want the restored token and the words after it, without the number", out)
	}
	if out := write(" 0132 now or later when you are free to talk to me about it"); !strings.Contains(out, "Call 415 555 0132 now") {
		t.Errorf("got %q, want the whole number", out)
	}
	out, err := st.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all.WriteString(out)
	want := "Hello there, dear\nann@example.com how are you doing on this fine day? I would like to ask you something. " +
		"Call 415 555 0132 now or later when you are free to talk to me about it"
	if all.String() != want {
		t.Errorf("in all: got %q, want %q", all.String(), want)
	}
}

func TestStreamDictionaryHoldback(t *testing.T) {
	s := NewScanner(&ScannerOptions{Recognizers: append(Builtins(), NewDictionary(Person, []string{"Ann Marie Lee"}, nil))})
	r := NewRewriter(s, NewVault())
	st := r.Stream(ModeTokens, NoTypes())
	var b strings.Builder
	for _, c := range []string{"Dear Ann ", "Marie ", "Lee, hello"} {
		out, err := st.Write(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(out)
	}
	out, _ := st.Flush(ctx)
	b.WriteString(out)
	if got := b.String(); got != "Dear [PERSON_1], hello" {
		t.Errorf("got %q", got)
	}
}

func TestStreamBlock(t *testing.T) {
	r := newRewriter()
	st := r.Stream(ModeBlock, NoTypes())
	if out, err := st.Write(ctx, "Some fine text here\n"); err != nil || out != "Some fine text here\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	_, err := st.Write(ctx, "mail ann@example.com now, and we can talk about the rest of it later")
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a BlockedError", err)
	}
	if _, err2 := st.Flush(ctx); err2 != err {
		t.Errorf("after an error, Flush returned %v", err2)
	}
}

func FuzzStreamRewriter(f *testing.F) {
	f.Add(streamText, uint16(5), uint16(40))
	f.Add("call 415 555 0132 x12 now", uint16(9), uint16(3))
	f.Add("[EMAIL_ADDRESS_1][CREDIT_CARD_1] a@b.co", uint16(1), uint16(2))
	f.Add("Mail to Sabirov pr., 41, AZ2001 Quba, Gurcustan until May; Jln. Kenari no 5, Tarakan 77114", uint16(17), uint16(4))
	f.Add("A 0 AA aAAAA BY 00000", uint16(0), uint16(13))
	f.Fuzz(func(t *testing.T, text string, a, b uint16) {
		if len(text) > 4096 {
			return
		}
		i, j := int(a)%(len(text)+1), int(b)%(len(text)+1)
		if i > j {
			i, j = j, i
		}
		for _, m := range []OutputMode{ModeTokens, ModeRestore, ModeRedact} {
			r := newRewriter()
			r.Tokenize(ctx, "ann@example.com 4111111111111111")
			want, err := r.Output(ctx, text, m, AllTypes())
			if err != nil {
				return
			}
			got, _ := streamed(t, text, []int{i, j}, m, AllTypes())
			if got != want {
				t.Fatalf("mode %v, splits %d,%d of %q:\n got %q\nwant %q", m, i, j, text, got, want)
			}
		}
	})
}
