package recordstest_test

import (
	"testing"

	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/records/recordstest"
)

// A records store's own tests run the kit with a constructor of empty
// stores; this is how the in-memory store is checked.
func ExampleRun() {
	testMemoryRecords := func(t *testing.T) {
		recordstest.Run(t, func(t *testing.T) records.Store { return records.NewMemory() })
	}
	_ = testMemoryRecords // run as: func TestRecords(t *testing.T) { testMemoryRecords(t) }
}
