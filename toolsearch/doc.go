// Package toolsearch lets the model find the tools it needs among hundreds,
// instead of being sent them all: the first model call of a turn is offered
// one search tool; the calls after it, the search tool and the tools found
// so far.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/provider/scripted"
//		"github.com/toolgate/toolgate/toolsearch"
//	)
//
//	func main() {
//		status := toolgate.NewTool(toolgate.ToolDefinition{Name: "flightStatus", Description: "Live status of a flight"},
//			toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "on time", nil })
//		refund := toolgate.NewTool(toolgate.ToolDefinition{Name: "refundPayment", Description: "Refund a card payment"},
//			toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "refunded", nil })
//		model := scripted.New(
//			scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "s1", Name: "search_tools", Arguments: `{"query":"is my flight on time"}`}}},
//			scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "f1", Name: "flightStatus"}}},
//			scripted.Reply{Text: "VX205 is on time."},
//		)
//		client := toolgate.NewClient(model, []*toolgate.Tool{status, refund},
//			&toolgate.ClientOptions{SearchTools: toolsearch.New(nil).Begin})
//		resp, _ := client.Call(context.Background(), &toolgate.CallParams{Input: "Is VX205 on time?"})
//		fmt.Println(resp.Text())                    // VX205 is on time.
//		fmt.Println(len(model.Prompts()[0].Tools)) // 1: only search_tools
//	}
//
// # Inside every guard
//
// Tool search is a stage of the [toolgate.Client], configured by
// [toolgate.ClientOptions.SearchTools], not a tool among others:
//
//   - The index of a request is built from the tools the authorizer
//     offers (the definition phase of package authz), never from the denied
//     ones. A search returns only tools of that set, whatever the index
//     holds, and only those are offered; a call of a tool the model was not
//     shown is refused (TOOL_NOT_EXPOSED).
//   - The authorization guard recognises the request's search tool by
//     identity ([toolgate.BeginParams.SearchTool]): it is offered
//     without a policy decision, and a tool swapped in under its name is
//     refused (TOOL_SEARCH_CHANGED).
//   - The privacy guard wraps the search tool like any other: its query
//     reaches the [Index] tokenized, unless the privacy guard grants the
//     search tool's name some types.
//   - A found tool keeps its metadata: one that needs confirmation pauses
//     the turn like any other.
//
// # Resuming
//
// A resumption runs the paused reply's calls with a prompt that carries
// the search tool and every tool the round allows, so that each call the
// person allowed finds its tool, whether or not the [Searcher] still
// remembers the search that found it (another process may resume). The
// model calls after it are offered the found tools again: those the
// searcher kept for the conversation, and those named by the search
// results in the stored history (all of them with
// [toolgate.ClientOptions.StoreEveryRound]; by default the
// history keeps no tool rounds, and a searcher that lost the conversation
// offers only the search tool until the model searches again).
//
// # The index
//
// [BM25Index], the default [Index], ranks tools with Okapi BM25 over their
// names (split at camelCase and snake_case boundaries), descriptions,
// input schema property names and categories, with light stemming and a
// small table of synonyms; it runs in memory with no external service. A
// [Searcher] re-indexes a conversation only when its tools change (a
// fingerprint of names, descriptions, schemas and categories), keeps at
// most [Options.MaxConversations] conversations (least recently used
// evicted), and forgets one with [Searcher.Delete].
package toolsearch
