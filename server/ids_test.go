package server

import (
	"regexp"
	"slices"
	"testing"
	"time"
)

func TestConversationIDs(t *testing.T) {
	shape := regexp.MustCompile(`^conv_[0-9A-V]{10}[A-Z2-7]{26}$`)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var ids []string
	for _, d := range []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, time.Hour, 24 * 365 * time.Hour, 100 * 24 * 365 * time.Hour} {
		id := newConversationIDAt(base.Add(d))
		if !shape.MatchString(id) {
			t.Errorf("id %q does not have the documented shape", id)
		}
		ids = append(ids, id)
	}
	// Ids sort by creation time (to the millisecond), whatever their
	// random part.
	if !slices.IsSorted(ids) {
		t.Errorf("ids of increasing times do not sort in that order: %v", ids)
	}
	// Two ids of the same millisecond differ.
	if a, b := newConversationIDAt(base), newConversationIDAt(base); a == b || a[:15] != b[:15] {
		t.Errorf("ids of one millisecond: %q and %q, want the same time prefix and different ids", a, b)
	}
	// A time before 1970 does not wrap around.
	if id := newConversationIDAt(time.Unix(-1, 0)); id[5:15] != "0000000000" {
		t.Errorf("id before the epoch: %q", id)
	}
}
