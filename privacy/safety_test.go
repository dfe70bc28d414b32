package privacy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// A token already in the text (forged, or from an earlier round the vault
// never saw) is never issued to another value, and never restored to a
// value that was bound after the text holding it.
func TestIssuedTokensAvoidTokenShapedText(t *testing.T) {
	r := newRewriter()
	if _, err := r.Tokenize(ctx, "mine is ada@example.com"); err != nil {
		t.Fatal(err)
	}
	out, err := r.Tokenize(ctx, "write to [EMAIL_ADDRESS_2] and to bob@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if want := "write to [EMAIL_ADDRESS_2] and to [EMAIL_ADDRESS_3]"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	// A token seen once stays reserved: a later value never gets it.
	out, _ = r.Tokenize(ctx, "carol@example.net")
	if out != "[EMAIL_ADDRESS_4]" {
		t.Errorf("got %q, want a token past the reserved one", out)
	}
	if _, _, ok := r.Vault().Lookup("[EMAIL_ADDRESS_2]"); ok {
		t.Error("the reserved token names a value")
	}
}

// A forged token next to a value the model typed in the same payload stays
// a token; the typed value reaches the tool as typed.
func TestArgumentsForgedTokenNextToTypedValue(t *testing.T) {
	for _, args := range []string{
		`{"to":"[EMAIL_ADDRESS_2]","cc":"typed@example.org"}`,
		`{"cc":"typed@example.org","to":"[EMAIL_ADDRESS_2]"}`,
		`to [EMAIL_ADDRESS_2], cc typed@example.org`,
	} {
		r := newRewriter()
		r.Tokenize(ctx, "ada@example.com")
		got, err := r.Arguments(ctx, []byte(args), AllTypes())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), "[EMAIL_ADDRESS_2]") || strings.Count(string(got), "typed@example.org") != 1 {
			t.Errorf("Arguments(%s) = %s; want the forged token kept and the typed value once", args, got)
		}
	}
}

// Tokens bound after the prompt the model answered are not restored in its
// reply, even when another call of the same reply bound them.
func TestArgumentsHorizon(t *testing.T) {
	r := newRewriter()
	r.Tokenize(ctx, "ada@example.com")
	horizon := r.vault.lastSeq()
	if _, err := r.arguments(ctx, []byte(`{"to":"typed@example.org"}`), AllTypes(), horizon); err != nil {
		t.Fatal(err)
	}
	got, err := r.arguments(ctx, []byte(`{"to":"[EMAIL_ADDRESS_2]","me":"[EMAIL_ADDRESS_1]"}`), AllTypes(), horizon)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"to":"[EMAIL_ADDRESS_2]","me":"ada@example.com"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestSealedVaultKeepsReservationsAndOrder(t *testing.T) {
	key := make([]byte, 32)
	r := newRewriter()
	r.Tokenize(ctx, "[EMAIL_ADDRESS_1] ada@example.com")
	horizon := r.vault.lastSeq()
	r.vault.setMark(horizon)
	r.Tokenize(ctx, "bob@example.org")
	sealed, err := r.vault.Seal(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := OpenVault(key, sealed)
	if err != nil {
		t.Fatal(err)
	}
	if v.getMark() != horizon || v.lastSeq() != r.vault.lastSeq() {
		t.Errorf("mark %d seq %d, want %d %d", v.getMark(), v.lastSeq(), horizon, r.vault.lastSeq())
	}
	r2 := NewRewriter(NewScanner(nil), v)
	if out, _ := r2.Tokenize(ctx, "carol@example.net"); out != "[EMAIL_ADDRESS_4]" {
		t.Errorf("got %s, want [EMAIL_ADDRESS_4] (1 reserved, 2 and 3 bound)", out)
	}
}

// A recognizer finding that covers a token does not tokenize it again.
func TestKnownTokensNeverRetokenized(t *testing.T) {
	s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{&Rule{Pattern: regexp.MustCompile(`[A-Z]+_?[0-9]*`)}}})
	r := NewRewriter(s, NewVault())
	tok, err := r.Tokenize(ctx, "ABC")
	if err != nil || tok != "[GENERIC_1]" {
		t.Fatalf("got %q, %v", tok, err)
	}
	for _, in := range []string{tok, "see " + tok + " now", `"` + tok + `"`} {
		if out, err := r.Tokenize(ctx, in); err != nil || out != in {
			t.Errorf("Tokenize(%q) = %q, %v; want it unchanged", in, out, err)
		}
		if out, err := r.Output(ctx, in, ModeBlock, NoTypes()); err != nil || out != in {
			t.Errorf("block Output(%q) = %q, %v; want it unchanged", in, out, err)
		}
	}
	if out, err := r.TokenizeJSON(ctx, []byte(`{"a":"`+tok+`"}`)); err != nil || string(out) != `{"a":"`+tok+`"}` {
		t.Errorf("TokenizeJSON = %s, %v", out, err)
	}
	if got := r.Restore(tok, AllTypes()); got != "ABC" {
		t.Errorf("Restore = %q", got)
	}
}

