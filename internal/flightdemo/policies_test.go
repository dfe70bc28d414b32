package flightdemo_test

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
)

// TestPoliciesMatchExample: the embedded policies are the example file's.
func TestPoliciesMatchExample(t *testing.T) {
	example, err := os.ReadFile("../../examples/flights.cedar")
	if err != nil {
		t.Fatal(err)
	}
	if string(example) != flightdemo.Policies {
		t.Error("internal/flightdemo/flights.cedar differs from examples/flights.cedar; copy the example over it")
	}
}
