package audit_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/toolgate/toolgate/audit"
)

// A paused call, a person's decision and the execution, in an in-memory
// log; then the check of the chain.
func Example() {
	ctx := context.Background()
	l := audit.NewMemoryLog()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	args := []byte(`{"flight":"VX205","email":"ada@example.com"}`)
	call := audit.Record{ConversationID: "trip-42", PauseID: "p1", CallKey: "c1", Tool: "bookFlight", ArgsDigest: audit.Digest(args)}

	requested, decided, executed := call, call, call
	requested.Kind, requested.Time, requested.Actor = audit.KindRequested, at, audit.Actor{Source: audit.SourceSystem}
	decided.Kind, decided.Time, decided.Actor, decided.Reason = audit.KindDecided, at.Add(time.Minute), audit.Actor{ID: "alice", Source: audit.SourcePerson}, "allowed"
	executed.Kind, executed.Time, executed.Actor = audit.KindExecuted, at.Add(time.Minute+time.Second), audit.Actor{Source: audit.SourceSystem}
	if err := l.Append(ctx, &requested, &decided, &executed); err != nil {
		log.Fatal(err)
	}
	for r, err := range l.Records(ctx, &audit.Query{ConversationID: "trip-42"}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.Seq, r.Kind, r.Actor.ID, r.Hash[:16])
	}

	report, err := audit.Verify(ctx, l, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("intact:", report.Records, "records")
	// Output:
	// 1 requested  1d3a33393caae4a9
	// 2 decided alice 228d3da1b28e54f9
	// 3 executed  4f621d37d5e7b5c9
	// intact: 3 records
}
