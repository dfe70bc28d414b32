package records_test

import (
	"testing"

	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/records/recordstest"
)

func TestMemory(t *testing.T) {
	recordstest.Run(t, func(*testing.T) records.Store { return records.NewMemory() })
}

func BenchmarkMemory(b *testing.B) {
	recordstest.Benchmark(b, func(*testing.B) records.Store { return records.NewMemory() })
}
