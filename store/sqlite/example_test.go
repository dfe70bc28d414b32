package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store/sqlite"
)

// A reply that waits for approval is stored with a pause; whoever resumes
// it, in this process or another, claims the pause once and then stores the
// results.
func Example() {
	dir, err := os.MkdirTemp("", "toolgate-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "toolgate.db"), nil)
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

	claim := &toolgate.Claim{Token: "claim-1", Decisions: []toolgate.Decision{toolgate.Allow("c1")}}
	if err := store.ClaimPause(ctx, "conv-1", "pause-1", claim); err != nil {
		log.Fatal(err)
	}
	// The call is recorded as started before it runs.
	if err := store.MarkStarted(ctx, "conv-1", "pause-1", "claim-1", []string{"c1"}); err != nil {
		log.Fatal(err)
	}
	err = store.ClaimPause(ctx, "conv-1", "pause-1", &toolgate.Claim{Token: "claim-2"})
	fmt.Println("claimed twice:", !errors.Is(err, toolgate.ErrNoOpenPause))

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
	for _, m := range conv.Messages {
		b, _ := json.Marshal(m)
		fmt.Println(string(b))
	}
	fmt.Println("open pause:", conv.Pause != nil)
	// Output:
	// claimed twice: false
	// {"role":"user","text":"Book VX205."}
	// {"role":"assistant","tool_calls":[{"id":"c1","name":"bookFlight","arguments":"{\"flight\":\"VX205\"}"}]}
	// {"role":"tool","results":[{"call_id":"c1","name":"bookFlight","content":"{\"seat\":\"12A\"}","status":"ok"}]}
	// {"role":"assistant","text":"Booked: seat 12A."}
	// open pause: false
}
