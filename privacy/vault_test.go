package privacy

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	r := newRewriter()
	tok, _ := r.TokenizeJSON(ctx, []byte(`{"c":4111111111111111,"m":"ann@example.com"}`))
	sealed, err := r.Vault().Seal(key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("ann@example.com")) || sealed[0] != sealVersion {
		t.Fatal("sealed vault is not encrypted or not versioned")
	}
	v, err := OpenVault(key, sealed)
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRewriter(NewScanner(nil), v)
	back, err := r2.RestoreJSON(tok, AllTypes())
	if err != nil || string(back) != `{"c":4111111111111111,"m":"ann@example.com"}` {
		t.Fatalf("restored from the opened vault: %s, %v", back, err)
	}
	// Counters survive: a new value gets a new token.
	if got := v.Token(EmailAddress, "bob@example.com"); got != "[EMAIL_ADDRESS_2]" {
		t.Errorf("new token after open = %s", got)
	}
	// Two seals of the same vault differ (random nonce).
	again, _ := r.Vault().Seal(key)
	if bytes.Equal(again, sealed) {
		t.Error("nonce reused")
	}

	wrong := bytes.Repeat([]byte{8}, 32)
	if _, err := OpenVault(wrong, sealed); !errors.Is(err, ErrVaultKey) {
		t.Errorf("wrong key: got %v", err)
	}
	for _, i := range []int{1, 20, len(sealed) - 1} {
		bad := bytes.Clone(sealed)
		bad[i] ^= 1
		if _, err := OpenVault(key, bad); !errors.Is(err, ErrVaultKey) {
			t.Errorf("tampered byte %d: got %v", i, err)
		}
	}
	bad := bytes.Clone(sealed)
	bad[0] = 9
	if _, err := OpenVault(key, bad); err == nil {
		t.Error("unknown version accepted")
	}
	if _, err := OpenVault(key, sealed[:10]); !errors.Is(err, ErrVaultKey) {
		t.Errorf("truncated: got %v", err)
	}
	if _, err := r.Vault().Seal(key[:16]); !errors.Is(err, ErrVaultKey) {
		t.Errorf("short key: got %v", err)
	}
}

// TestLimitsAndErrorsHoldNoValues checks each limit and that no error
// string quotes a value of the input.
func TestLimitsAndErrorsHoldNoValues(t *testing.T) {
	secret := "ann@example.com"
	small := NewScanner(&ScannerOptions{Limits: Limits{MaxBytes: 64, MaxDepth: 3, MaxNodes: 5, MaxFindings: 2}})
	r := NewRewriter(small, NewVault())
	cases := []struct {
		name  string
		limit string
		run   func() error
	}{
		{"bytes", "bytes", func() error {
			_, err := r.Tokenize(ctx, secret+strings.Repeat(" ", 64))
			return err
		}},
		{"json bytes", "bytes", func() error {
			_, err := r.TokenizeJSON(ctx, []byte(`"`+secret+strings.Repeat(" ", 64)+`"`))
			return err
		}},
		{"depth", "depth", func() error {
			_, err := r.TokenizeJSON(ctx, []byte(`[[[["`+secret+`"]]]]`))
			return err
		}},
		{"nodes", "nodes", func() error {
			_, err := r.TokenizeJSON(ctx, []byte(`[1,2,3,4,5,"`+secret+`"]`))
			return err
		}},
		{"findings", "findings", func() error {
			_, err := r.Tokenize(ctx, secret+" a@example.com b@example.com")
			return err
		}},
		{"json findings", "findings", func() error {
			_, err := r.TokenizeJSON(ctx, []byte(`["`+secret+`","a@example.com","b@example.com"]`))
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != c.limit {
				t.Fatalf("got %v, want a LimitError for %s", err, c.limit)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds the value", err)
			}
		})
	}
	_, err := r.TokenizeJSON(ctx, []byte(`{"a":"`+secret+`"`))
	if !errors.Is(err, ErrInvalidJSON) || strings.Contains(err.Error(), secret) {
		t.Errorf("invalid JSON: %v", err)
	}
	be := &BlockedError{Types: []EntityType{EmailAddress}, Count: 1}
	if strings.Contains(be.Error(), "@") {
		t.Errorf("blocked error %q", be)
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{streamText, "a@b.co 4111 1111 1111 1111", "::1 fe80::1 00:11:22:33:44:55", "GB82 WEST 1234 5698 7654 32",
		"+1 (415) 555-0132 x12", "eyJhbGciOiJub25lIn0.eyJ9.", "http://x.io/(a)", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"} {
		f.Add(s)
	}
	s := NewScanner(&ScannerOptions{Recognizers: append(Builtins(), NewDictionary(Person, []string{"Ann", "Ann Lee", "nn"}, &DictionaryOptions{IgnoreCase: true}))})
	f.Fuzz(func(t *testing.T, text string) {
		fs, err := s.Scan(context.Background(), text)
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				return
			}
			t.Fatal(err)
		}
		prev := 0
		for _, x := range fs {
			if x.Start < prev || x.Start >= x.End || x.End > len(text) || x.Score < 0.5 || x.Type == "" {
				t.Fatalf("bad finding %+v after %d in %q: %+v", x, prev, text, fs)
			}
			prev = x.End
		}
	})
}
