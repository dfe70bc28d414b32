package examples_test

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/examples"
)

// The demo's Cedar policies are embedded in the program.
func Example() {
	for _, line := range strings.Split(examples.FlightsCedar, "\n") {
		if strings.HasPrefix(line, "@id(") {
			fmt.Println(line)
		}
	}
	// Output:
	// @id("traveller-flights")
	// @id("guest-flight-status")
	// @id("at-most-nine-seats")
}
