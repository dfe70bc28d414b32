// Package sqlite keeps an [audit.Log] in a SQLite database file, shared
// safely by several goroutines and several processes. It uses
// modernc.org/sqlite, so it needs no cgo.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate/audit"
//		"github.com/toolgate/toolgate/audit/sqlite"
//	)
//
//	func main() {
//		ctx := context.Background()
//		l, err := sqlite.Open(ctx, "audit.db", nil)
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer l.Close()
//		r := &audit.Record{ConversationID: "trip-42", Kind: audit.KindExpired, Actor: audit.Actor{Source: audit.SourceSystem}}
//		if err := l.Append(ctx, r); err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println("appended record", r.Seq)
//	}
//
// # Concurrency and durability
//
// The database is in WAL journal mode: readers do not wait for the writer.
// Every append runs in a BEGIN IMMEDIATE transaction, which takes SQLite's
// write lock before it reads the last record, so appends are serialized
// across goroutines and processes and the chain never forks; an appender
// that finds the lock taken waits up to [Options.BusyTimeout]. Commits are
// synchronous (PRAGMA synchronous = FULL): an appended record survives a
// crash.
//
// A Log made by [NewShared] appends inside the transactions of the
// database's owner. Made by [NewSharedWith] with
// [SharedOptions.ReportsUndone], it reads the last record once per
// transaction, at its first append there, and chains the later appends of
// the transaction after the records it appended itself (no other
// connection writes while the transaction holds the write lock); the
// owner calls [Log.Undone] when it rolls back a part of the transaction,
// and the next append reads the last record again. The conversation store
// of package github.com/toolgate/toolgate/store/sqlite, whose group
// commits run many writes in one transaction, each in a savepoint, makes
// its log so.
//
// # Schema
//
// The tables can share a file with other tables (those of package
// github.com/toolgate/toolgate/store/sqlite, say): their version is kept in
// the table audit_schema, not in the database's user_version.
//
//   - audit_records (seq INTEGER PRIMARY KEY, conversation_id, body): one
//     row per record; body is the record's JSON form (see [audit.Record]),
//     seq and conversation_id repeat its fields for ordering and lookup.
//
// A row whose body does not decode, or disagrees with its seq or
// conversation_id columns, ends [Log.Records] with a [*audit.RecordError];
// it never panics.
package sqlite
