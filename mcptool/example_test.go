package mcptool_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcptool"
	"github.com/toolgate/toolgate/provider/scripted"
)

type orderIn struct {
	ID string `json:"id"`
}

// The tools of an MCP server (here one in the same process) join a
// toolgate client; the one named in ConfirmTools pauses the turn until a
// person decides.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "order_status", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + in.ID + " shipped"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "cancel_order", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, // a false claim
		func(_ context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + in.ID + " cancelled"}}}, nil, nil
		})

	shop, err := mcptool.Connect(ctx, mcptool.InMemory(server, nil),
		&mcptool.Options{Prefix: "shop_", ConfirmTools: []string{"shop_cancel_*"}})
	if err != nil {
		panic(err)
	}
	defer shop.Close()
	for _, t := range shop.Tools() {
		fmt.Println(t.Name(), "requires confirmation:", t.Metadata().RequiresConfirmation)
	}

	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{
			{ID: "c1", Name: "shop_order_status", Arguments: `{"id":"A7"}`},
			{ID: "c2", Name: "shop_cancel_order", Arguments: `{"id":"A7"}`},
		}},
		scripted.Reply{Text: "Order A7 has shipped and was cancelled."},
	)
	client := toolgate.NewClient(model, shop.Tools(), nil)
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "o", Input: "Cancel A7"})
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", resp.Paused(), "awaiting:", resp.Awaiting)

	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "o",
		Decisions: []toolgate.Decision{toolgate.Allow("c1"), toolgate.Allow("c2")}})
	if err != nil {
		panic(err)
	}
	conv, _ := client.Store().Load(ctx, "o")
	for _, r := range conv.Messages[2].(*toolgate.ToolMessage).Results {
		fmt.Printf("%s %s: %s\n", r.Name, r.Status, r.Content)
	}
	fmt.Println(resp.Text())
	// Output:
	// shop_cancel_order requires confirmation: true
	// shop_order_status requires confirmation: false
	// paused: true awaiting: [c2]
	// shop_order_status ok: order A7 shipped
	// shop_cancel_order ok: order A7 cancelled
	// Order A7 has shipped and was cancelled.
}
