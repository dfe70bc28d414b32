package postgres_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/postgres"
)

// Every instance of a service opens the log in the same schema; their
// appends form one chain.
func Example() {
	ctx := context.Background()
	l, err := postgres.Open(ctx, "postgres://toolgate@localhost/toolgate", &postgres.Options{Schema: "toolgate"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	r := &audit.Record{ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight",
		Kind: audit.KindRequested, Actor: audit.Actor{ID: "ada", Source: audit.SourcePerson}}
	if err := l.Append(ctx, r); err != nil {
		log.Fatal(err)
	}
	fmt.Println("appended record", r.Seq)
}

// A state change and its audit record commit in one transaction: the
// record goes in unsealed with the COMMIT, and the sealer gives it its
// place in the chain after the commit.
func ExampleLog_QueueTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://toolgate@localhost/toolgate")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	l, err := postgres.New(ctx, pool, &postgres.Options{Schema: "toolgate"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close() // seals what is left before the pool closes
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var b pgx.Batch
	b.Queue("UPDATE toolgate.bookings SET state = 'approved' WHERE id = $1", "b-7")
	r := &audit.Record{ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight",
		Kind: audit.KindDecided, Actor: audit.Actor{ID: "ada", Source: audit.SourcePerson}, Reason: "allowed"}
	if err := l.QueueTx(&b, r); err != nil {
		log.Fatal(err)
	}
	b.Queue("COMMIT")
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		log.Fatal(err)
	}
	l.Wake()
	fmt.Println("committed; sealed:", !r.Unsealed())
}
