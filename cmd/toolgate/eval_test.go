package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalPII(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	// Offsets count code points: "é" before the e-mail is one position.
	data := `[{"full_text":"é mail ada@example.com now","spans":[{"entity_type":"EMAIL_ADDRESS","entity_value":"ada@example.com","start_position":7,"end_position":22}]},
	{"full_text":"card 4111 1111 1111 1111","spans":[{"entity_type":"CREDIT_CARD","start_position":5,"end_position":24}]}]`
	if err := os.WriteFile(good, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte(`{"not":"a list"`), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"scores", []string{"eval", "pii", "--data", good}, 0, "EMAIL_ADDRESS   1   0   0      1.000   1.000  1.000"},
		{"min f2 met", []string{"eval", "pii", "--data", good, "--min-f2", "0.99"}, 0, "ALL"},
		{"min f2 missed", []string{"eval", "pii", "--data", good, "--min-f2", "1.5"}, 1, "below"},
		{"no data flag", []string{"eval", "pii"}, 2, "--data FILE"},
		{"missing file", []string{"eval", "pii", "--data", filepath.Join(dir, "none.json")}, 1, "no such file"},
		{"garbage", []string{"eval", "pii", "--data", garbage}, 1, "garbage.json"},
		{"no subject", []string{"eval"}, 2, "Usage: toolgate eval pii"},
		{"wrong subject", []string{"eval", "names"}, 2, "Usage: toolgate eval pii"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runArgs(t, "", false, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out+errOut, tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, out, errOut)
			}
		})
	}
}
