package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/server"
)

// Order is the input of the example's tools: the schema the model sees
// is inferred from it, and arguments are checked against it before a tool
// runs.
type Order struct {
	ID     string `json:"id" jsonschema:"the order number, such as A-1001"`
	Reason string `json:"reason,omitempty" jsonschema:"why the customer wants a refund"`
}

// Refund is what the refund tool returns to the model.
type Refund struct {
	Order  string `json:"order"`
	Amount string `json:"amount"`
}

// A service of your own tools, written in Go: lookupOrder runs at once,
// refundOrder waits for a person of the "support-lead" role.
func Example_typedTools() {
	lookup := toolgate.NewToolFor("lookupOrder", "Look an order up",
		func(ctx context.Context, req *toolgate.ToolRequest, in Order) (map[string]string, error) {
			return map[string]string{"order": in.ID, "status": "delivered", "total": "49.90 EUR"}, nil
		}, nil)
	refund := toolgate.NewToolFor("refundOrder", "Refund an order in full",
		func(ctx context.Context, req *toolgate.ToolRequest, in Order) (Refund, error) {
			// req.IdempotencyKey is the same for every attempt at this call:
			// pass it to the payment service.
			return Refund{Order: in.ID, Amount: "49.90 EUR"}, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})

	// The model's part, scripted here; use provider/openai, anthropic or
	// gemini in production.
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			return scripted.Reply{Text: "Done: " + tm.Results[1].Content}, nil
		}
		return scripted.Reply{Text: "Let me refund that.", ToolCalls: []toolgate.ToolCall{
			{ID: "call_lookup", Name: "lookupOrder", Arguments: `{"id":"A-1001"}`},
			{ID: "call_refund", Name: "refundOrder", Arguments: `{"id":"A-1001","reason":"damaged"}`},
		}}, nil
	})
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"support": {
			Client:         toolgate.NewClient(model, []*toolgate.Tool{lookup, refund}, nil),
			RequesterRoles: []string{"agent"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"refundOrder"}, Roles: []string{"support-lead"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey("agent-key"), Principal: toolgate.Principal{ID: "sam", Roles: []string{"agent"}}},
			{SHA256: server.HashAPIKey("lead-key"), Principal: toolgate.Principal{ID: "lee", Roles: []string{"support-lead"}}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	do := func(method, path, key, body string) string {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Body.String()
	}
	field := func(s, name string) string {
		_, rest, _ := strings.Cut(s, `"`+name+`":"`)
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}
	conv := field(do("POST", "/v1/conversations", "agent-key", `{}`), "id")
	turn := do("POST", "/v1/conversations/"+conv+"/messages", "agent-key", `{"input":"Refund A-1001, it arrived damaged"}`)
	fmt.Println("turn:", field(turn, "status"))
	pause := field(do("GET", "/v1/inbox", "lead-key", ""), "pause_id")
	out := do("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", "lead-key",
		`{"decisions":[{"key":"call_lookup","verdict":"allow"},{"key":"call_refund","verdict":"allow"}]}`)
	fmt.Println("decision:", field(out, "status"))
	var answer struct{ Text string }
	json.Unmarshal([]byte(out), &answer)
	fmt.Println(answer.Text)
	// Output:
	// turn: paused
	// decision: completed
	// Done: {"order":"A-1001","amount":"49.90 EUR"}
}
