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
// "#1", … (see [toolgate.AssistantMessage.CallKeys]). An id the API does give is kept and
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
//     is not an object) is sent as {"_raw": "<the text>"}.
//   - A reply's content goes in its order (see
//     [toolgate.AssistantMessage.Content]). Parts read from this API go
//     back with their thoughtSignature byte for byte: thoughts as thought
//     parts, text as text parts, calls as functionCall parts. Parts of
//     another provider are dropped: their reasoning is left out, their text
//     is sent as plain text, their calls as plain calls. A reply that holds
//     no signature of this API (another provider's, or one made without
//     thinking) sends its first call with the value the API documents for
//     calls whose signature is not known ("skip_thought_signature_validator");
//     Gemini 3 models reject a step whose first call has no signature. A
//     reply with signatures of its own never gets that value.
//   - A user message's files ([toolgate.FilePart]) follow its text as
//     inlineData parts (Data) or fileData parts (URL: a Files API URI, or a
//     URL the API fetches). Images, audio, video, text and PDF are taken;
//     the inline files of a request may have at most [MaxInlineSize] bytes
//     in all. Another media type, or more inline bytes, is a [*FileError]
//     and no request is made.
//   - A tool result's PNG, JPEG, WebP, PDF and plain text files go inside
//     its functionResponse (its parts), as the API takes them for
//     multimodal function responses; other files, and text parts, follow
//     the reply's function responses as parts of their own in the same
//     content, which every model reads.
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
// left out of the text; functionCall parts become tool calls with their
// args as JSON text. When a part carries a thoughtSignature or is a
// thought, the reply has Parts, in order: a [toolgate.ToolCallPart] per
// call with its signature, a [toolgate.TextPart] per text and a
// [toolgate.ReasoningPart] per thought (the summary, when thought
// summaries are on) with its signature, all with Provider "gemini" and the
// signature in base64. The API streams a part's text in fragments and may
// send its signature on a last fragment without text; fragments are joined
// until one carries a signature, so a streamed reply has the same parts as
// a complete one. A stream yields thought text as [toolgate.Chunk]
// Reasoning and sends the parts on its last chunk. finishReason STOP is [toolgate.FinishStop], or
// [toolgate.FinishToolCalls] when the reply has function calls; MAX_TOKENS
// is [toolgate.FinishLength]; SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT, SPII and their image variants, and a blocked prompt,
// are [toolgate.FinishContentFilter]; other reasons pass through in lower
// case. Usage: InputTokens is promptTokenCount, OutputTokens
// candidatesTokenCount plus thoughtsTokenCount, CachedInputTokens
// cachedContentTokenCount, ReasoningTokens thoughtsTokenCount.
//
// # Thinking
//
// Gemini 2.5 and 3 models think by default. [Options.IncludeThoughts] asks
// for thought summaries and [Options.ThinkingLevel] sets how much a Gemini
// 3 model thinks (thinkingConfig). The thought signatures are kept and
// sent back either way: a conversation paused on a tool call and resumed
// later, from another process, gives the model its reasoning back.
//
// Failures are [*provider.Error] values with Provider "gemini" after
// the retries (none unless [Options.MaxRetries] is set), which wait as long
// as the API asks by Retry-After or a google.rpc.RetryInfo retryDelay (up to
// [MaxRetryWait]); RetryAfter is the wait the last answer asked for. Nothing of
// the prompt or the reply is logged.
package gemini
