// Package postgres keeps toolgate conversations in a PostgreSQL database: a
// durable [toolgate.ConversationStore] that several goroutines, processes
// and server instances can share. It uses github.com/jackc/pgx/v5.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//		"os"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/store/postgres"
//	)
//
//	func main() {
//		ctx := context.Background()
//		// postgres://user:password@host:5432/dbname, say.
//		store, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), nil)
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
// [Open] makes a connection pool of its own from a connection string;
// [New] uses a [pgxpool.Pool] the program already has.
//
// # Concurrency
//
// An append runs in one transaction (READ COMMITTED) that first locks the
// conversation's row in the conversations table, creating the row when
// needed, and only then counts the stored messages and reads the pause that
// [github.com/toolgate/toolgate/storekit.ValidateAppend] checks. Appends to one conversation are thus
// serialized across every Store on the database: of concurrent appends at
// the same [toolgate.AppendParams.At], one wins and the others get
// [toolgate.ErrConflict]. Appends to different conversations do not wait
// for each other. A claim is one conditional UPDATE (… SET claimed = true
// WHERE … AND NOT claimed), so exactly one of concurrent claims of a pause
// succeeds. Load reads the messages and the pause with one statement, so
// in one snapshot.
//
// # Schema
//
// The tables live in the schema named by [Options.Schema] ("public" by
// default), created when missing. Its version is the largest in the
// table toolgate_schema_version (version, applied_at); [Open] and [New]
// apply the missing migrations in one transaction holding an advisory lock
// on the schema's name, so several instances starting together migrate it
// once, and refuse a schema whose version they do not know with an error
// wrapping [toolgate.ErrCorrupt]. The approval service's records
// (server_* tables, [Store.Records]) have a version of their own, the
// largest in server_schema_version; Open and New do not create them,
// [Store.Records] does. Version 1 has four tables:
//
//   - conversations (id): one row per conversation, the lock of its appends.
//   - messages (conversation_id, seq, format, body): one row per message,
//     seq counting from 0; format 1 means body (text) holds the message's
//     JSON form (json.Marshal of the message, read with
//     [toolgate.UnmarshalMessage]). Text, not jsonb: jsonb would reorder
//     keys and refuse the \u0000 escape.
//   - pauses (conversation_id, id, msg_index, awaiting, claimed,
//     created_at, created_at_nanos): the unresolved pause of a
//     conversation, if any; awaiting is a JSON array of keys, created_at a
//     timestamptz (microseconds) and created_at_nanos its exact fraction of
//     a second.
//   - vaults (conversation_id, sealed): the sealed privacy vault of a
//     conversation ([Store.LoadVault], [Store.SaveVault]).
//
// # Events across instances
//
// A [Broker] (from [NewBroker], or [Store.NewBroker] for a channel of the
// store's schema) carries small payloads between processes with
// LISTEN/NOTIFY: the server package's event streams use it, so that a page
// following a conversation on one instance hears of a decision taken on
// another. It listens on a connection of its own and reconnects with
// backoff when that connection is lost, then delivers a nil payload to
// say that payloads may have been lost. Payloads must be shorter than
// 8000 bytes; the server's name a conversation and a pause, never content.
//
// A row that cannot be read back (a body that is not a message, an unknown
// format, messages not numbered 0, 1, 2, …, a pause that points at no
// paused reply) makes Load fail with an error wrapping [toolgate.ErrCorrupt];
// it never panics.
package postgres
