// Package telemetry records what toolgate does as Prometheus metrics and
// OpenTelemetry traces: model calls and tool runs through client
// middleware, turns with [Telemetry.StartTurn], and — with package server
// — requests, decisions and open pauses. Spans follow the OpenTelemetry
// gen_ai semantic conventions (gen_ai.operation.name chat,
// execute_tool, invoke_agent) and never hold message content, arguments
// or results.
//
//	package main
//
//	import (
//		"log"
//		"net/http"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/telemetry"
//	)
//
//	func main() {
//		tel := telemetry.New(nil) // a registry of its own; the global tracer provider
//		client := toolgate.NewClient(myModel, myTools, &toolgate.ClientOptions{
//			ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{
//				tel.ModelMiddleware(&telemetry.Model{Agent: "flights", Provider: "openai", Name: "gpt-4.1-mini"}),
//			},
//			ToolMiddleware: []func(toolgate.ToolFunc) toolgate.ToolFunc{tel.ToolMiddleware("flights")},
//		})
//		_ = client // run turns; wrap each in tel.StartTurn to record it as a turn
//		http.Handle("/metrics", tel.Handler())
//		log.Fatal(http.ListenAndServe("127.0.0.1:9090", nil))
//	}
//
// The core package toolgate does not depend on this one: instrumentation
// is middleware a program chooses to install. Give the same [Telemetry] to
// server.Config.Telemetry to have the service's metrics in the same
// registry and its request spans as the parents of the turns' spans.
package telemetry
