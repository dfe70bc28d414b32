package audittest_test

import (
	"testing"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/audittest"
)

func TestMemoryLog(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audittest.Opener {
		l := audit.NewMemoryLog()
		return func(*testing.T) audit.Log { return l }
	})
}
