package toolsearch_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/toolsearch"
)

// The model searches, is offered what it found, and calls it.
func Example() {
	tool := func(name, description string) *toolgate.Tool {
		return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: description}, toolgate.ToolMetadata{},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return name + " ran", nil })
	}
	tools := []*toolgate.Tool{
		tool("flightStatus", "Get the live status of a flight: on time or delayed."),
		tool("refundPayment", "Refund a card payment."),
		tool("createInvoice", "Create an invoice for a customer."),
	}
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "s1", Name: "search_tools", Arguments: `{"query":"is my flight delayed"}`}}},
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "f1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}}},
		scripted.Reply{Text: "VX205 is on time."},
	)
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{SearchTools: toolsearch.New(nil).Begin})
	resp, err := client.Call(context.Background(), &toolgate.CallParams{Input: "Is VX205 on time?"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, p := range model.Prompts() {
		var names []string
		for _, t := range p.Tools {
			names = append(names, t.Name())
		}
		fmt.Println("round", i+1, "offered", names)
	}
	fmt.Println(resp.Text())
	// Output:
	// round 1 offered [search_tools]
	// round 2 offered [search_tools flightStatus]
	// round 3 offered [search_tools flightStatus]
	// VX205 is on time.
}
