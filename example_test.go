package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate"
)

func ExampleNewToolFor() {
	type input struct {
		Flight string `json:"flight" jsonschema:"the flight number, such as VX205"`
	}
	type status struct {
		Flight string `json:"flight"`
		OnTime bool   `json:"on_time"`
	}
	tool := toolgate.NewToolFor("flightStatus", "Reports whether a flight is on time.",
		func(_ context.Context, _ *toolgate.ToolRequest, in input) (status, error) {
			return status{Flight: in.Flight, OnTime: true}, nil
		}, nil)

	// The schema is inferred from the input type.
	schema, _ := json.Marshal(tool.Definition().InputSchema)
	fmt.Println(string(schema))

	// Valid arguments reach the function; its output is encoded as JSON.
	out, err := tool.Call(context.Background(), &toolgate.ToolRequest{
		Call: toolgate.ToolCall{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
	})
	fmt.Println(out, err)

	// Invalid arguments never reach it.
	_, err = tool.Call(context.Background(), &toolgate.ToolRequest{
		Call: toolgate.ToolCall{ID: "c2", Name: "flightStatus", Arguments: `{"flight":205}`},
	})
	fmt.Println(errors.Is(err, toolgate.ErrInvalidArguments))
	// Output:
	// {"type":"object","properties":{"flight":{"type":"string","description":"the flight number, such as VX205"}},"required":["flight"],"additionalProperties":false}
	// {"flight":"VX205","on_time":true} <nil>
	// true
}

func ExampleManager_Run() {
	type input struct {
		Flight string `json:"flight"`
	}
	status := toolgate.NewToolFor("flightStatus", "Reports whether a flight is on time.",
		func(_ context.Context, _ *toolgate.ToolRequest, in input) (string, error) {
			return in.Flight + " is on time", nil
		}, nil)
	book := toolgate.NewToolFor("bookFlight", "Books a seat on a flight.",
		func(_ context.Context, _ *toolgate.ToolRequest, in input) (string, error) {
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})

	prompt := &toolgate.Prompt{
		Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Is VX205 on time? Then book it."}},
		Tools:    []*toolgate.Tool{status, book},
	}
	reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
		{ID: "call_1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
		{ID: "call_2", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
	}}

	m := toolgate.NewManager(nil)
	ctx := context.Background()

	// bookFlight needs a decision, so nothing of the reply runs.
	_, err := m.Run(ctx, &toolgate.RunParams{Prompt: prompt, Reply: reply})
	var pause *toolgate.PauseError
	if !errors.As(err, &pause) {
		panic(err)
	}
	fmt.Println("keys:", pause.Keys, "awaiting:", pause.Awaiting)

	// Every call gets a decision, including the one nobody flagged.
	res, err := m.Resume(ctx, &toolgate.ResumeParams{
		Prompt: prompt,
		Reply:  pause.Reply,
		Decisions: []toolgate.Decision{
			toolgate.Allow("call_1"),
			toolgate.Deny("call_2", "User cancelled the booking."),
		},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range res.Message.Results {
		fmt.Printf("%s %s: %s\n", r.Name, r.Status, r.Content)
	}
	fmt.Println("history:", len(res.History), "messages")
	// Output:
	// keys: [call_1 call_2] awaiting: [call_2]
	// flightStatus ok: "VX205 is on time"
	// bookFlight denied: User cancelled the booking.
	// history: 3 messages
}

func ExampleToolCallKeys() {
	reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
		{ID: "call_a", Name: "search"}, // a unique id is its own key
		{ID: "", Name: "search"},       // no id: positional key
		{ID: "dup", Name: "search"},    // a shared id: both positional
		{ID: "dup", Name: "search"},
		{ID: "#9", Name: "search"}, // ids starting with '#' are never keys
	}}
	fmt.Println(reply.CallKeys())
	// Output:
	// [call_a #1 #2 #3 #4]
}
