package records_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// Two deciders race for one pause: the first Begin takes it, the second
// gets the first one's record.
func Example() {
	ctx := context.Background()
	rs := records.NewMemory()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	first := &records.Decision{ConversationID: "conv_1", PauseID: "pause_1", Source: records.SourcePerson,
		DecidedBy: "bob", DecidedAt: now, Decisions: []toolgate.Decision{toolgate.Allow("call_book")}, Outcome: records.OutcomeDeciding}
	if prior, err := rs.Begin(ctx, first); err != nil || prior != nil {
		fmt.Println("unexpected:", prior, err)
	}
	second := &records.Decision{ConversationID: "conv_1", PauseID: "pause_1", Source: records.SourcePerson,
		DecidedBy: "cy", DecidedAt: now, Decisions: []toolgate.Decision{toolgate.Deny("call_book", "")}, Outcome: records.OutcomeDeciding}
	prior, err := rs.Begin(ctx, second)
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println("already taken by", prior.DecidedBy)
	if err := rs.Finish(ctx, "conv_1", "pause_1", records.OutcomeDecided); err != nil {
		fmt.Println(err)
	}
	d, _ := rs.Decision(ctx, "conv_1", "pause_1")
	fmt.Println(d.Source, d.DecidedBy, d.Outcome)
	// Output:
	// already taken by bob
	// person bob decided
}
