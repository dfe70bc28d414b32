package privacy

import "testing"

// TestEmbeddedTypesCopy: a caller that changes the list it got changes
// nothing the recognizer uses.
func TestEmbeddedTypesCopy(t *testing.T) {
	got := EmbeddedTypes()
	if len(got) == 0 || got[0] != Person {
		t.Fatalf("EmbeddedTypes() = %v, want Person first", got)
	}
	got[0] = EmailAddress
	if again := EmbeddedTypes(); again[0] != Person {
		t.Errorf("after changing the returned slice, EmbeddedTypes() = %v", again)
	}
}
