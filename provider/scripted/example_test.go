package scripted_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// A scripted model replays its replies in order and records the prompts it
// received, so a test can assert what a real model would have been sent.
func ExampleNew() {
	ctx := context.Background()
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}}},
		scripted.Reply{Text: "VX205 is on time."},
	)
	status := toolgate.NewTool(toolgate.ToolDefinition{Name: "flightStatus"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "on time", nil })
	client := toolgate.NewClient(model, []*toolgate.Tool{status}, nil)
	resp, err := client.Call(ctx, &toolgate.CallParams{Input: "Is VX205 on time?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text())
	for i, p := range model.Prompts() {
		fmt.Printf("prompt %d: %d messages, last from %s\n", i, len(p.Messages), p.Messages[len(p.Messages)-1].Role())
	}
	_, err = model.Generate(ctx, &toolgate.Prompt{})
	fmt.Println(err)
	// Output:
	// VX205 is on time.
	// prompt 0: 1 messages, last from user
	// prompt 1: 3 messages, last from tool
	// scripted: no reply left in the script (2 replies)
}

// NewFunc answers from the conversation, for stories whose replies depend
// on what happened.
func ExampleNewFunc() {
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		return scripted.Reply{Text: fmt.Sprintf("You sent %d messages.", len(p.Messages))}, nil
	})
	resp, _ := model.Generate(context.Background(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}})
	fmt.Println(resp.Text())
	// Output: You sent 1 messages.
}
