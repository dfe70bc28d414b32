package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
)

// The service writes the audit log of a pause and its decision; the chain
// verifies.
func ExampleConfig_audit() {
	log := audit.NewMemoryLog() // audit/sqlite keeps one in a file
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), nil)
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:    client,
			Approvals: []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey("traveller-key"), Principal: toolgate.Principal{ID: "ada"}},
			{SHA256: server.HashAPIKey("approver-key"), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
		},
		Audit: log,
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

	conv := field(do("POST", "/v1/conversations", "traveller-key", `{}`), "id")
	pause := field(do("POST", "/v1/conversations/"+conv+"/messages", "traveller-key", `{"input":"`+flightdemo.Input+`"}`), "id")
	do("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", "approver-key", `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)

	for r, err := range log.Records(context.Background(), nil) {
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Seq, r.Kind, r.CallKey, r.Actor.ID, r.Reason)
	}
	rep, err := audit.Verify(context.Background(), log, nil)
	fmt.Println("intact:", rep.Records, err)
	// Output:
	// 1 requested call_book ada awaiting a decision
	// 2 decided call_book bob allow
	// 3 executed call_status bob ok
	// 4 executed call_book bob ok
	// intact: 4 <nil>
}
