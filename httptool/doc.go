// Package httptool makes tools of HTTP endpoints: a call of the tool sends
// one request with the call's arguments and the model reads the response.
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//		"net/http"
//		"os"
//
//		"github.com/google/jsonschema-go/jsonschema"
//
//		"github.com/toolgate/toolgate"
//		"github.com/toolgate/toolgate/httptool"
//		"github.com/toolgate/toolgate/provider/scripted"
//	)
//
//	func main() {
//		refund, err := httptool.New(&httptool.Options{
//			Name:        "refundOrder",
//			Description: "Refund an order in full",
//			InputSchema: &jsonschema.Schema{
//				Type:       "object",
//				Properties: map[string]*jsonschema.Schema{"order": {Type: "string"}},
//				Required:   []string{"order"},
//			},
//			Metadata: toolgate.ToolMetadata{RequiresConfirmation: true},
//			URL:      "https://shop.example.com/orders/{order}/refund",
//			Header:   http.Header{"Authorization": {"Bearer " + os.Getenv("SHOP_TOKEN")}},
//		})
//		if err != nil {
//			log.Fatal(err)
//		}
//		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{
//			{ID: "c1", Name: "refundOrder", Arguments: `{"order":"A-1001"}`},
//		}})
//		client := toolgate.NewClient(model, []*toolgate.Tool{refund}, nil)
//		resp, err := client.Call(context.Background(), &toolgate.CallParams{Input: "Refund order A-1001"})
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(resp.Paused()) // true: nothing is sent before a person allows it
//	}
//
// # Requests
//
// POST (the default), PUT and PATCH send the arguments, unchanged, as the
// JSON body. GET and DELETE send them as query parameters. Placeholders in
// the URL's path, such as {order}, take the argument of that name. The
// headers of [Options.Header] go with every request; a call that paused for
// a person's decision also sends its [toolgate.ToolRequest.IdempotencyKey]
// in an Idempotency-Key header, the same key for every attempt at the call,
// so that a retried or recovered call is applied once by a service that
// honours the header.
//
// # Results
//
// A 2xx response's body is the text the model reads. Anything else is an
// error result for the model, which the turn goes on with: a status other
// than 2xx ([*StatusError], with the start of the body), a call past
// [Options.Timeout] ([ErrTimeout]), a body larger than
// [Options.MaxResponseBytes] ([ErrResponseTooLarge]), arguments that break the
// input schema ([toolgate.ErrInvalidArguments]; no request is sent).
// Redirects are not followed.
//
// # Configuration
//
// [New] checks the options and reports every problem, by the field's name
// in a configuration file, in an [*OptionsError]; [Options.Check] returns
// the same problems. toolgate serve builds its configuration file's
// http_tools with this package (see docs/SERVICE.md).
package httptool
