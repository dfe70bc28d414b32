package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store/postgres"
)

// A reply that waits for approval is stored with a pause; whoever resumes
// it, in this server instance or another, claims the pause once and then
// stores the results.
//
// The example needs a PostgreSQL server, so it has no Output comment: it
// is compiled with the tests but not run.
func Example() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("TOOLGATE_POSTGRES_URL"), &postgres.Options{Schema: "toolgate"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
		{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
	}}
	err = store.Append(ctx, "conv-1", &toolgate.AppendParams{
		Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Book VX205."}, reply},
		Pause:    &toolgate.PauseRecord{ID: "pause-1", Awaiting: []string{"c1"}},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Two approvals of the same pause, say from two server instances:
	// only one claim succeeds.
	claim := &toolgate.Claim{Token: "claim-1", Decisions: []toolgate.Decision{toolgate.Allow("c1")}}
	if err := store.ClaimPause(ctx, "conv-1", "pause-1", claim); err != nil {
		log.Fatal(err)
	}
	// The call is recorded as started before it runs.
	if err := store.MarkStarted(ctx, "conv-1", "pause-1", "claim-1", []string{"c1"}); err != nil {
		log.Fatal(err)
	}
	err = store.ClaimPause(ctx, "conv-1", "pause-1", &toolgate.Claim{Token: "claim-2"})
	fmt.Println("second claim refused:", errors.Is(err, toolgate.ErrNoOpenPause))

	err = store.Append(ctx, "conv-1", &toolgate.AppendParams{
		At:       2,
		Resolves: "pause-1",
		Messages: []toolgate.Message{
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "bookFlight", Content: `{"seat":"12A"}`}}},
			&toolgate.AssistantMessage{Text: "Booked: seat 12A."},
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	conv, err := store.Load(ctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(conv.Messages), "messages, open pause:", conv.Pause != nil)
}

// Server instances on one database share their event streams through a
// Broker on the store's schema: a decision taken on one instance reaches
// the pages that follow the conversation on another.
//
// The example needs a PostgreSQL server, so it has no Output comment.
func ExampleStore_NewBroker() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("TOOLGATE_POSTGRES_URL"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	broker, err := store.NewBroker(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close() // before the store, which owns the pool

	got := make(chan string, 1)
	cancel := broker.Subscribe(func(payload []byte) {
		if payload != nil { // nil: the connection was restored, payloads may be lost
			got <- string(payload)
		}
	})
	defer cancel()
	if err := broker.Publish(ctx, []byte(`{"conversation_id":"conv-1","kind":"completed"}`)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got)
	// The server package takes it as its Config.Broker:
	//	srv, err := server.New(&server.Config{Agents: agents, APIKeys: keys, Broker: broker})
}
