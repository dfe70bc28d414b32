package loadgen_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/loadgen"
	"github.com/toolgate/toolgate/server"
)

// Decide 100 paused flight bookings against an in-process service,
// measuring the CPU time of this process per pause in each phase.
func Example() {
	tools := &flightdemo.Tools{}
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:    toolgate.NewClient(flightdemo.Model(), tools.Tools(), nil),
			Approvals: []server.ApprovalRule{{Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey("t"), Principal: toolgate.Principal{ID: "ada"}},
			{SHA256: server.HashAPIKey("a"), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	rep, err := loadgen.Run(context.Background(), loadgen.Options{
		URLs: []string{hs.URL}, RequesterKey: "t", ApproverKey: "a",
		Input: flightdemo.Input, Pauses: 100, Concurrency: 8,
		Meter: &loadgen.ProcMeter{}, // this process; add a PostgresMeter for a PostgreSQL store
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("decided:", rep.Decide.Count, "booked:", tools.Book.Load())
	fmt.Println("measured:", rep.Open != nil && rep.Decided != nil && rep.Decided.ServiceCPU >= 0)
	// Output:
	// decided: 100 booked: 100
	// measured: true
}
