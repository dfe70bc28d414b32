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
	if got := testing.AllocsPerRun(100, func() { randomID("conv_") }); got != 1 && !RaceDetector {
		t.Errorf("got %v allocations, want 1", got)
	}
}

// TestIdempotencyKeyValues pins keys as earlier versions computed them:
// tools pass them to other services, so they must not change.
func TestIdempotencyKeyValues(t *testing.T) {
	for _, tt := range []struct{ conv, pause, key, want string }{
		{"conv_1", "pause_1", "c1", "tg_9ed1834f7375393623c7169a221af1fc"},
		{"", "", "", "tg_9d908ecfb6b256def8b49a7c504e6c88"},
		{strings.Repeat("x", 300), "p", "k", "tg_96b5e11b7be9667155034d5d802049d5"},
	} {
		if got := IdempotencyKey(tt.conv, tt.pause, tt.key); got != tt.want {
			t.Errorf("IdempotencyKey(%q, %q, %q) = %q, want %q", tt.conv, tt.pause, tt.key, got, tt.want)
		}
	}
	if got := testing.AllocsPerRun(100, func() { IdempotencyKey("conv_1", "pause_1", "c1") }); got != 1 && !RaceDetector {
		t.Errorf("got %v allocations, want 1", got)
	}
}
