package server_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
)

// A traveller's turn pauses on bookFlight; an approver allows it, and the
// turn completes.
func Example() {
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), nil)
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:    client,
			Approvals: []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey("traveller-key"), Principal: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}},
			{SHA256: server.HashAPIKey("approver-key"), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
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
		return fmt.Sprint(rec.Code, " ", rec.Body.String())
	}
	field := func(s, name string) string {
		_, rest, _ := strings.Cut(s, `"`+name+`":"`)
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}

	conv := field(do("POST", "/v1/conversations", "traveller-key", `{}`), "id")
	turn := do("POST", "/v1/conversations/"+conv+"/messages", "traveller-key", `{"input":"`+flightdemo.Input+`"}`)
	fmt.Println("turn:", field(turn, "status"))
	inbox := do("GET", "/v1/inbox", "approver-key", "")
	pause := field(inbox, "pause_id")
	out := do("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", "approver-key",
		`{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	fmt.Println("decision:", field(out, "status"), "-", field(out, "text"))
	again := do("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", "approver-key",
		`{"decisions":[{"key":"call_book","verdict":"deny"}]}`)
	fmt.Println("again:", again[:3], field(again, "error"))
	fmt.Println("bookFlight ran", tools.Book.Load(), "time")
	// Output:
	// turn: paused
	// decision: completed - VX205 is on time. Your seat on VX205 is booked.
	// again: 409 already_decided
	// bookFlight ran 1 time
}
