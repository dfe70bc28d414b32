package privacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

var ctx = context.Background()

func newRewriter() *Rewriter { return NewRewriter(NewScanner(nil), NewVault()) }

func TestParseToken(t *testing.T) {
	tests := []struct {
		in   string
		typ  EntityType
		n    int
		okay bool
	}{
		{"[EMAIL_ADDRESS_1]", EmailAddress, 1, true},
		{"[CREDIT_CARD_120]", CreditCard, 120, true},
		{"[X9_7]", "X9", 7, true},
		{"[EMAIL_ADDRESS_01]", "", 0, false},
		{"[EMAIL_ADDRESS_]", "", 0, false},
		{"[email_1]", "", 0, false},
		{"[_1]", "", 0, false},
		{"[EMAIL_1", "", 0, false},
		{"[EMAIL_1] ", "", 0, false},
		{"[EMAIL_1234567890]", "", 0, false},
		{"[" + strings.Repeat("A", 33) + "_1]", "", 0, false},
	}
	for _, tt := range tests {
		typ, n, ok := ParseToken(tt.in)
		if typ != tt.typ || n != tt.n || ok != tt.okay {
			t.Errorf("ParseToken(%q) = %q, %d, %v; want %q, %d, %v", tt.in, typ, n, ok, tt.typ, tt.n, tt.okay)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"[EMAIL_ADDRESS_1]", "[A_0]", "[", "[A_1", "[CREDIT_CARD_999999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, n, ok := ParseToken(s)
		if !ok {
			return
		}
		if n < 1 || formatToken(string(typ), n) != s {
			t.Fatalf("ParseToken(%q) = %q, %d: does not format back", s, typ, n)
		}
		if tokenLabel(typ) != string(typ) {
			t.Fatalf("label %q of %q is not a token label", typ, s)
		}
	})
}

func TestTokensStableAndUnique(t *testing.T) {
	r := newRewriter()
	out, err := r.Tokenize(ctx, "a@example.com, b@example.com, a@example.com; card 4111111111111111")
	if err != nil {
		t.Fatal(err)
	}
	want := "[EMAIL_ADDRESS_1], [EMAIL_ADDRESS_2], [EMAIL_ADDRESS_1]; card [CREDIT_CARD_1]"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	// Stable across calls on the same vault.
	out2, _ := r.Tokenize(ctx, "again b@example.com")
	if out2 != "again [EMAIL_ADDRESS_2]" {
		t.Errorf("got %q, want the same token as before", out2)
	}
	// Tokenizing tokenized text changes nothing.
	if again, _ := r.Tokenize(ctx, out); again != out {
		t.Errorf("Tokenize is not idempotent: %q -> %q", out, again)
	}
	// Unique per vault: many values, distinct tokens.
	v := NewVault()
	seen := map[string]string{}
	for i := range 500 {
		val := fmt.Sprintf("user%d@example.com", i)
		tok := v.Token(EmailAddress, val)
		if prev, dup := seen[tok]; dup {
			t.Fatalf("token %s given to %q and %q", tok, prev, val)
		}
		seen[tok] = val
	}
	if v.Len() != 500 {
		t.Errorf("Len = %d, want 500", v.Len())
	}
}

func TestRestoreGrantAndForgedTokens(t *testing.T) {
	r := newRewriter()
	tok, _ := r.Tokenize(ctx, "mail ann@example.com card 4111111111111111")
	got := r.Restore(tok+" [EMAIL_ADDRESS_7] [PHONE_NUMBER_1] [EMAIL_ADDRESS_1", Types(EmailAddress))
	want := "mail ann@example.com card [CREDIT_CARD_1] [EMAIL_ADDRESS_7] [PHONE_NUMBER_1] [EMAIL_ADDRESS_1"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := r.Restore(tok, NoTypes()); got != tok {
		t.Errorf("NoTypes restored something: %q", got)
	}
	// A token of another vault is foreign here.
	other := newRewriter()
	if got := other.Restore(tok, AllTypes()); got != tok {
		t.Errorf("foreign vault restored %q", got)
	}
}

func TestGrant(t *testing.T) {
	g := Types(EmailAddress, PhoneNumber, EmailAddress)
	if !g.Allows(EmailAddress) || g.Allows(CreditCard) || g.String() != "EMAIL_ADDRESS,PHONE_NUMBER" {
		t.Errorf("Types: %v", g)
	}
	if (Grant{}).Allows(EmailAddress) || !AllTypes().Allows("ANYTHING") {
		t.Error("zero grant allows, or AllTypes does not")
	}
	in := g.Intersect(Types(PhoneNumber, CreditCard))
	if !in.Allows(PhoneNumber) || in.Allows(EmailAddress) || in.Allows(CreditCard) {
		t.Errorf("Intersect: %v", in)
	}
	if got := AllTypes().Intersect(g); got.String() != g.String() {
		t.Errorf("AllTypes ∩ g = %v", got)
	}
}

