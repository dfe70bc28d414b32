package postgres_test

import (
	"context"
	"fmt"
	"log"

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
