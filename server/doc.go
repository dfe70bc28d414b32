// Package server is toolgate's approval service as an [http.Handler]:
// principals authenticated by API key hold conversations with agents; a
// turn whose reply holds a gated call pauses; the pause waits in the
// approval inbox of the principals whose roles may decide it; and their
// decisions resume the turn exactly once, from the reply kept in the
// agent's store — never from the request.
//
//	package main
//
//	import (
//		"log"
//		"net/http"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/server"
//	)
//
//	func main() {
//		client := toolgate.NewClient(myModel, myTools, nil)
//		srv, err := server.New(&server.Config{
//			Agents: map[string]*server.Agent{"flights": {
//				Client:    client,
//				Approvals: []server.ApprovalRule{{Roles: []string{"approver"}}},
//			}},
//			APIKeys: []server.APIKey{
//				{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}},
//				{SHA256: server.HashAPIKey(approverKey), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
//			},
//		})
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer srv.Close()
//		log.Fatal(http.ListenAndServe("127.0.0.1:8080", srv))
//	}
//
// The API is described in docs/API.md and docs/openapi.yaml; "toolgate
// serve" runs the server with timeouts and graceful shutdown.
//
// A [Config] can also come from a YAML file (see examples/serve.yaml):
// [LoadConfig] reads and checks it, reporting every problem with its line
// and column as a [*ConfigError], and [Build] opens its store, connects
// to its agents' MCP servers (package mcptool) and builds its agents. Besides API keys, [Config.Tokens] can accept JWT bearer
// tokens of an OpenID Connect provider, verified by an [OIDC].
//
// Exactly once: a decision first takes the pause in the server (a second
// decision, concurrent or later, is answered 409 "already_decided" with
// the first decision's record), then resumes it through
// [toolgate.Client.Resume] naming the pause, whose atomic claim in the
// store refuses every other resumption, in this process or another.
//
// Expiry: with [Config.PauseTTL] or [Agent.PauseTTL] set, a pause nobody
// decides in time is expired through [toolgate.Client.ExpireOpenPause] —
// lazily when a request touches it, and by a background sweeper that
// [Server.Close] stops — and a late decision gets 409 "expired".
//
// Pages: the server also serves web pages for people (see docs/API.md,
// "Web pages"): sign-in with an API key, which starts a session held in
// memory for [Config.SessionTTL] (an HttpOnly, SameSite=Strict cookie that
// the API accepts in place of a bearer token), the conversations, a chat
// page per conversation, the approval inbox with a decision form per
// pause, and a conversation's audit trail. Every state-changing request,
// pages and API alike, passes [http.CrossOriginProtection]; pages carry a
// Content-Security-Policy that allows no inline script, and build the DOM
// from text only. [Server.Routes] lists the API, not the pages.
//
// This is a first slice of the service: the server's own records (who owns
// a conversation, who decided a pause) are kept in memory and lost when the
// process exits, although the conversations stay in the agent's store.
package server
