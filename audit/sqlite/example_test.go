package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/sqlite"
)

// Appended records form a hash chain that [audit.Verify] checks.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "audit")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := sqlite.Open(ctx, filepath.Join(dir, "audit.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	person := audit.Actor{ID: "ada", Source: audit.SourcePerson}
	for _, r := range []*audit.Record{
		{ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight", Kind: audit.KindRequested, Actor: audit.Actor{Source: audit.SourceSystem}},
		{ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight", Kind: audit.KindDecided, Actor: person, Reason: "allowed"},
	} {
		if err := l.Append(ctx, r); err != nil {
			log.Fatal(err)
		}
		fmt.Println("appended", r.Seq, r.Kind)
	}
	rep, err := audit.Verify(ctx, l, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("chain verified:", rep.Records, "records")
	// Output:
	// appended 1 requested
	// appended 2 decided
	// chain verified: 2 records
}
