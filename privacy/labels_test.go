package privacy_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/privacy"
)

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]privacy.EntityType
		err  string
	}{
		{in: "", want: map[string]privacy.EntityType{}},
		{in: "  ", want: map[string]privacy.EntityType{}},
		{in: "GPE=LOCATION,PER=PERSON", want: map[string]privacy.EntityType{"GPE": privacy.Location, "PER": privacy.Person}},
		{in: " GPE = LOCATION , MISC= ", want: map[string]privacy.EntityType{"GPE": privacy.Location, "MISC": ""}},
		{in: "GPE", err: "not LABEL=TYPE"},
		{in: "=PERSON", err: "not LABEL=TYPE"},
		{in: "GPE=LOCATION,", err: "not LABEL=TYPE"},
		{in: "GPE=LOCATION,GPE=PERSON", err: "mapped twice"},
		{in: "GPE=LOCATION, GPE =LOCATION", err: "mapped twice"},
	}
	for _, tt := range tests {
		got, err := privacy.ParseLabels(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || got != nil {
				t.Errorf("ParseLabels(%q) = %v, %v; want nil and an error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseLabels parses arbitrary text as the --labels flag. It either
// fails, or gives a map of trimmed, non-empty labels that written back in
// the flag's form parses to the same map; it never panics.
func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"", "GPE=LOCATION,PER=PERSON", "MISC=", "a=b,a=c", "=", ",", "x==y", " k = v "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := privacy.ParseLabels(s)
		if err != nil {
			return
		}
		var parts []string
		for k, v := range m {
			if k == "" || k != strings.TrimSpace(k) || string(v) != strings.TrimSpace(string(v)) {
				t.Fatalf("ParseLabels(%q) gave entry %q=%q: not trimmed or empty", s, k, v)
			}
			if strings.ContainsAny(k, ",=") || strings.Contains(string(v), ",") {
				t.Fatalf("ParseLabels(%q) gave entry %q=%q holding a separator", s, k, v)
			}
			parts = append(parts, k+"="+string(v))
		}
		back, err := privacy.ParseLabels(strings.Join(parts, ","))
		if err != nil || !maps.Equal(back, m) {
			t.Errorf("ParseLabels(%q) = %v, written back parses as %v, %v", s, m, back, err)
		}
	})
}
