package toolgate

import (
	"strings"
	"testing"
)

func TestRandomID(t *testing.T) {
	seen := map[string]bool{}
	for _, prefix := range []string{"", "conv_", strings.Repeat("p", 38), strings.Repeat("p", 39)} {
		for range 100 {
			id := randomID(prefix)
			rest, ok := strings.CutPrefix(id, prefix)
			if !ok || len(rest) != 26 || strings.Trim(rest, base32) != "" {
				t.Fatalf("randomID(%q) = %q, want the prefix and 26 characters of %s", prefix, id, base32)
			}
			if seen[id] {
				t.Fatalf("randomID(%q) repeated %q", prefix, id)
			}
			seen[id] = true
		}
	}
	if got := testing.AllocsPerRun(100, func() { randomID("conv_") }); got != 1 {
		t.Errorf("got %v allocations, want 1", got)
	}
}
