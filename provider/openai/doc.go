// Package openai provides a [toolgate.Model] backed by the OpenAI API, built
// on the official SDK (github.com/openai/openai-go/v3). It speaks the Chat
// Completions API, which OpenAI-compatible servers (Ollama, vLLM,
// llama.cpp, LM Studio, OpenRouter) also serve, or the Responses API.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/provider/openai"
//	)
//
//	func main() {
//		model, err := openai.FromEnv("gpt-4.1-mini") // reads OPENAI_API_KEY
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
// A local server needs only its base URL and a model it serves:
//
//	model, err := openai.New(&openai.Options{
//		BaseURL: "http://localhost:11434/v1", // Ollama
//		Model:   "qwen3:8b",
//	})
//
// The package reads no environment variables; [FromEnv] is the one helper
// that does, for commands.
//
// # Mapping
//
// System, user and assistant messages map to the API's messages; an
// assistant's tool calls are sent with their ids, names and argument text
// verbatim, and every [toolgate.ToolResult] is sent as its own tool message
// (Chat Completions) or function_call_output item (Responses). Tools are
// sent as functions whose parameters are the tool's input schema
// ({"type":"object"} when it has none). In the Responses API, functions
// are sent with strict set to false, since toolgate validates arguments
// itself and not every schema meets the strict subset; that API has no stop
// sequences, and a prompt with [toolgate.ModelOptions].Stop is an error.
// Responses requests send store false and include
// ["reasoning.encrypted_content"]: nothing is kept at OpenAI, and a
// reasoning model's reasoning comes back encrypted (set
// [Options].StoreResponses to let OpenAI keep responses instead). Tool choice and parallel tool calls are sent only with tools, as the API
// requires.
//
// Replies map back to [toolgate.Response]: text (or the refusal, when the
// model refused), tool calls exactly as the model produced them (arguments
// that are not valid JSON included: toolgate answers such calls with an
// error result), the finish reason (stop, length, tool_calls,
// content_filter; a reply with tool calls that a server reports as "stop"
// finishes with tool_calls, and a refusal with [toolgate.FinishRefusal],
// its text being the model's explanation), the usage with cached input and reasoning
// tokens, the response id and the model.
//
// # Reasoning, phases and parts
//
// A reply that holds more than text and calls keeps its whole content, in
// order, in [toolgate.AssistantMessage].Parts; a plain reply has no parts,
// so stored conversations of plain models look as before.
//
// Responses API: the output items are read in order. A reasoning item
// becomes a [toolgate.ReasoningPart] with Provider [ProviderResponses],
// its summary as Text, its encrypted_content as Signature, and its other
// fields (id, summary, content) as Opaque; a message becomes a
// [toolgate.TextPart] keeping its id, status and phase (commentary or
// final_answer), a function_call a [toolgate.ToolCallPart] keeping its
// item id and status. A reply gets parts when it has a reasoning item or
// a phased message. When the conversation is sent again, such a reply goes
// back as the output items it came from, in their order: reasoning items
// whole, before the messages and calls that followed them, messages with
// their phase, and the items' ids, which is what OpenAI asks for when the
// caller manages the context. A reasoning item without encrypted content
// (a server that sends none) can go back only when responses are stored
// at OpenAI ([Options].StoreResponses); with store false it is left out,
// and so are the item ids of its reply, which the API would otherwise
// refuse as items without their reasoning.
//
// Chat Completions: servers in a thinking mode (DeepSeek, GLM and others)
// send the reasoning as the non-standard field reasoning_content, and
// answer 400 when the replies of a user turn in which the model called
// tools come back without it, in any later request. It becomes a
// [toolgate.ReasoningPart] with Provider [ProviderChat], first in the
// reply's parts, and is sent back as the assistant message's
// reasoning_content on the replies of every user turn with tool calls;
// the reasoning of turns without tool calls, which such servers ignore,
// is left out. The SDK keeps the field among a message's extra fields,
// which is how it is read and sent.
//
// Parts of other providers (and of the other OpenAI API) are never sent:
// their reasoning and redacted reasoning are dropped, their text goes as
// plain assistant text and their calls as plain calls. Files in a reply
// are not sent back; the APIs take none from the assistant.
//
// Streams: reasoning summary deltas (Responses) and reasoning_content
// deltas (Chat Completions) are [toolgate.Chunk].Reasoning, and the last
// chunk carries the reply's parts. A Responses stream's parts are read
// from its response.output_item.done events, whose encrypted_content is
// the one to send back; a streamed reply and the same reply not streamed
// give identical messages.
//
// # Images and files
//
// [toolgate.FilePart] values in a user message are sent after its text:
// images as input_image (Responses) or image_url (Chat Completions), by URL
// or as a data URL of their bytes; other files as input_file with their
// bytes or URL (Responses) or as a file part with their bytes (Chat
// Completions, which takes no file URL: [ErrUnsupportedFile]). Files of a
// [toolgate.ToolResult] go into the function_call_output's content list
// (Responses). Chat Completions tool messages hold only text, so there the
// files of a tool message's results follow it in one user message, each
// result's files opened by a line naming its call. The inline bytes of one
// request are limited by [Options].MaxFileBytes ([ErrFileTooLarge]); a
// file part with neither or both of bytes and URL is
// [ErrUnsupportedFile]. Both errors come before anything is sent.
//
// # Tool call ids
//
// Calls without an id (some OpenAI-compatible servers give none) pass
// through with an empty id, and toolgate keys them by position. The APIs
// need an id on every call of a request, and pair results with calls by id,
// so when a reply is sent back, a call whose id is empty, or shared with
// another call of the same reply, is sent with the id
// "call_<m>_<i>", where m is the index of the reply among the prompt's
// messages and i the call's position in the reply. Its result, which
// answers the call at the same position of the following tool message, is
// sent with the same id. The ids are derived again for every request, from
// the conversation alone, so that a paused turn resumed in another process
// sends the same ids.
//
// # Streaming
//
// [Model.Stream] yields text deltas, reasoning deltas and tool-call fragments as they arrive
// ([toolgate.ToolCallDelta], with the API's call index; the toolgate client
// assembles them) and, last, a chunk with the finish reason, the usage, the
// response id, the model and the reply's parts (when it has any). Chat Completions streams are requested with
// stream_options.include_usage. A stream that ends before the API reported
// the end of the reply (a finish reason, or response.completed) yields an
// error, never a silently truncated reply. Breaking out of the loop closes
// the HTTP response.
//
// # Errors
//
// Failures reported by the API, after the SDK's own retries (see
// [Options].MaxRetries), are [*provider.Error] values with Provider
// "openai", the kind from the HTTP status, the status, the provider's
// message and the wait a Retry-After header asked for (RetryAfter); match them with errors.Is and [provider.ErrRateLimited],
// [provider.ErrAuth], [provider.ErrBadRequest] or
// [provider.ErrServer]. The SDK's error is wrapped. Errors reported
// inside a stream or a failed response, cut streams and malformed answers
// are ModelErrors too (kind from the error code, or other). A canceled
// context gives an error wrapping ctx.Err(). Errors never hold message
// content, and the package logs nothing.
package openai
