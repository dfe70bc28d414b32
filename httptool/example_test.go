package httptool_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httptool"
	"github.com/toolgate/toolgate/provider/scripted"
)

// A refund service behind an HTTP tool: the model's call pauses for a
// person, and once allowed it reaches the service with the call's
// idempotency key.
func Example() {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("service: %s %s %s key=%t\n", r.Method, r.URL.Path, body, r.Header.Get("Idempotency-Key") != "")
		io.WriteString(w, `{"refunded":true}`)
	}))
	defer svc.Close()

	refund, err := httptool.New(&httptool.Options{
		Name:        "refundOrder",
		Description: "Refund an order in full",
		InputSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"order": {Type: "string"}, "reason": {Type: "string"}},
			Required:   []string{"order"},
		},
		Metadata: toolgate.ToolMetadata{RequiresConfirmation: true},
		URL:      svc.URL + "/orders/{order}/refund",
		Header:   http.Header{"Authorization": {"Bearer demo-token"}},
	})
	if err != nil {
		panic(err)
	}
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "refundOrder", Arguments: `{"order":"A-1001","reason":"damaged"}`}}},
		scripted.Reply{Text: "Order A-1001 is refunded."},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{refund}, nil)
	ctx := context.Background()
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "conv1", Input: "Refund A-1001, it arrived damaged"})
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", resp.Paused())
	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "conv1", PauseID: resp.PauseID, Decisions: []toolgate.Decision{toolgate.Allow(resp.Awaiting[0])}})
	if err != nil {
		panic(err)
	}
	fmt.Println("assistant:", resp.Text())
	// Output:
	// paused: true
	// service: POST /orders/A-1001/refund {"order":"A-1001","reason":"damaged"} key=true
	// assistant: Order A-1001 is refunded.
}

// A service that fails answers the model with an error result.
func ExampleStatusError() {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "inventory database unavailable", http.StatusServiceUnavailable)
	}))
	defer svc.Close()
	stock, err := httptool.New(&httptool.Options{Name: "stock", Method: "GET", URL: svc.URL + "/stock/{sku}"})
	if err != nil {
		panic(err)
	}
	_, err = stock.Call(context.Background(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Name: "stock", Arguments: `{"sku":"X-1"}`}})
	fmt.Println(err)
	// Output:
	// httptool: HTTP 503 Service Unavailable: inventory database unavailable
}
