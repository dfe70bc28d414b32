package gemini_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/gemini"
)

// Example pauses a turn on a gated tool and resumes it, against a local
// server that answers like the Gemini API. Gemini gives its function calls
// no ids, so the decision names the call by its position, "#0".
func Example() {
	replies := []string{
		`{"candidates":[{"content":{"role":"model","parts":[
		   {"functionCall":{"name":"refund","args":{"order":"A17"}}}]},"finishReason":"STOP"}],
		  "usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":9}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Order A17 is refunded."}]},"finishReason":"STOP"}],
		  "usageMetadata":{"promptTokenCount":70,"candidatesTokenCount":7}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[0])
		replies = replies[1:]
	}))
	defer srv.Close()

	model, err := gemini.New(&gemini.Options{
		APIKey:  "example-key",
		BaseURL: srv.URL, // "" for the real API
		Model:   "gemini-2.5-flash",
	})
	if err != nil {
		log.Fatal(err)
	}
	type order struct {
		Order string `json:"order"`
	}
	refund := toolgate.NewToolFor("refund", "Refunds an order.",
		func(_ context.Context, _ *toolgate.ToolRequest, in order) (string, error) {
			return "refunded " + in.Order, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})

	client := toolgate.NewClient(model, []*toolgate.Tool{refund}, nil)
	ctx := context.Background()
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c1", Input: "Refund order A17."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("awaiting:", resp.Awaiting)

	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID,
		ConversationID: "c1",
		Decisions:      []toolgate.Decision{toolgate.Allow("#0")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text())
	// Output:
	// awaiting: [#0]
	// Order A17 is refunded.
}

// Example_thoughtSignatures pauses a turn of a thinking model on a gated
// tool and resumes it: the call goes back with the thoughtSignature the
// model gave it, so the model keeps its reasoning across the pause. The
// local server prints the signature of the call it gets back.
func Example_thoughtSignatures() {
	replies := []string{
		`{"candidates":[{"content":{"role":"model","parts":[
		   {"functionCall":{"name":"refund","args":{"order":"A17"}},"thoughtSignature":"c2lnbmVkIGJ5IHRoZSBtb2RlbA=="}]},"finishReason":"STOP"}],
		  "usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":9,"thoughtsTokenCount":60}}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Order A17 is refunded."}]},"finishReason":"STOP"}],
		  "usageMetadata":{"promptTokenCount":70,"candidatesTokenCount":7}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Contents []struct {
				Role  string
				Parts []struct{ ThoughtSignature string }
			}
		}
		json.NewDecoder(r.Body).Decode(&req)
		for _, c := range req.Contents {
			if c.Role == "model" {
				fmt.Println("signature sent back:", c.Parts[0].ThoughtSignature)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[0])
		replies = replies[1:]
	}))
	defer srv.Close()

	model, err := gemini.New(&gemini.Options{APIKey: "example-key", BaseURL: srv.URL, Model: "gemini-3-pro-preview"})
	if err != nil {
		log.Fatal(err)
	}
	type order struct {
		Order string `json:"order"`
	}
	refund := toolgate.NewToolFor("refund", "Refunds an order.",
		func(_ context.Context, _ *toolgate.ToolRequest, in order) (string, error) {
			return "refunded " + in.Order, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})

	client := toolgate.NewClient(model, []*toolgate.Tool{refund}, nil)
	ctx := context.Background()
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "c1", Input: "Refund order A17."})
	if err != nil {
		log.Fatal(err)
	}
	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID,
		ConversationID: "c1",
		Decisions:      []toolgate.Decision{toolgate.Allow("#0")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text())
	// Output:
	// signature sent back: c2lnbmVkIGJ5IHRoZSBtb2RlbA==
	// Order A17 is refunded.
}
