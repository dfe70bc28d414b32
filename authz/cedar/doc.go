// Package cedar is an [authz.Policy] that decides with Cedar policies
// (github.com/cedar-policy/cedar-go): which tools a principal may see, and
// which calls may run.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/authz"
//		"github.com/toolgate/toolgate/authz/cedar"
//		"github.com/toolgate/toolgate/provider/scripted"
//	)
//
//	const policies = `
//	@id("small-transfers")
//	permit (principal in Role::"finance", action, resource == Tool::"transfer")
//	when { action == Action::"discover" || context.amount < 1000 };`
//
//	func main() {
//		policy, err := cedar.New(nil, cedar.Source{Name: "transfers.cedar", Text: []byte(policies)})
//		if err != nil {
//			log.Fatal(err) // names the document and position of a syntax error
//		}
//		transfer := toolgate.NewTool(toolgate.ToolDefinition{Name: "transfer"}, toolgate.ToolMetadata{},
//			func(context.Context, *toolgate.ToolRequest) (string, error) { return "sent", nil })
//		model := scripted.New(
//			scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "transfer", Arguments: `{"amount":500}`}}},
//			scripted.Reply{Text: "Done."},
//		)
//		client := toolgate.NewClient(model, []*toolgate.Tool{transfer},
//			&toolgate.ClientOptions{Authorize: authz.NewGuard(policy, nil).Begin})
//		resp, err := client.Call(context.Background(), &toolgate.CallParams{
//			Principal: &toolgate.Principal{ID: "fay", Roles: []string{"finance"}},
//			Input:     "Send 500 to Bob",
//		})
//		fmt.Println(resp.Text(), err) // Done. <nil>; with "amount":5000 the call is refused
//	}
//
// Policies come from files ([Load], [ReadFiles]: files, or directories of
// ".cedar" files) or from bytes ([New] with [Source] values).
//
// # Mapping
//
// An [authz.Request] becomes this Cedar request:
//
//   - principal: User::"<Principal.ID>". Its parents are Role::"<role>"
//     for each of the principal's roles, so `principal in Role::"finance"`
//     holds for a user with that role; its attributes are the principal's
//     attributes, as strings (principal.department).
//   - action: Action::"discover" in the definition phase (may the model see
//     the tool?) and Action::"execute" in the execution phase (may this
//     call run now?).
//   - resource: Tool::"<tool name>".
//   - context: a record, described below.
//
// # Context
//
// In the execution phase the context holds the call's arguments twice:
// each top-level argument directly (context.amount), and all of them under
// context.arguments. Three keys are reserved and always hold toolgate's
// values; an argument with one of these names is found only under
// context.arguments:
//
//	context.arguments        the arguments, as a record
//	context.metadata         {requires_confirmation: Bool, return_direct: Bool}, the tool's metadata
//	context.unrepresentable  Set<String>: JSON pointers of numbers left out (see below)
//
// In the definition phase there are no arguments: context.arguments is
// {}, and only the reserved keys are present. Write argument conditions in
// policies scoped to Action::"execute", or guard them with `has`.
//
// Arguments are converted from JSON: objects become records, arrays sets
// (order and duplicates are lost), strings strings, booleans booleans and
// integers longs. A null is left out, as if the key were absent. A number
// is a long when its value is an integer in Cedar's 64-bit range, however
// it is written (500, 500.0 and 5e2 are 500). Any other number (19.99,
// 1e30) cannot be represented: by default such a call is denied without
// asking the policies; with [Options.AllowUnrepresentable] the number is
// left out and its JSON pointer ("/price", "/items/2/price") is listed in
// context.unrepresentable for the policies to decide on. Arguments that
// are not one JSON object (invalid JSON, an array, a number), or that hold
// a duplicate key or invalid UTF-8 (which a tool might read differently
// from the policy), deny the call. A call with no arguments has the
// arguments {}.
//
// # Decisions
//
// Cedar decides: nothing is allowed unless a permit policy applies, and a
// forbid policy that applies beats every permit. A policy whose evaluation
// fails (an attribute the context lacks, a type error) does not apply, as
// in Cedar, except that by default a failing forbid policy denies, since it
// might have applied ([Options.IgnoreForbidErrors] restores Cedar's rule).
// So `forbid ... when { context.seats > 9 }` also denies a call without
// seats; write `context has seats && context.seats > 9` if that is
// allowed.
//
// The decision's reason names the policies that decided, by their @id
// annotation and position or, without one, by document name and position
// ("forbidden by policy \"no-large-transfers\" (transfers.cedar:7:1)"),
// and each policy that failed to evaluate with the kind of failure. It
// never quotes argument values.
//
// # Reloading and caching
//
// Policies are parsed once. [Policy.Reload] and [Policy.Replace] parse a
// whole new set and swap it in atomically; if anything fails to load, the
// old set stays active. The Cedar entities of recent principals are cached
// (keyed by id, roles and attributes; bounded by
// [Options.EntityCacheSize]), so a decision costs a few microseconds. A
// definition-phase decision depends only on the principal, the tool's name
// and metadata and the policies, so it is remembered with the principal's
// entities until the policies change: filtering the same tools again for
// the same principal asks Cedar nothing.
package cedar
