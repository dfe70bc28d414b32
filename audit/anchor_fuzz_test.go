package audit_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// FuzzParseAnchor parses arbitrary text as an anchor (the --anchor flag
// and the stored anchor file are read with it). An accepted anchor has a
// sequence number from 1 and a 64-digit lower-case hex hash, and its text
// form parses back to it; anything else is an error and the zero anchor,
// never a panic.
func FuzzParseAnchor(f *testing.F) {
	h := strings.Repeat("3f", 32)
	for _, s := range []string{"1:" + h, "42:" + h, "0:" + h, "18446744073709551615:" + h, "18446744073709551616:" + h,
		"+1:" + h, "01:" + h, "1:" + strings.ToUpper(h), "1:" + h[:63], "1:" + h + "0", ":", "", "1", "1:" + h + ":1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := audit.ParseAnchor(s)
		if err != nil {
			if a != (audit.Anchor{}) {
				t.Errorf("ParseAnchor(%q) failed with %v but returned %v", s, err, a)
			}
			return
		}
		if a.Seq == 0 || len(a.Hash) != 64 || strings.Trim(a.Hash, "0123456789abcdef") != "" {
			t.Errorf("ParseAnchor(%q) = %+v: not a valid anchor", s, a)
		}
		back, err := audit.ParseAnchor(a.String())
		if err != nil || back != a {
			t.Errorf("ParseAnchor(%q) = %+v, whose text form %q parses as %+v, %v", s, a, a.String(), back, err)
		}
	})
}
