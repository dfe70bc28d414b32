package toolgate_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

type flightNumber struct {
	Flight string `json:"flight" jsonschema:"the flight number"`
}

// A turn pauses on a gated call; a person's decisions resume it from the
// store.
func ExampleClient_Resume() {
	ctx := context.Background()
	status := toolgate.NewToolFor("flightStatus", "Get the status of a flight",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightNumber) (string, error) {
			return "Flight " + in.Flight + " is on time", nil
		}, nil)
	book := toolgate.NewToolFor("bookFlight", "Book a flight",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightNumber) (string, error) {
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{
			{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
			{ID: "c2", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
		}},
		scripted.Reply{Text: "VX205 is on time, but I did not book it."},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{status, book}, nil)

	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "trip", Input: "Book VX205 if it is on time"})
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", resp.Paused(), "awaiting:", resp.Awaiting)

	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID,
		ConversationID: "trip",
		Decisions: []toolgate.Decision{
			toolgate.Allow("c1"),
			toolgate.Deny("c2", "User cancelled the booking."),
		},
	})
	if err != nil {
		panic(err)
	}
	conv, _ := client.Store().Load(ctx, "trip")
	for _, r := range conv.Messages[2].(*toolgate.ToolMessage).Results {
		fmt.Printf("%s %s: %s\n", r.Name, r.Status, r.Content)
	}
	fmt.Println(resp.Text())
	// Output:
	// paused: true awaiting: [c2]
	// flightStatus ok: "Flight VX205 is on time"
	// bookFlight denied: User cancelled the booking.
	// VX205 is on time, but I did not book it.
}

// A streamed turn ends with a chunk that carries the pause.
func ExampleClient_Stream() {
	ctx := context.Background()
	del := toolgate.NewTool(toolgate.ToolDefinition{Name: "deleteFile"}, toolgate.ToolMetadata{RequiresConfirmation: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "deleted", nil })
	model := scripted.New(scripted.Reply{Text: "Deleting it now.", ToolCalls: []toolgate.ToolCall{{Name: "deleteFile", Arguments: `{"path":"a.txt"}`}}})
	client := toolgate.NewClient(model, []*toolgate.Tool{del}, nil)
	for chunk, err := range client.Stream(ctx, &toolgate.CallParams{Input: "delete a.txt"}) {
		if err != nil {
			panic(err)
		}
		if chunk.Text != "" {
			fmt.Printf("text %q\n", chunk.Text)
		}
		if len(chunk.Awaiting) > 0 {
			fmt.Println("awaiting", chunk.Awaiting, "for", chunk.ToolCalls[0].Name)
		}
	}
	// Output:
	// text "Deleting "
	// text "it "
	// text "now."
	// awaiting [#0] for deleteFile
}

// A resumption died after it had started one of two allowed calls (here
// simulated with the store); a recovery takes its claim over, answers the
// started call "interrupted" without running it again, runs the other and
// continues the turn.
func ExampleClient_RecoverPause() {
	ctx := context.Background()
	var tools []*toolgate.Tool
	for _, name := range []string{"chargeCard", "sendReceipt"} {
		tools = append(tools, toolgate.NewTool(toolgate.ToolDefinition{Name: name}, toolgate.ToolMetadata{RequiresConfirmation: true},
			func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
				fmt.Println("running", name)
				return "done", nil
			}))
	}
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "chargeCard"}, {ID: "c2", Name: "sendReceipt"}}},
		scripted.Reply{Text: "The receipt is sent; please check whether the card was charged."},
	)
	store := memory.New()
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Store: store})
	if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "order", Input: "Pay and send the receipt"}); err != nil {
		panic(err)
	}
	conv, _ := store.Load(ctx, "order")
	pauseID := conv.Pause.ID

	// What a resumption leaves when its process dies while charging the card.
	decisions := []toolgate.Decision{toolgate.Allow("c1"), toolgate.Allow("c2")}
	if err := store.ClaimPause(ctx, "order", pauseID, &toolgate.Claim{Token: "gone", Decisions: decisions}); err != nil {
		panic(err)
	}
	if err := store.MarkStarted(ctx, "order", pauseID, "gone", []string{"c1"}); err != nil {
		panic(err)
	}

	res, err := client.RecoverPause(ctx, &toolgate.RecoverParams{ConversationID: "order", PauseID: pauseID, Force: true})
	if err != nil {
		panic(err)
	}
	for _, r := range res.Results {
		fmt.Println(r.Name, r.Status)
	}
	fmt.Println(res.Response.Text())
	// Output:
	// running sendReceipt
	// chargeCard interrupted
	// sendReceipt ok
	// The receipt is sent; please check whether the card was charged.
}

// The application tells the client who may decide which calls: a
// resumption whose decider may not decide an awaited call is refused
// before anything runs, and the pause stays open for someone who may.
func ExampleResumeTurnParams_mayDecide() {
	ctx := context.Background()
	book := toolgate.NewToolFor("bookFlight", "Book a flight",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightNumber) (string, error) {
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}},
		scripted.Reply{Text: "Booked."},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{book}, nil)
	paused, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "trip", Input: "Book VX205"})
	if err != nil {
		panic(err)
	}
	// Travel agents may decide bookings; interns may not.
	mayDecide := func(role string) func(toolgate.ToolCall) bool {
		return func(call toolgate.ToolCall) bool { return call.Name != "bookFlight" || role == "agent" }
	}
	for _, role := range []string{"intern", "agent"} {
		resp, err := client.Resume(ctx, &toolgate.ResumeTurnParams{
			ConversationID: "trip",
			PauseID:        paused.PauseID,
			Decisions:      []toolgate.Decision{toolgate.Allow("c1")},
			MayDecide:      mayDecide(role),
		})
		if err != nil {
			fmt.Println(role+":", err)
			continue
		}
		fmt.Println(role+":", resp.Text())
	}
	// Output:
	// intern: toolgate: the decider may not decide call "c1" of tool "bookFlight"
	// agent: Booked.
}