// Block mode shows what tokens mode shows whenever it does not block.
func TestBlockModeAgreesWithTokensMode(t *testing.T) {
	r := newRewriter()
	r.Tokenize(ctx, "ada@example.com")
	text := "I wrote to ada@example.com, [EMAIL_ADDRESS_1]."
	tokens, err := r.Output(ctx, text, ModeTokens, NoTypes())
	if err != nil {
		t.Fatal(err)
	}
	block, err := r.Output(ctx, text, ModeBlock, NoTypes())
	if err != nil || block != tokens {
		t.Errorf("block %q, %v; want %q", block, err, tokens)
	}
}

func TestRestoreCap(t *testing.T) {
	s := NewScanner(&ScannerOptions{
		Recognizers: []Recognizer{&Rule{Type: "LONG", Pattern: regexp.MustCompile(`Z{100,}`)}},
		Limits:      Limits{MaxBytes: 4096},
	})
	r := NewRewriter(s, NewVault())
	tok, _ := r.Tokenize(ctx, strings.Repeat("Z", 1000))
	args := []byte(`["` + strings.Repeat(tok+" ", 10) + `"]`)
	var le *LimitError
	if _, err := r.Arguments(ctx, args, AllTypes()); !errors.As(err, &le) || le.Limit != "bytes" {
		t.Errorf("Arguments: %v, want a bytes LimitError", err)
	}
	if _, err := r.RestoreJSON(args, AllTypes()); !errors.As(err, &le) {
		t.Errorf("RestoreJSON: %v, want a LimitError", err)
	}
	if _, err := r.Output(ctx, string(args), ModeRestore, AllTypes()); !errors.As(err, &le) {
		t.Errorf("Output: %v, want a LimitError", err)
	}
}

// countingRecognizer counts its calls.
type countingRecognizer struct {
	calls atomic.Int32
	inner Recognizer
}

func (c *countingRecognizer) Recognize(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	c.calls.Add(1)
	return c.inner.Recognize(ctx, text, dst)
}

