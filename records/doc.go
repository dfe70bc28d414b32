// Package records keeps the approval service's own records (package
// server): who owns each conversation, who or what decided each pause
// and how it went, the index of the pauses waiting for a decision, first
// approvals under a two-person rule, and sticky grants. The messages of
// the conversations stay in the agents' conversation stores.
//
//	rs := records.NewMemory()
//	// or, sharing the conversation store's database:
//	//   rs, err := sqliteStore.Records(ctx)
//	//   rs, err := postgresStore.Records(ctx)
//	srv, err := server.New(&server.Config{Agents: agents, Records: rs})
//
// [Store] is the interface the server uses and the SQL stores implement;
// [Memory] is its in-memory implementation, and package recordstest its
// conformance kit. The exactly-once take of a pause is [Store.Begin]: an
// atomic insert-if-absent of the pause's [Decision], across processes for
// the SQL stores.
//
// # One transaction per step
//
// The record stores of the SQL stores are [Transactional]: their database
// also holds the conversations and an audit log. A [Hook] attached to a
// context with [WithHook] runs inside the transaction of each write the
// conversation store makes with that context, and writes records and
// audit records ([Tx]) that commit or roll back with it: a pause is
// stored together with its index entry and its requested audit records,
// a claim together with the decision record and its decided records. Any
// other conversation store ignores the hook, which can tell from whether
// it ran.
package records
