package memory_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

// A client keeps its conversations in the store; a second client on the
// same store (another part of the program) resumes the pause.
func Example() {
	ctx := context.Background()
	store := memory.New()
	send := toolgate.NewTool(toolgate.ToolDefinition{Name: "send"}, toolgate.ToolMetadata{RequiresConfirmation: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "sent", nil })
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "send", Arguments: "{}"}}},
		scripted.Reply{Text: "Sent."},
	)
	opts := &toolgate.ClientOptions{Store: store}
	resp, err := toolgate.NewClient(model, []*toolgate.Tool{send}, opts).Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: "send it"})
	if err != nil {
		panic(err)
	}
	conv, err := store.Load(ctx, "c")
	if err != nil {
		panic(err)
	}
	fmt.Println("stored messages:", len(conv.Messages), "open pause:", conv.Pause.ID == resp.PauseID)

	resp, err = toolgate.NewClient(model, []*toolgate.Tool{send}, opts).Resume(ctx, &toolgate.ResumeTurnParams{
		ConversationID: "c", PauseID: resp.PauseID, Decisions: []toolgate.Decision{toolgate.Allow("c1")},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text())
	// Output:
	// stored messages: 2 open pause: true
	// Sent.
}
