// Package mcptool offers the tools of MCP servers as toolgate tools, over
// the official MCP Go SDK.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/mcptool"
//		"github.com/toolgate/toolgate/provider/scripted"
//	)
//
//	func main() {
//		ctx := context.Background()
//		fs, err := mcptool.Connect(ctx,
//			mcptool.Command("npx", &mcptool.CommandOptions{Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"}}),
//			&mcptool.Options{Prefix: "fs_", ConfirmTools: []string{"fs_write_*", "fs_edit_file", "fs_move_file"}})
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer fs.Close()
//
//		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{
//			{ID: "c1", Name: "fs_write_file", Arguments: `{"path":"/srv/notes/todo.txt","content":"buy milk"}`},
//		}})
//		client := toolgate.NewClient(model, fs.Tools(), nil)
//		resp, err := client.Call(ctx, &toolgate.CallParams{Input: "Note that I must buy milk"})
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(resp.Paused(), resp.Awaiting) // true [c1]: nothing was written yet
//	}
//
// # Connecting
//
// [Connect] takes a [Dialer]: [Command] starts a server and talks to it
// over stdio, [HTTP] reaches a streamable HTTP endpoint (with headers and
// a bearer token), [InMemory] connects a server of the same process. The
// Server lists the tools (following pagination) when it connects and again
// when the server sends a list-changed notification; the exposed set is
// replaced as a whole, atomically. A [toolgate.Client] keeps the tools it
// was built with, so a turn that already started keeps its tools; build a
// new client from [Server.Tools] (with the same store) to offer a changed
// set.
//
// When the connection is lost the Server reconnects with exponential
// backoff, bounded by [Options.MaxBackoff], until it is closed. Calls
// during the outage fail with [ErrNotConnected]; a call in flight when the
// server dies fails too. Like every tool error these become error results
// for the model: the turn is not lost. After reconnection the tools are
// listed again.
//
// # Names and schemas
//
// The model sees each tool as [Options.Prefix] followed by the server's
// name. A name that is not valid for toolgate (see
// [toolgate.ValidToolName]), a second tool of the same name, and a tool
// whose input schema does not decode into a [jsonschema.Schema], does not
// resolve (remote references, bad patterns), is not of type "object" or is
// larger than 256 KiB are skipped: they are logged and reported by
// [Server.Issues], never a panic. A tool with a broken schema is skipped
// rather than offered without one, because a model that cannot see the
// arguments cannot call it correctly, and a schema a provider rejects would
// fail every turn. Schemas are shown to the model; the server validates
// the arguments.
//
// # Results
//
// Text content is joined with newlines; structured content is added as
// JSON (unless a text part already holds the same value); images, audio and
// resources are described in brackets. A result the server marks as an
// error is returned as a [*ToolError], which toolgate turns into an error
// result. Cancelling a call's context cancels the request on the server.
//
// # Confirmation, authorization, privacy
//
// MCP annotations are hints from a server that may not be trusted. They can
// only add confirmation: [Options.Hints] decides whether destructiveHint
// (and, with [HintNotReadOnly], a missing readOnlyHint) sets
// [toolgate.ToolMetadata.RequiresConfirmation]. [Options.ConfirmTools]
// names tools, by exact name or [path.Match] pattern on the names the
// model sees, that need confirmation whatever the annotations say; nothing
// a server sends can remove it. A manager that does not honour the
// metadata flag can add [Server.Policy] to keep the named tools gated.
//
// Who may see and call which tool, and which personal data a tool may
// receive, are not decided here and not by the server: they are the
// authorizer's and the protector's rules, configured on the
// [toolgate.Client] (packages authz and privacy), and they apply to these
// tools like to any other, by the names the model sees.
//
// A [Server] is safe for concurrent use; its tools are immutable.
package mcptool
