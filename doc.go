// Package toolgate runs LLM tool calls that can wait for a person's
// decision.
//
// A tool (or a policy over a call's arguments) can require confirmation.
// When a model reply holds such a call, the whole reply pauses: none of its
// calls runs, the caller gets the reply back with the keys of the calls that
// await a decision, a person allows or denies every call, and the turn
// resumes from the stored conversation.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/provider/scripted"
//	)
//
//	type flight struct {
//		Flight string `json:"flight" jsonschema:"the flight number"`
//	}
//
//	func main() {
//		ctx := context.Background()
//		book := toolgate.NewToolFor("bookFlight", "Book a flight",
//			func(ctx context.Context, req *toolgate.ToolRequest, in flight) (string, error) {
//				return "Booked " + in.Flight, nil
//			},
//			&toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
//		model := scripted.New(
//			scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}},
//			scripted.Reply{Text: "Your seat is booked."},
//		)
//		client := toolgate.NewClient(model, []*toolgate.Tool{book}, nil)
//
//		resp, _ := client.Call(ctx, &toolgate.CallParams{ConversationID: "c", Input: "Book VX205"})
//		fmt.Println(resp.Paused(), resp.Awaiting) // true [c1]: nothing ran
//
//		resp, _ = client.Resume(ctx, &toolgate.ResumeTurnParams{
//			ConversationID: "c",
//			PauseID:        resp.PauseID,
//			Decisions:      []toolgate.Decision{toolgate.Allow("c1")},
//		})
//		fmt.Println(resp.Text()) // Your seat is booked.
//	}
//
// # Pieces
//
//   - Messages ([Message]: [SystemMessage], [UserMessage], [AssistantMessage],
//     [ToolMessage]), [Prompt], [Response] and [Chunk] are plain data with a
//     stable JSON form, so a paused conversation written by one process
//     resumes in another.
//   - [Model] is the interface providers implement: a blocking call and a
//     stream ([iter.Seq2]).
//   - Tools come in two tiers: [NewTool] (raw JSON in, text out) and
//     [NewToolFor] (typed: the input schema is inferred from a Go struct and
//     arguments are validated before the function runs).
//   - [Client] runs whole turns (model, tools, model, …), blocking or
//     streaming. Before any call of a reply runs, it asks the confirmation
//     policy (the tools' metadata, [ClientOptions.ConfirmTools] and
//     [ClientOptions.Policy]) about every call, and pauses the whole reply
//     when any needs a decision; [Client.Resume] runs a paused reply with
//     one [Decision] per call, after checking the rules of
//     [Client.CheckDecisions]. Keys name calls ([ToolCallKeys]). An
//     approver may allow a call with other arguments ([AllowWithArguments]);
//     its result tells the model what ran.
//   - The client keeps conversations in a [ConversationStore] and resumes
//     paused turns from it, consuming each pause once. A call of a decided
//     pause is recorded as started before it runs, so that
//     [Client.RecoverPause] can finish a pause whose resumption died
//     without running any call twice.
//
// # Security
//
// A paused reply is read from storage the end user cannot change, as
// [Client.Resume] does, never from a client request. A deny message reaches
// the model as a tool result, and edited arguments reach the tool and the
// model: treat both as untrusted input (the guards check edits like a
// model's arguments). Replays are prevented by the [Client] and its stores,
// which claim a pause once.
package toolgate
