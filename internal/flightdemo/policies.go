package flightdemo

import _ "embed"

// Policies are the Cedar policies of the story, the same text as
// examples/flights.cedar (a test keeps the two equal): user "alice" (role
// traveller) may see and run flightStatus and bookFlight; "bob" (role
// guest) may see and run flightStatus only.
//
//go:embed flights.cedar
var Policies string
