// Package storerules carries the rules every conversation store enforces
// from the core package, which defines them next to the types they judge,
// to package storekit, which publishes them for store implementers, and the
// core's in-memory store to package store/memory, which publishes it for
// programs. The core cannot import either (both import the core), so the
// core registers its functions here when it is initialised and the two
// packages read them, with their types, when they are initialised in turn.
//
// Nothing but the core, storekit and store/memory may use it.
package storerules

// The core's rule functions, set by package toolgate's initialisation.
// Their dynamic types are those of storekit's functions of the same names.
var (
	ValidateAppend any
	ValidateClaim  any
	ValidateMark   any
	// NewMemoryStore is a func() toolgate.ConversationStore returning an
	// empty in-memory store.
	NewMemoryStore any
)
