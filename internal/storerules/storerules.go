// Package storerules carries the rules every conversation store enforces
// from the core package, which defines them next to the types they judge,
// to package storekit, which publishes them for store implementers. The
// core cannot import storekit (storekit imports the core), so the core
// registers its rule functions here when it is initialised and storekit
// reads them, with their types, when it is initialised in turn.
//
// Nothing but the core and storekit may use it.
package storerules

// The core's rule functions, set by package toolgate's initialisation.
// Their dynamic types are those of storekit's functions of the same names.
var (
	ValidateAppend any
	ValidateClaim  any
	ValidateMark   any
)