func TestJSONNumbersRestoredAsNumbers(t *testing.T) {
	r := newRewriter()
	in := []byte(`{"card": 4111111111111111, "text":"card 4111111111111111", "n": 12, "nested":[{"ip":"10.0.0.1"}]}`)
	tok, err := r.TokenizeJSON(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"card": "[CREDIT_CARD_1]", "text":"card [CREDIT_CARD_2]", "n": 12, "nested":[{"ip":"[IP_ADDRESS_1]"}]}`
	if string(tok) != want {
		t.Errorf("tokenized: got %s, want %s", tok, want)
	}
	back, err := r.RestoreJSON(tok, AllTypes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, in) {
		t.Errorf("restored: got %s, want %s", back, in)
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(back))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if _, ok := v["card"].(json.Number); !ok {
		t.Errorf("card restored as %T, want a number", v["card"])
	}
	// Keys are not scanned.
	keyed, _ := r.TokenizeJSON(ctx, []byte(`{"ann@example.com":1}`))
	if string(keyed) != `{"ann@example.com":1}` {
		t.Errorf("key changed: %s", keyed)
	}
	// Escaped strings are decoded, scanned and re-encoded.
	esc, _ := r.TokenizeJSON(ctx, []byte(`["say \"hi\" to ann\u0040example.com\n"]`))
	if string(esc) != `["say \"hi\" to [EMAIL_ADDRESS_1]\n"]` {
		t.Errorf("escaped: got %s", esc)
	}
}

func TestArguments(t *testing.T) {
	r := newRewriter()
	if _, err := r.Tokenize(ctx, "ann@example.com 4111111111111111"); err != nil {
		t.Fatal(err)
	}
	// The model echoes one token and types a raw card number itself.
	args := []byte(`{"to":"[EMAIL_ADDRESS_1]","card":"5500 0000 0000 0004","ref":"[CREDIT_CARD_1]"}`)
	got, err := r.Arguments(ctx, args, Types(EmailAddress))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"to":"ann@example.com","card":"[CREDIT_CARD_2]","ref":"[CREDIT_CARD_1]"}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// Invalid JSON is handled as text.
	got, err = r.Arguments(ctx, []byte(`{"to": [EMAIL_ADDRESS_1] 5500 0000 0000 0004`), Types(EmailAddress))
	if err != nil || string(got) != `{"to": ann@example.com [CREDIT_CARD_2]` {
		t.Errorf("invalid JSON: got %s, %v", got, err)
	}
}

// randomPII returns a random value of a random type the built-ins find.
var piiSamples = map[EntityType][]string{
	EmailAddress: {"ann@example.com", "bob.k@mail.example.org", "x_y@corp.io"},
	CreditCard:   {"4111111111111111", "5500000000000004", "6011111111111117"},
	IBANCode:     {"GB82WEST12345698765432", "DE89370400440532013000"},
	IPAddress:    {"192.168.10.20", "2001:db8::8a2e:370:7334"},
	USSSN:        {"536-32-3065", "308-63-0237"},
	PhoneNumber:  {"+1 (415) 555-0132", "(978)645-9740"},
	Secret:       {"AKIAIOSFODNN7EXAMPLE"},
}

var piiTypes = []EntityType{EmailAddress, CreditCard, IBANCode, IPAddress, USSSN, PhoneNumber, Secret}

func randomPayload(rng *rand.Rand, depth int, used map[string]EntityType) any {
	pick := func() string {
		t := piiTypes[rng.IntN(len(piiTypes))]
		vs := piiSamples[t]
		v := vs[rng.IntN(len(vs))]
		used[v] = t
		return v
	}
	switch k := rng.IntN(6); {
	case depth > 3 || k == 0:
		return "note " + pick() + " end"
	case k == 1:
		return pick()
	case k == 2:
		return json.Number("4111111111111111")
	case k == 3:
		return json.Number(fmt.Sprint(rng.IntN(1000)))
	case k == 4:
		n := rng.IntN(4)
		a := make([]any, n)
		for i := range a {
			a[i] = randomPayload(rng, depth+1, used)
		}
		return a
	default:
		m := map[string]any{}
		for i := range rng.IntN(4) {
			m[fmt.Sprintf("k%d", i)] = randomPayload(rng, depth+1, used)
		}
		return m
	}
}

// TestRestoreJSONProperty: over random nested payloads and random grants,
// the restored payload holds exactly the originals of granted types.
func TestRestoreJSONProperty(t *testing.T) {
	seed := testSeed(t, 1)
	rng := rand.New(rand.NewPCG(seed, 2))
	s := NewScanner(nil)
	for iter := range 300 {
		used := map[string]EntityType{}
		payload := randomPayload(rng, 0, used)
		data, _ := json.Marshal(payload)
		if bytes.Contains(data, []byte("4111111111111111")) {
			used["4111111111111111"] = CreditCard
		}
		var granted []EntityType
		for _, t := range piiTypes {
			if rng.IntN(2) == 0 {
				granted = append(granted, t)
			}
		}
		g := Types(granted...)
		r := NewRewriter(s, NewVault())
		tok, err := r.TokenizeJSON(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		for v := range used {
			if bytes.Contains(tok, []byte(v)) {
				t.Fatalf("iteration %d: tokenized payload holds %q: %s", iter, v, tok)
			}
		}
		back, err := r.RestoreJSON(tok, g)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(back) {
			t.Fatalf("iteration %d: invalid JSON %s", iter, back)
		}
		for v, typ := range used {
			has := bytes.Contains(back, []byte(v))
			if g.Allows(typ) != has {
				t.Fatalf("iteration %d: grant %v, value %q of %s present=%v in %s", iter, g, v, typ, has, back)
			}
		}
		all, _ := r.RestoreJSON(tok, AllTypes())
		if !jsonEqual(all, data) {
			t.Fatalf("iteration %d: restore with all types: got %s, want %s", iter, all, data)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func FuzzRewriteJSON(f *testing.F) {
	for _, s := range []string{`{"a":"ann@example.com","b":[4111111111111111,"x"]}`, `"192.168.1.1"`, `[1,2.5e3,null,true]`,
		`{"k":{"n":"call +1 415 555 0132 or GB82WEST12345698765432"}}`, `"\u0041KIAIOSFODNN7EXAMPLE"`} {
		f.Add([]byte(s))
	}
	s := NewScanner(nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewRewriter(s, NewVault())
		tok, err := r.TokenizeJSON(ctx, data)
		if !json.Valid(data) {
			if !errors.Is(err, ErrInvalidJSON) {
				var le *LimitError
				if !errors.As(err, &le) {
					t.Fatalf("invalid JSON: got error %v", err)
				}
			}
			return
		}
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				return
			}
			t.Fatal(err)
		}
		if !json.Valid(tok) {
			t.Fatalf("tokenized payload is not valid JSON: %q", tok)
		}
		back, err := r.RestoreJSON(tok, AllTypes())
		if err != nil {
			t.Fatal(err)
		}
		// Text that already holds tokens of the vault restores to their
		// values by design; compare only payloads without token syntax.
		if hasTokenSyntax(string(data)) {
			return
		}
		if !jsonEqual(back, data) {
			t.Fatalf("restore(tokenize(x)) != x:\n x: %q\n t: %q\n r: %q", data, tok, back)
		}
	})
}

func hasTokenSyntax(s string) bool {
	if strings.Contains(s, `\u`) || strings.Contains(s, `\`) {
		return true // escapes may spell a token
	}
	for i := range len(s) {
		if tokenAt(s, i) > 0 {
			return true
		}
	}
	return false
}

func TestOutputModes(t *testing.T) {
	r := newRewriter()
	if _, err := r.Tokenize(ctx, "ann@example.com 4111111111111111"); err != nil {
		t.Fatal(err)
	}
	text := "Mail [EMAIL_ADDRESS_1], card [CREDIT_CARD_1], new 536-32-3065, forged [EMAIL_ADDRESS_9]."
	g := Types(EmailAddress, USSSN)
	tests := []struct {
		mode OutputMode
		want string
	}{
		{ModeTokens, "Mail [EMAIL_ADDRESS_1], card [CREDIT_CARD_1], new [US_SSN_1], forged [EMAIL_ADDRESS_9]."},
		{ModeRestore, "Mail ann@example.com, card [CREDIT_CARD_1], new 536-32-3065, forged [EMAIL_ADDRESS_9]."},
		{ModeRedact, "Mail [REDACTED EMAIL_ADDRESS], card [REDACTED CREDIT_CARD], new [REDACTED US_SSN], forged [EMAIL_ADDRESS_9]."},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			r := newRewriter()
			r.Tokenize(ctx, "ann@example.com 4111111111111111")
			got, err := r.Output(ctx, text, tt.mode, g)
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	_, err := r.Output(ctx, text, ModeBlock, g)
	var be *BlockedError
	if !errors.As(err, &be) || be.Count != 1 || len(be.Types) != 1 || be.Types[0] != USSSN {
		t.Errorf("block: got %v, want a BlockedError for one US_SSN", err)
	}
	if strings.Contains(err.Error(), "536-32-3065") {
		t.Errorf("error %q holds the value", err)
	}
	// Only values already in the vault: not blocked, and shown as in
	// tokens mode.
	if got, err := r.Output(ctx, "again ann@example.com [CREDIT_CARD_1]", ModeBlock, g); err != nil || got != "again [EMAIL_ADDRESS_1] [CREDIT_CARD_1]" {
		t.Errorf("block with known values: %q, %v", got, err)
	}
}
