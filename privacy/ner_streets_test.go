package privacy

import (
	"strings"
	"testing"
)

// TestStreetTypesOfAnyLanguage: after a house number, capitalised words
// that end with a street type of libpostal's lists (Skyway, Lk, Knolls)
// are a street line, though no closed list of the recognizer holds the
// type. The sentences are written for this test.
func TestStreetTypesOfAnyLanguage(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Pick me up from 4810 Quillon Skyway at noon.", []string{"ADDRESS:4810 Quillon Skyway"}},
		{"I'm waiting at 77 Marden Knolls now.", []string{"ADDRESS:77 Marden Knolls"}},
		{"The depot at 3 Ebbrook Lk opens at nine.", []string{"ADDRESS:3 Ebbrook Lk"}},
	})
	// A count before common words that end like a street type is no
	// street, nor is a number before a single street type.
	for _, text := range []string{
		"We planted 40 Maple Groves and 12 Cherry Orchards.",
		"The 24 Hour Fitness Club is closed.",
		"We sold 12 Sunny Vistas last spring.",
		"Gate 4 Skyway is closed.",
	} {
		for _, f := range embeddedFindings(t, text) {
			if strings.HasPrefix(f, "ADDRESS:") {
				t.Errorf("%q: found %s", text, f)
			}
		}
	}
}
