// Package postgres keeps an [audit.Log] in a PostgreSQL database: one
// hash chain per schema, shared by every instance of a service that
// writes to it, on any number of machines. It uses
// github.com/jackc/pgx/v5.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate/audit"
//		"github.com/toolgate/toolgate/audit/postgres"
//	)
//
//	func main() {
//		ctx := context.Background()
//		l, err := postgres.Open(ctx, "postgres://toolgate@db/toolgate", &postgres.Options{Schema: "toolgate"})
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer l.Close()
//		r := &audit.Record{ConversationID: "trip-42", Kind: audit.KindExpired, Actor: audit.Actor{Source: audit.SourceSystem}}
//		if err := l.Append(ctx, r); err != nil {
//			log.Fatal(err)
//		}
//		report, err := audit.Verify(ctx, l, nil)
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(report.Records, "records intact; head", report.Head)
//	}
//
// # One chain, many writers
//
// The chain is extended by one writer at a time, for every instance of
// the schema: a transaction that first takes an advisory lock
// (pg_advisory_xact_lock) keyed by the schema's name, then reads the last
// record and inserts the new ones after it. [Log.Append] does that at
// once. [Log.QueueTx] and [Log.AppendTx] write records inside a
// transaction of the caller's, so that they commit atomically with the
// change they describe (package github.com/toolgate/toolgate/store/postgres
// does that), but unsealed: without a place in the chain and without the
// lock, so that such transactions never wait for one another. Each Log
// runs a sealer that seals the records committed but not sealed yet, in
// batches, in the order they were inserted: shortly after [Log.Wake], and
// every [Options.SealInterval] whoever wrote them (an instance that
// crashed included). [Log.Records] returns the unsealed records after the
// sealed ones, and [audit.Verify] counts them apart
// ([audit.Report.Unsealed]). A seal batch is one transaction: a crash
// during it leaves its records unsealed, for the next batch.
//
// # Schema
//
// The tables can share a schema with other tables (those of package
// store/postgres, say): their version is kept in the table audit_schema.
//
//   - audit_records (seq bigint PRIMARY KEY, conversation_id, body): one
//     row per record; body is the record's JSON form (see [audit.Record]),
//     seq and conversation_id repeat its fields for ordering and lookup.
//   - audit_unsealed (id identity PRIMARY KEY, conversation_id, body): the
//     records committed but not sealed yet, in the order of id; body is
//     the JSON form of an unsealed record (seq 0, empty hashes). Added by
//     version 2; the records of audit_records stay as they were.
//
// A row whose body does not decode, or disagrees with its seq or
// conversation_id columns, ends [Log.Records] with a [*audit.RecordError];
// it never panics. An unsealed row that does not decode stops sealing,
// neither sealed nor skipped, until it is repaired.
package postgres
