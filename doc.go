// Package toolgate runs LLM tool calls that can wait for a person's
// decision.
//
// A tool (or a policy over a call's arguments) can require confirmation.
// When a model reply holds such a call, the whole reply pauses: none of its
// calls runs, the caller gets the reply back with the keys of the calls that
// await a decision, a person allows, denies or edits every call, and the
// turn resumes from the stored conversation, once. The example of
// [Client.Resume] is a complete program.
//
//   - [Client] runs whole turns (model, tools, model, …), blocking
//     ([Client.Call]) or streaming ([Client.Stream]), and resumes a paused
//     reply with one [Decision] per call ([Client.Resume]); keys name calls
//     ([AssistantMessage.CallKeys]).
//   - Tools are raw ([NewTool]: JSON in, text out) or typed ([NewToolFor]:
//     the input schema is inferred from a Go struct and arguments are
//     checked before the function runs).
//   - [Model] is what providers implement (package provider has adapters
//     over the official SDKs); messages, parts, [Prompt], [Response] and
//     [Chunk] are plain data with a stable JSON form.
//   - A [ConversationStore] keeps conversations and their pause (package
//     store has the implementations); a call of a decided pause is recorded
//     as started before it runs, so [Client.RecoverPause] finishes a
//     resumption that died without running any call twice.
//   - [ClientOptions.Authorize], [ClientOptions.Protect] and
//     [ClientOptions.SearchTools] begin, for each request, the [Authorizer],
//     [Protector] and [ToolSearch] of packages authz, privacy and toolsearch.
//
// A paused reply is read from the store, never from a client request. Deny
// messages and edited arguments reach the model and the tools: they are
// untrusted input, checked like a model's arguments.
package toolgate
