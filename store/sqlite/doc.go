// Package sqlite keeps toolgate conversations in a SQLite database file: a
// durable [toolgate.ConversationStore] that several goroutines and several
// processes can share. It uses modernc.org/sqlite, so it needs no cgo.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/store/sqlite"
//	)
//
//	func main() {
//		ctx := context.Background()
//		store, err := sqlite.Open(ctx, "toolgate.db", nil)
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer store.Close()
//
//		conv, err := store.Load(ctx, "conv-1")
//		if err != nil {
//			log.Fatal(err)
//		}
//		err = store.Append(ctx, "conv-1", &toolgate.AppendParams{
//			At:       len(conv.Messages),
//			Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Is VX205 on time?"}},
//		})
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println("stored", len(conv.Messages)+1, "messages")
//	}
//
// # Concurrency and durability
//
// The database is in WAL journal mode: readers do not wait for the writer.
// Every write runs in a BEGIN IMMEDIATE transaction, which takes SQLite's
// write lock before it reads the state it checks, so appends and claims are
// serialized across goroutines and processes; a writer that finds the lock
// taken waits up to [Options.BusyTimeout]. Commits are synchronous (PRAGMA
// synchronous = FULL): a successful Append or ClaimPause survives a crash.
// Within one process a [Store] keeps a single writing connection, so its
// goroutines queue for it instead of polling the lock.
//
// Writes are group-committed: the writes that queue while a transaction
// commits run together in the next one, each inside a savepoint of its
// own, and share its single fsync. A write that fails is rolled back to its
// savepoint alone; every caller learns its own outcome only once the
// commit is durable. Under concurrent load this turns one fsync per write
// into one per batch (see docs/BENCHMARKS.md) without weakening
// durability.
//
// # Schema
//
// The schema version is the database's user_version; [Open] applies the
// missing migrations in a write transaction and refuses a database whose
// version it does not know with an error wrapping [toolgate.ErrCorrupt].
// Version 1 has two tables:
//
//   - messages (conversation_id, seq, format, body): one row per message,
//     seq counting from 0; format 1 means body holds the message's JSON
//     form (json.Marshal of the message, read with [toolgate.UnmarshalMessage]).
//   - pauses (conversation_id, id, msg_index, awaiting, claimed, created_at,
//     created_at_nanos): the unresolved pause of a conversation, if any;
//     awaiting is a JSON array of keys, created_at Unix seconds.
//
// The approval service's records (server_* tables, [Store.Records]) have
// a version of their own, the largest in server_schema_version; Open does
// not create them, [Store.Records] does, so a database used for
// conversations only holds none of the service's tables.
//
// A row that cannot be read back (a body that is not a message, an unknown
// format, messages not numbered 0, 1, 2, …, a pause that points at no
// paused reply) makes Load fail with an error wrapping [toolgate.ErrCorrupt];
// it never panics.
package sqlite
