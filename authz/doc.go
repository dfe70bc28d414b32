// Package authz decides, per principal, which tools the model may see and
// which calls may run, and enforces it at fixed stages of every
// [toolgate.Client] request.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/authz"
//		"github.com/toolgate/toolgate/provider/scripted"
//	)
//
//	func main() {
//		lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "customerLookup"}, toolgate.ToolMetadata{},
//			func(context.Context, *toolgate.ToolRequest) (string, error) { return `{"name":"Ada"}`, nil })
//		refund := toolgate.NewTool(toolgate.ToolDefinition{Name: "refund"}, toolgate.ToolMetadata{},
//			func(context.Context, *toolgate.ToolRequest) (string, error) { return "refunded", nil })
//		guard := authz.NewGuard(authz.RoleTools(map[string][]string{
//			"support": {"customerLookup"},
//			"finance": {"customerLookup", "refund"},
//		}), nil)
//		model := scripted.New(scripted.Reply{Text: "How can I help?"})
//		client := toolgate.NewClient(model, []*toolgate.Tool{lookup, refund},
//			&toolgate.ClientOptions{Authorize: guard.Begin})
//		resp, err := client.Call(context.Background(), &toolgate.CallParams{
//			Principal: &toolgate.Principal{ID: "sam", Roles: []string{"support"}},
//			Input:     "Hello",
//		})
//		fmt.Println(resp.Text(), err)                          // the model saw only customerLookup
//		fmt.Println(len(model.Prompts()[0].Tools))            // 1
//	}
//
// # What the guard guarantees
//
//  1. Before every model call, the tools are filtered by the definition
//     phase of the [Policy]; denied tools are not sent. An empty list stays
//     empty.
//  2. The tools a request starts with are snapshotted; a tool added to the
//     prompt later (by model middleware, say) or a different tool with an
//     exposed name is refused before the model sees it
//     ([CodeCallbackAdded], [CodeCallbackReplaced]).
//  3. A call must name a tool the model was shown ([CodeToolNotExposed]);
//     nothing is looked up elsewhere.
//  4. Every call of a reply is authorized in the execution phase before any
//     of them runs or pauses; one denial refuses the whole reply
//     ([CodeExecutionDenied]).
//  5. Each call is authorized again right before it runs, by the tool
//     itself (see [toolgate.Tool.Wrap]), so a manager supplied by the
//     application checks it too.
//  6. On resumption after a pause, 3–5 run again for the principal of the
//     resumption: access may have been revoked while the approval waited.
//  7. With tool search ([toolgate.ClientOptions.SearchTools], package
//     toolsearch), the search tool is recognised by identity: offered
//     without a decision, refused when replaced
//     ([CodeToolSearchChanged]). Only the tools allowed in step 1 are
//     indexed, found and offered.
//
// A request that carries tools but no principal is refused
// ([CodeAuthenticationRequired]). A policy error aborts the request with
// the error wrapped. By default a refusal ends the request with a
// [*DenialError]; [Options.RefuseNeutrally] instead answers the model with
// a neutral result and lets the turn go on. Either way the tool never runs.
//
// The one way around the guard is to call a tool's function directly,
// outside any client or manager.
package authz
