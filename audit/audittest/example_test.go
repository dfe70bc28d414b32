package audittest_test

import (
	"testing"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
)

// An implementation's test runs the kit with a function that makes an
// empty log and returns how to open more handles on it.
func ExampleRun() {
	_ = func(t *testing.T) {
		audittest.Run(t, func(t *testing.T) audittest.Opener {
			l := audit.NewMemoryLog()
			return func(*testing.T) audit.Log { return l }
		})
	}
}
