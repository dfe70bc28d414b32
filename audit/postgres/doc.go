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
// Every append runs in a transaction that first takes an advisory lock
// (pg_advisory_xact_lock) keyed by the schema's name, then reads the last
// record and inserts the new ones after it. The lock is held until the
// transaction ends, so appends from all instances are serialized by the
// database, and a transaction that reads the head always sees the records
// of the one before it. [Log.AppendTx] appends inside a transaction of the
// caller's, so that audit records commit atomically with the change they
// describe (package github.com/toolgate/toolgate/store/postgres does that).
//
// # Schema
//
// The tables can share a schema with other tables (those of package
// store/postgres, say): their version is kept in the table audit_schema.
//
//   - audit_records (seq bigint PRIMARY KEY, conversation_id, body): one
//     row per record; body is the record's JSON form (see [audit.Record]),
//     seq and conversation_id repeat its fields for ordering and lookup.
//
// A row whose body does not decode, or disagrees with its seq or
// conversation_id columns, ends [Log.Records] with a [*audit.RecordError];
// it never panics.
package postgres
