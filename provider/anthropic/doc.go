// Package anthropic provides a [toolgate.Model] backed by the Anthropic
// Messages API, through the official Go SDK.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/provider/anthropic"
//	)
//
//	func main() {
//		model, err := anthropic.FromEnv("claude-sonnet-4-5") // reads ANTHROPIC_API_KEY
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
// # How toolgate messages are sent
//
//   - System messages, wherever they are, become the top-level system field,
//     one text block each, in order.
//   - A reply's tool calls become tool_use blocks. Arguments that are a JSON
//     object are the input as they are; blank arguments are {}; anything
//     else (invalid JSON, or JSON that is not an object) is sent as
//     {"_raw": "<the text>"}, so that a stored reply with broken arguments
//     still makes a valid request. A call whose id the API would reject
//     (empty, repeated within the reply, or with characters outside
//     [A-Za-z0-9_-]) is sent with the id "toolu_tg_<message>_<call>", and
//     its result with the same id.
//   - The results of one reply are one user message of tool_result blocks,
//     in call order. An error result sets is_error; a denied or skipped
//     call answers with its message as ordinary text content.
//   - A reply's content goes in its order (see
//     [toolgate.AssistantMessage.Content]). Its reasoning parts read from
//     this API go back as thinking blocks with their signatures, and its
//     redacted reasoning parts as redacted_thinking blocks, unchanged and
//     before the tool_use blocks they preceded, as the API requires for
//     tool use with extended thinking. Parts of another provider are
//     dropped: their reasoning is left out, their text is sent as plain
//     text, their calls as plain tool_use blocks.
//   - A user message's files ([toolgate.FilePart]) follow its text as
//     blocks, in order: JPEG, PNG, GIF and WebP images as image blocks, PDFs
//     as document blocks (base64 from Data, or a url source from URL), and
//     UTF-8 plain text given by its bytes as a document block with a text
//     source (the file's Name is the document's title). A tool result's
//     files go into its tool_result content the same way, after its text.
//     An inline image may have at most [MaxImageSize] bytes and a document
//     [MaxDocumentSize]; another media type, or a larger file, is a
//     [*FileError] and no request is made.
//   - An assistant message with neither text nor tool calls is left out.
//   - [toolgate.ModelOptions]: Model overrides [Options.Model];
//     MaxOutputTokens is max_tokens (0: [Options.MaxOutputTokens], itself
//     defaulting to [DefaultMaxOutputTokens]); Stop is stop_sequences;
//     Temperature is temperature; ToolChoice "auto", "required", "none" or a
//     tool name is tool_choice auto, any, none or tool; ParallelToolCalls
//     sets disable_parallel_tool_use to its negation. tool_choice is sent
//     only with tools.
//
// # How replies are read
//
// Text blocks are joined; tool_use blocks become tool calls with their ids
// and the input as compact JSON text, streamed or not: a streamed call's
// input fragments are joined and compacted when its block ends, so that a
// stored reply is the same either way. A thinking block becomes a
// [toolgate.ReasoningPart] with its thinking and signature, a
// redacted_thinking block a [toolgate.RedactedReasoningPart] with its
// data, both with Provider "anthropic"; a reply that holds one has Parts,
// its blocks in order (text, reasoning, calls), and a reply without one
// keeps the plain form. A stream yields thinking_delta text as
// [toolgate.Chunk] Reasoning, collects signature_delta fragments, and
// sends the parts on its last chunk: the same reply as a complete message.
// Server-tool blocks are left out. stop_reason end_turn and stop_sequence give
// [toolgate.FinishStop], tool_use [toolgate.FinishToolCalls], max_tokens and
// model_context_window_exceeded [toolgate.FinishLength], refusal
// [toolgate.FinishRefusal] (the text, if any, is the model's explanation);
// other reasons pass through. Usage: InputTokens is input_tokens plus the
// cache reads and writes, CachedInputTokens the cache reads,
// ReasoningTokens the thinking tokens (output_tokens_details), which
// OutputTokens includes.
//
// # Extended thinking
//
// [Options.ThinkingBudget] turns extended thinking on with a token budget
// (at least [MinThinkingBudget], less than max_tokens). The thinking blocks
// of a reply are kept in its parts, stored with the conversation, and sent
// back unchanged on the next request, also after a pause and a resume from
// another process. A tool use turn that began without thinking (a reply
// from another provider, or one made with thinking off) cannot continue
// with it: the API refuses a last assistant message that calls tools
// without starting with a thinking block. Such a request is sent with
// thinking off; the next turn has it again.
//
// Failures are [*provider.Error] values with Provider "anthropic" after
// the SDK's own retries (see [Options.MaxRetries]); RetryAfter is the wait
// the API asked for in a retry-after header, if any. An error event inside
// a stream gets the kind of its error type and StatusCode 0; one that
// arrives before any chunk was yielded (overloaded_error, api_error,
// rate_limit_error) is retried like the status it stands for. Nothing of
// the prompt or the reply is logged.
package anthropic
