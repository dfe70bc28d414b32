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
// package serve reads and checks it and builds the Config, with the model
// providers, stores, Cedar policies and MCP servers it names; this package
// links none of them. Besides API keys, [Config.Tokens] can accept JWT bearer
// tokens of an OpenID Connect provider, verified by an [OIDC].
//
// Exactly once: a decision first takes the pause in the server's records
// (a second decision, concurrent or later, on any instance sharing them,
// is answered 409 "already_decided" with the first decision's record),
// then resumes it through
// [toolgate.Client.Resume] naming the pause, whose atomic claim in the
// store refuses every other resumption, in this process or another.
//
// Expiry: with [Config.PauseTTL] or [Agent.PauseTTL] set, a pause nobody
// decides in time is expired through [toolgate.Client.ExpireOpenPause] —
// lazily when a request touches it, and by a background sweeper that
// [Server.Close] stops — and a late decision gets 409 "expired".
//
// Audit: with [Config.Audit] set, the server writes a hash-chained record
// (package audit) when a call pauses, is decided, runs, is denied,
// expires or is refused ([AuditAuthorizer] records an authorizer's
// refusals), and when a person is shown the personal data behind its
// privacy tokens; records hold argument digests, never arguments. GET
// /v1/conversations/{id}/audit returns a conversation's records with the
// verification of the chain. For an agent with [Agent.Privacy], the inbox
// and the conversation view show tokens; [Agent.RevealRoles] may ask for
// the originals, each reveal audited first.
//
// Records: the server's own records — conversations' owners, decision
// records with their source (person, sticky grant, expiry), the index of
// open pauses that the inbox and the sweeper read, first approvals under a
// two-person rule ([ApprovalRule.Approvers]) and sticky grants
// ([ApprovalRule.StickyMax]) — are kept in [Config.Records], a
// records.Store. [Build] uses the one of the file's SQLite or PostgreSQL
// store, so a restarted server, or another instance on the same database,
// knows them; without one, they are kept in memory.
//
// Events: GET /v1/conversations/{id}/events and GET /v1/inbox/events
// stream server-sent events ([Event]) when a turn completes or pauses or
// a pause is decided or expires. [Config.Broker] carries them between the
// instances that share the agents' stores ([LocalBroker] within a
// process).
//
// Operations: GET /healthz and GET /readyz (the stores answer a ping)
// need no authentication; GET /metrics serves the Prometheus metrics of
// [Config.Telemetry] (see package telemetry), protected by
// [Config.MetricsRoles] when set. Every request gets an X-Request-Id (see
// [RequestID]), a span, a deadline ([Config.TurnTimeout],
// [Config.RequestTimeout]; 504 "timeout" past it) and one log line.
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
package server
