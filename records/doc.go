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
package records
