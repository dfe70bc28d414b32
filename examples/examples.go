// Package examples holds example configuration files, embedded so that
// programs (such as the demo of cmd/toolgate) can use them from anywhere.
package examples

import _ "embed"

// FlightsCedar is flights.cedar: the Cedar policies of the flight demo.
// User "alice" (role traveller) may see and run flightStatus and
// bookFlight; "bob" (role guest) may see and run flightStatus only.
//
//go:embed flights.cedar
var FlightsCedar string
