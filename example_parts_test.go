package toolgate_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

// A reasoning model's reply keeps its signed reasoning through the pause:
// the client that resumes it, here a new one on the same store, sends the
// reply back with its parts as the model gave them.
func ExampleClient_Resume_reasoning() {
	ctx := context.Background()
	book := toolgate.NewToolFor("bookFlight", "Book a flight",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightNumber) (string, error) {
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
	thinking := scripted.Reply{
		Text:      "I will book VX205.",
		ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "The user asked for VX205.", Provider: "anthropic", Signature: "EqQBCkYIBxgC"},
			toolgate.TextPart{Text: "I will book VX205."},
			toolgate.ToolCallPart{Index: 0},
		},
	}
	store := memory.New()
	first := toolgate.NewClient(scripted.New(thinking), []*toolgate.Tool{book}, &toolgate.ClientOptions{Store: store})
	resp, err := first.Call(ctx, &toolgate.CallParams{ConversationID: "trip", Input: "Book VX205"})
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", resp.Paused())

	model := scripted.New(scripted.Reply{Text: "Booked."})
	second := toolgate.NewClient(model, []*toolgate.Tool{book}, &toolgate.ClientOptions{Store: store})
	resp, err = second.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "trip", PauseID: resp.PauseID,
		Decisions: []toolgate.Decision{toolgate.Allow("c1")}})
	if err != nil {
		panic(err)
	}
	sent := model.Prompts()[0].Messages[1].(*toolgate.AssistantMessage)
	for _, p := range sent.Content() {
		switch p := p.(type) {
		case toolgate.ReasoningPart:
			fmt.Printf("reasoning %q signed %s\n", p.Text, p.Signature)
		case toolgate.TextPart:
			fmt.Printf("text %q\n", p.Text)
		case toolgate.ToolCallPart:
			fmt.Println("call", sent.ToolCalls[p.Index].Name)
		}
	}
	fmt.Println(resp.Text())
	// Output:
	// paused: true
	// reasoning "The user asked for VX205." signed EqQBCkYIBxgC
	// text "I will book VX205."
	// call bookFlight
	// Booked.
}
