package toolgate

import (
	"context"
)

// BeginParams are the inputs of the functions that begin a request's guards
// ([ClientOptions.Authorize], [ClientOptions.Protect],
// [ClientOptions.SearchTools]): the request (a turn of [Client.Call] or
// [Client.Stream], or a resumption) about to start. Each gets the same
// Principal, ConversationID and Resume.
type BeginParams struct {
	// Principal is the caller; nil when the caller gave none.
	Principal *Principal
	// ConversationID names the conversation.
	ConversationID string
	// Resume is true for a resumption after a pause.
	Resume bool
	// Tools is the set of tools the request starts with, in the client's
	// order (after the privacy guard, before tool middleware). Set for
	// [ClientOptions.Authorize] only: the protector sees each tool through
	// [Protector.Tool], the tool search the round's tools in
	// [ToolSearch.Offer].
	Tools []*Tool
	// SearchTool is the request's tool-search tool (see [ToolSearch]), the
	// instance the model will be offered (after the privacy guard, before
	// tool middleware), or nil. Set for [ClientOptions.Authorize] only. It is not
	// part of Tools: an authorizer recognises it by identity, offers it
	// every round without a policy decision, and refuses any other tool
	// that takes its name.
	SearchTool *Tool
}

// Authorizer is the authorization of one request (a turn, or a
// resumption), begun by [ClientOptions.Authorize] and serving that request
// only; package authz provides one. The client calls its methods in this
// order, every round:
//
//  1. Tools, before every model call: the tools the model may see. The
//     returned tools are what the client offers the model and runs, so
//     each should re-check authorization right before it runs (also when
//     a program calls [Tool.Call] itself).
//  2. CheckPrompt, after model middleware and just before the model is
//     called (only the privacy guard's tokenizing comes between): the
//     prompt may carry only tools offered in step 1, the same instances.
//  3. CheckReply, once the reply is complete and before any of its calls
//     runs or pauses (and again before a paused reply's allowed calls run
//     on resumption): every call must be authorized. A non-nil error ends
//     the request; non-nil refusals instead answer every call of the reply
//     with those results (none runs) and the turn goes on.
type Authorizer interface {
	Tools(ctx context.Context) ([]*Tool, error)
	CheckPrompt(ctx context.Context, offered []*Tool, p *Prompt) error
	CheckReply(ctx context.Context, p *Prompt, reply *AssistantMessage) (refusals []ToolResult, err error)
}

// Protector is the protection of personal data in one request (a turn, or
// a resumption), begun by [ClientOptions.Protect] and serving that request
// only; package privacy provides one. The client calls:
//   - Tool once per tool at the start: the returned tool is what the
//     authorizer (if any) and the manager see, so authorization runs on
//     tokenized arguments and before any original is restored;
//   - Messages as the last stage of every model call, after model
//     middleware and the authorizer's prompt check: what the model sees,
//     including what a middleware added (middleware, the manager and the
//     authorizer see the conversation as the client holds it); on each
//     reply with tool calls alone, once it is complete and before any of
//     its calls runs; and on the tool results that reach the caller,
//     before Output;
//   - Output on every text that reaches the caller: the text of every
//     reply, the arguments of a paused reply's calls, tool results
//     (tokenized by Messages first) of return-direct turns, of turns ended
//     by a limit and of streamed rounds, and the response's metadata; and
//     OutputStream for the text deltas of a stream;
//   - End when the request ends.
type Protector interface {
	// Messages returns msgs as the model may see them. msgs is not changed.
	Messages(ctx context.Context, msgs []Message) ([]Message, error)
	// Tool returns t wrapped so that it receives originals only of the
	// types it is granted.
	Tool(t *Tool) *Tool
	// Output rewrites a whole text for the caller.
	Output(ctx context.Context, text string) (string, error)
	// OutputStream returns a rewriter for streamed text: feed each piece
	// with final false, then call it once with final true to flush.
	OutputStream() func(ctx context.Context, piece string, final bool) (string, error)
	// End finishes the request (a conversation-scoped vault is saved).
	End(ctx context.Context) error
}

// ToolSearch is the tool search of one request (a turn, or a resumption),
// begun by [ClientOptions.SearchTools] and serving that request only;
// package toolsearch provides one. The client calls:
//   - Tool once at the start: the search tool of the request. Its name must
//     differ from every tool of the client.
//   - Offer before every model call, and once before a resumption runs the
//     calls of the paused reply, with the conversation as the client holds
//     it (original values, not tokens; without the system prompt) and the
//     round's tools without the search tool: the tools the authorizer
//     offered, or all the client's tools when there is no authorizer. Offer
//     makes exactly these tools searchable by the search tool and returns
//     those to offer the model with it, a subset of tools (the same
//     instances).
//
// A resumption runs the paused reply with the search tool and all the
// round's tools (not just the found ones), so that every call the person
// allowed finds its tool; the model calls after it are offered the search
// tool and Offer's choice again.
type ToolSearch interface {
	Tool() *Tool
	Offer(ctx context.Context, history []Message, tools []*Tool) ([]*Tool, error)
}