func TestTokenizeJSONBatchesOneAnalysis(t *testing.T) {
	cr := &countingRecognizer{inner: &Rule{Type: Person, Pattern: regexp.MustCompile(`Ann [A-Z][a-z]+`)}}
	s := NewScanner(&ScannerOptions{Recognizers: append(Builtins(), cr)})
	var sb strings.Builder
	sb.WriteString(`{"rows":[`)
	for i := range 600 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"row %d: Ann Lee%c, ann%d@example.com, card 4111 1111 1111 1111"`, i, 'a'+rune(i%26), i)
	}
	sb.WriteString(`],"n":4111111111111111}`)
	batched := NewRewriter(s, NewVault())
	out, err := batched.TokenizeJSON(ctx, []byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n := cr.calls.Load(); n != 1 {
		t.Errorf("%d recognizer calls for one payload, want 1", n)
	}
	// Value by value, the same result.
	one := NewRewriter(s, NewVault())
	payload := []byte(sb.String())
	vals, err := one.jsonValues(payload)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := one.rebuildJSON(payload, vals, func(out []byte, i int) ([]byte, error) {
		t, err := one.TokenizeJSON(ctx, payload[vals[i].start:vals[i].end])
		return append(out, t...), err
	})
	if string(out) != string(want) {
		t.Errorf("batched:\n%.300s\nvalue by value:\n%.300s", out, want)
	}
}

func TestInvalidScoresFailClosed(t *testing.T) {
	for _, score := range []float64{math.NaN(), -0.1, math.Inf(1), 1.5} {
		bad := recognizerFunc(func(_ context.Context, text string, dst []Finding) ([]Finding, error) {
			return append(dst, Finding{Start: 0, End: len(text), Type: Person, Score: score}), nil
		})
		s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{bad}})
		_, err := s.Scan(ctx, "Ann Lee")
		var re *RecognizerError
		if !errors.As(err, &re) {
			t.Errorf("score %v: %v, want a RecognizerError", score, err)
		}
	}
	for _, o := range []ScannerOptions{
		{MinScore: math.NaN()}, {MinScore: math.Inf(1)}, {MinScore: -1}, {MinScore: 1.1},
		{Recognizers: []Recognizer{&Rule{Pattern: regexp.MustCompile("x"), Score: math.NaN()}}},
		{Recognizers: []Recognizer{&Rule{Pattern: regexp.MustCompile("x"), Score: 2}}},
		{Recognizers: []Recognizer{&Rule{}}},
		{Limits: Limits{MaxBytes: -1}},
	} {
		if !panics(func() { NewScanner(&o) }) {
			t.Errorf("NewScanner(%+v) accepted", o)
		}
	}
	for _, o := range []AnalyzerOptions{{ScoreThreshold: math.NaN()}, {ScoreThreshold: -1}, {Timeout: -1}, {Backoff: -1}, {MaxResponseBytes: -1}} {
		if !panics(func() { NewAnalyzer("http://localhost/analyze", &o) }) {
			t.Errorf("NewAnalyzer(%+v) accepted", o)
		}
	}
	if !panics(func() { NewDictionary(Person, []string{"Ann"}, &DictionaryOptions{Score: math.Inf(1)}) }) {
		t.Error("NewDictionary with an infinite score accepted")
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

func TestRecognizerPanicsAndErrorsHoldNoText(t *testing.T) {
	const secret = "ada@example.com"
	for name, r := range map[string]Recognizer{
		"validator panic": &Rule{Pattern: regexp.MustCompile(`\S+@\S+`), Validate: func(m string) bool { panic("bad " + m) }},
		"recognizer panic": recognizerFunc(func(_ context.Context, text string, dst []Finding) ([]Finding, error) {
			panic(errors.New(text))
		}),
		"recognizer error": recognizerFunc(func(_ context.Context, text string, dst []Finding) ([]Finding, error) {
			return dst, fmt.Errorf("cannot handle %q", text)
		}),
	} {
		s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{r}})
		_, err := s.Scan(ctx, "mail "+secret)
		var re *RecognizerError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a RecognizerError", name, err)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
			t.Errorf("%s: error %q holds the text", name, err)
		}
	}
	// Cancellation stays recognisable.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	canceled := recognizerFunc(func(ctx context.Context, _ string, dst []Finding) ([]Finding, error) { return dst, ctx.Err() })
	if _, err := NewScanner(&ScannerOptions{Recognizers: []Recognizer{canceled}}).Scan(cctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestEmptyRecognizerListRefused(t *testing.T) {
	if !panics(func() { NewScanner(&ScannerOptions{Recognizers: []Recognizer{}}) }) {
		t.Error("an empty recognizer list was accepted")
	}
}

// A JSON number holding values of two types is one token of the most
// sensitive type, restored only to a reader granted every type in it.
func TestNumberWithTwoTypes(t *testing.T) {
	s := NewScanner(&ScannerOptions{Recognizers: []Recognizer{
		&Rule{Type: PhoneNumber, Pattern: regexp.MustCompile(`5550100`), Score: 0.95},
		&Rule{Type: CreditCard, Pattern: regexp.MustCompile(`4111111111111111`), Score: 0.6},
	}})
	r := NewRewriter(s, NewVault())
	args := []byte(`{"n":55501004111111111111111}`)
	for _, tc := range []struct {
		g    Grant
		want string
	}{
		{Types(PhoneNumber), `{"n":"[CREDIT_CARD_1]"}`},
		{Types(CreditCard), `{"n":"[CREDIT_CARD_1]"}`},
		{Types(PhoneNumber, CreditCard), string(args)},
	} {
		got, err := r.Arguments(ctx, args, tc.g)
		if err != nil || string(got) != tc.want {
			t.Errorf("grant %v: %s, %v; want %s", tc.g, got, err, tc.want)
		}
	}
}

type recognizerFunc func(context.Context, string, []Finding) ([]Finding, error)

func (f recognizerFunc) Recognize(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	return f(ctx, text, dst)
}

// FuzzTokenizeAvoidsPresentTokens: whatever token-shaped text a payload
// holds, the tokens issued for it are new ones, and restoring with every
// type granted gives the text back.
func FuzzTokenizeAvoidsPresentTokens(f *testing.F) {
	for _, s := range []string{"[EMAIL_ADDRESS_1] a@example.com", "[EMAIL_ADDRESS_2][EMAIL_ADDRESS_1]b@example.org", "[[EMAIL_ADDRESS_1]]", "[A_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := newRewriter()
		present := map[string]bool{}
		for _, sp := range tokenSpans(s) {
			tok := s[sp[0]:sp[1]]
			if _, _, ok := ParseToken(tok); !ok {
				t.Fatalf("span %q of %q is not a token", tok, s)
			}
			present[tok] = true
		}
		out, err := r.Tokenize(ctx, s)
		if err != nil {
			return
		}
		for _, sp := range tokenSpans(out) {
			tok := out[sp[0]:sp[1]]
			if _, _, bound := r.vault.Lookup(tok); bound && present[tok] {
				t.Fatalf("Tokenize(%q) issued %s, which the text held", s, tok)
			}
		}
		if back := r.Restore(out, AllTypes()); back != s {
			t.Fatalf("Restore(Tokenize(%q)) = %q", s, back)
		}
	})
}

// OutputContent rewrites JSON value by value: the result stays valid JSON
// in every mode, a restored number is a number again.
func TestOutputContentJSON(t *testing.T) {
	r := newRewriter()
	_, err := r.TokenizeJSON(ctx, []byte(`{"to":"say \"hi\" to ann@example.com","n":4111111111111111}`))
	if err != nil {
		t.Fatal(err)
	}
	args := `{"to":"[EMAIL_ADDRESS_1]","cc":"bob@example.org","n":"[CREDIT_CARD_1]"}`
	if _, err := r.OutputContent(ctx, args, ModeBlock, NoTypes()); err == nil {
		t.Error("block mode let a new value through")
	}
	for _, tc := range []struct {
		m    OutputMode
		g    Grant
		want string
	}{
		{ModeTokens, NoTypes(), `{"to":"[EMAIL_ADDRESS_1]","cc":"[EMAIL_ADDRESS_2]","n":"[CREDIT_CARD_1]"}`},
		{ModeRestore, AllTypes(), `{"to":"ann@example.com","cc":"bob@example.org","n":4111111111111111}`},
		{ModeRestore, Types(EmailAddress), `{"to":"ann@example.com","cc":"bob@example.org","n":"[CREDIT_CARD_1]"}`},
		{ModeRedact, NoTypes(), `{"to":"[REDACTED EMAIL_ADDRESS]","cc":"[REDACTED EMAIL_ADDRESS]","n":"[REDACTED CREDIT_CARD]"}`},
	} {
		got, err := r.OutputContent(ctx, args, tc.m, tc.g)
		if err != nil || got != tc.want {
			t.Errorf("%v %v: %s, %v; want %s", tc.m, tc.g, got, err, tc.want)
		}
	}
}
