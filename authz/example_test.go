package authz_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/provider/scripted"
)

// Support staff see the lookup tool only; a call of the refund tool that
// the model makes up anyway is refused before anything runs.
func ExampleGuard() {
	ctx := context.Background()
	lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "customerLookup"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return `{"name":"Ada"}`, nil })
	refund := toolgate.NewTool(toolgate.ToolDefinition{Name: "refund"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "refunded", nil })
	guard := authz.NewGuard(authz.RoleTools(map[string][]string{
		"support": {"customerLookup"},
		"finance": {"customerLookup", "refund"},
	}), nil)
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "refund", Arguments: `{"order":"A-17"}`}}})
	client := toolgate.NewClient(model, []*toolgate.Tool{lookup, refund}, &toolgate.ClientOptions{Authorize: guard.Begin})

	_, err := client.Call(ctx, &toolgate.CallParams{
		Principal: &toolgate.Principal{ID: "sam", Roles: []string{"support"}},
		Input:     "Refund order A-17",
	})
	var denial *authz.DenialError
	if errors.As(err, &denial) {
		fmt.Println(denial.Code, denial.Tool)
	}
	for _, t := range model.Prompts()[0].Tools {
		fmt.Println("offered:", t.Name())
	}
	// Output:
	// TOOL_NOT_EXPOSED refund
	// offered: customerLookup
}
