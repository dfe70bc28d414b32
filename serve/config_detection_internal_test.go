package serve

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/privacy"
)

// TestDetectionScanner: the scanner built from the detection settings
// finds names only when the embedded recognizer is on for them, and keeps
// the built-in recognizers always.
func TestDetectionScanner(t *testing.T) {
	const text = "Margaret Hamilton, margaret@example.com, lives in Boston"
	for _, tc := range []struct {
		name string
		d    DetectionSpec
		want []privacy.EntityType
	}{
		{"default", DetectionSpec{}, []privacy.EntityType{privacy.Person, privacy.EmailAddress, privacy.Location}},
		{"embedded off", DetectionSpec{Embedded: []string{"none"}}, []privacy.EntityType{privacy.EmailAddress}},
		{"persons only", DetectionSpec{Embedded: []string{"PERSON"}}, []privacy.EntityType{privacy.Person, privacy.EmailAddress}},
		{"high minimum score", DetectionSpec{MinScore: 0.99}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.d.scanner()
			if s == nil {
				s = privacy.NewScanner(nil)
			}
			fs, err := s.Scan(context.Background(), text)
			if err != nil {
				t.Fatal(err)
			}
			var got []privacy.EntityType
			for _, f := range fs {
				got = append(got, f.Type)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
