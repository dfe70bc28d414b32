// Package gemini provides a [toolgate.Model] backed by the Gemini API
// (generateContent and streamGenerateContent), through the official Google
// Gen AI Go SDK.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/provider/gemini"
//	)
//
//	func main() {
//		model, err := gemini.FromEnv("gemini-2.5-flash") // reads GEMINI_API_KEY
//		if err != nil {
//			log.Fatal(err)
//		}
//		client := toolgate.NewClient(model, nil, nil)
//		resp, err := client.Call(context.Background(), &toolgate.CallParams{Input: "Say hello."})
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(resp.Text())
//	}
//
// # Call ids
//
// Gemini usually sends function calls without ids. Such calls become
// [toolgate.ToolCall] values with an empty ID, so that toolgate keys them by
// position: decisions on the calls of a paused reply use the keys "#0",
// "#1", … (see [toolgate.ToolCallKeys]). An id the API does give is kept and
// sent back with the call and its result.
//
// # How toolgate messages are sent
//
//   - System messages, wherever they are, become the system instruction,
//     one text part each, in order.
//   - Users speak with role "user", replies with role "model"; adjacent
//     contents of one role are merged into one content.
//   - A reply's tool calls become functionCall parts (name, args, and the id
//     when there is one). Arguments that are a JSON object are the args;
//     blank arguments are no args; anything else (invalid JSON, or JSON that
//     is not an object) is sent as {"_raw": "<the text>"}. toolgate keeps no
//     thought signatures, so the first functionCall part of each reply
//     carries the placeholder signature the API documents for calls whose
//     signature is unknown ("skip_thought_signature_validator"); Gemini 3
//     models reject replayed calls without a signature.
//   - The results of one reply are functionResponse parts of one "user"
//     content, in call order, each with the call's name (and id when there
//     is one) and the response {"error": content} for an error result or
//     {"output": content} otherwise (denied and skipped calls included).
//   - Tools are function declarations with parametersJsonSchema.
//   - [toolgate.ModelOptions]: Model overrides [Options.Model];
//     MaxOutputTokens, Stop and Temperature are maxOutputTokens,
//     stopSequences and temperature; ToolChoice "auto", "required", "none"
//     or a tool name is the function calling mode AUTO, ANY, NONE, or ANY
//     restricted to that function; ParallelToolCalls has no equivalent and
//     is ignored.
//
// # How replies are read
//
// Only the first candidate is read. Text parts are joined, thought parts
// left out; functionCall parts become tool calls with their args as JSON
// text. finishReason STOP is [toolgate.FinishStop], or
// [toolgate.FinishToolCalls] when the reply has function calls; MAX_TOKENS
// is [toolgate.FinishLength]; SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT, SPII and their image variants, and a blocked prompt,
// are [toolgate.FinishContentFilter]; other reasons pass through in lower
// case. Usage: InputTokens is promptTokenCount, OutputTokens
// candidatesTokenCount plus thoughtsTokenCount, CachedInputTokens
// cachedContentTokenCount, ReasoningTokens thoughtsTokenCount.
//
// Failures are [*toolgate.ModelError] values with Provider "gemini" after
// the retries (none unless [Options.MaxRetries] is set), which wait as long
// as the API asks by Retry-After or a google.rpc.RetryInfo retryDelay (up to
// [MaxRetryWait]); RetryAfter is the wait the last answer asked for. Nothing of
// the prompt or the reply is logged.
package gemini
