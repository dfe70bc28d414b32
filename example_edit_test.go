package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate"
)

func ExampleAllowWithArguments() {
	type input struct {
		Flight string `json:"flight"`
		Seats  int    `json:"seats"`
	}
	book := toolgate.NewToolFor("bookFlight", "Books seats on a flight.",
		func(_ context.Context, _ *toolgate.ToolRequest, in input) (string, error) {
			return fmt.Sprintf("Booked %d on %s", in.Seats, in.Flight), nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
	prompt := &toolgate.Prompt{Tools: []*toolgate.Tool{book}}
	reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
		{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205","seats":4}`},
	}}
	m := toolgate.NewManager(nil)

	// The approver books two seats, not four.
	res, err := m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: prompt, Reply: reply,
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("c1", json.RawMessage(`{"flight":"VX205","seats":2}`))}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Message.Results[0].Content)
	fmt.Println(reply.ToolCalls[0].Arguments) // the model's reply is unchanged

	// An edit that does not fit the tool's schema runs nothing.
	_, err = m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: prompt, Reply: reply,
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("c1", json.RawMessage(`{"flight":"VX205","seats":"two"}`))}})
	var de *toolgate.DecisionError
	fmt.Println(errors.As(err, &de), de.Problem, de.Key)
	// Output:
	// The approver changed the arguments to: {"flight":"VX205","seats":2}
	// "Booked 2 on VX205"
	// {"flight":"VX205","seats":4}
	// true invalid_arguments c1
}
