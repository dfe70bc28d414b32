package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalPII(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Offsets count code points: "é" before the e-mail is one position.
	good := write("good.json", `[{"full_text":"é mail ada@example.com now","spans":[{"entity_type":"EMAIL_ADDRESS","entity_value":"ada@example.com","start_position":7,"end_position":22}]},
	{"full_text":"card 4111 1111 1111 1111","spans":[{"entity_type":"CREDIT_CARD","start_position":5,"end_position":24}]}]`)
	// A type the scanner never reports, a label that needs a map, and a
	// prediction (the e-mail) of a type the file does not label.
	other := write("other.json", `[{"full_text":"Badge K-77 of Anna Schmidt, ann@example.com","spans":[{"entity_type":"BADGE","start_position":6,"end_position":10},{"entity_type":"PER","start_position":14,"end_position":26}]}]`)
	garbage := write("garbage.json", `{"not":"a list"`)
	wrongShape := write("wrong.json", `[{"text":"no full_text here","labels":[]}]`)
	badSpan := write("badspan.json", `[{"full_text":"short","spans":[{"entity_type":"PERSON","start_position":2,"end_position":40}]}]`)
	empty := write("empty.json", `[]`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"scores", []string{"eval", "pii", "--data", good}, 0, []string{"EMAIL_ADDRESS        1   1   0   0      1.000   1.000  1.000", "ANY", "token level", "EMAIL_ADDRESS        5   5   0   0      1.000   1.000  1.000", "CREDIT_CARD        4   4"}},
		{"min f2 met", []string{"eval", "pii", "--data", good, "--min-f2", "0.99", "--min-type-f2", "CREDIT_CARD=1,EMAIL_ADDRESS=0.9"}, 0, []string{"ALL"}},
		{"min f2 missed", []string{"eval", "pii", "--data", good, "--min-f2", "1.5"}, 1, []string{"below"}},
		{"type threshold without support", []string{"eval", "pii", "--data", good, "--min-type-f2", "PERSON=0.8"}, 1, []string{"PERSON has no labelled values"}},
		{"never detected type is a miss", []string{"eval", "pii", "--data", other}, 0, []string{"BADGE        1   0   0   1        n/a   0.000  0.000", "predicted, not labelled", "EMAIL_ADDRESS        0   0   1   0      0.000     n/a    n/a"}},
		{"labels map", []string{"eval", "pii", "--data", other, "--labels", "PER=PERSON,BADGE=", "--min-type-f2", "PERSON=0.9"}, 0, []string{"PERSON        1   1   0   0      1.000   1.000  1.000"}},
		{"bad labels flag", []string{"eval", "pii", "--data", good, "--labels", "GPE"}, 2, []string{"LABEL=TYPE"}},
		{"bad threshold", []string{"eval", "pii", "--data", good, "--min-type-f2", "PERSON=high"}, 2, []string{"not a number"}},
		{"no data flag", []string{"eval", "pii"}, 2, []string{"--data FILE"}},
		{"missing file", []string{"eval", "pii", "--data", filepath.Join(dir, "none.json")}, 1, []string{"no such file"}},
		{"garbage", []string{"eval", "pii", "--data", garbage}, 1, []string{"garbage.json", "not labelled evaluation data"}},
		{"wrong shape", []string{"eval", "pii", "--data", wrongShape}, 1, []string{"no full_text"}},
		{"span outside text", []string{"eval", "pii", "--data", badSpan}, 1, []string{"outside a text"}},
		{"no records", []string{"eval", "pii", "--data", empty}, 1, []string{"no records"}},
		{"no subject", []string{"eval"}, 2, []string{"Usage: toolgate eval pii"}},
		{"wrong subject", []string{"eval", "names"}, 2, []string{"Usage: toolgate eval pii"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runArgs(t, "", false, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}
