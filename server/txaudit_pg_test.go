package server_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
)

// TestAuditInStorePostgresTwoInstances runs two instances of the service
// on one PostgreSQL schema, with the records and the audit log in the
// store: conversations pause on one instance and are decided on the other,
// several at once. The deployment has one audit chain; it verifies and
// holds each conversation's records once, in order.
func TestAuditInStorePostgresTwoInstances(t *testing.T) {
	url, schema := pgtest.Schema(t, "toolgate_txaudit_test_")
	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	var (
		fs     [2]*fixture
		stores [2]*postgres.Store
	)
	for i := range fs {
		st, err := postgres.Open(t.Context(), url, &postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
		tools := &flightdemo.Tools{}
		client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{Store: st, SystemPrompt: flightdemo.SystemPrompt})
		srv, err := server.New(&server.Config{
			Agents: map[string]*server.Agent{"flights": {
				Client: client, RequesterRoles: []string{"traveller"},
				Approvals: []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
			}},
			APIKeys: []server.APIKey{key(travellerKey, "ada", "traveller"), key(approverKey, "bob", "approver")},
			Records: mustRecords(t, st),
			Audit:   st.AuditLog(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		fs[i] = &fixture{t: t, h: srv, srv: srv, tools: tools}
	}

	const conversations = 6
	convs := make([]string, conversations)
	var wg sync.WaitGroup
	for i := range conversations {
		wg.Go(func() {
			// Errorf, not Fatalf: this is not the test's goroutine.
			a, b := fs[i%2], fs[(i+1)%2]
			code, c := a.do("POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)
			if code != 201 {
				t.Errorf("create: %d %v", code, c)
				return
			}
			conv := c["id"].(string)
			code, out := a.do("POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
			if code != 200 || out["status"] != "paused" {
				t.Errorf("message: %d %v, want a pause", code, out)
				return
			}
			convs[i] = conv
			pause := out["pause"].(map[string]any)["id"].(string)
			if code, out := b.do("POST", decisionsPath(conv, pause), approverKey, allowBook); code != 200 {
				t.Errorf("decision on the other instance: %d %v", code, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	sealPending(t, stores[0].AuditLog())
	rep, err := audit.Verify(t.Context(), stores[0].AuditLog(), nil)
	if err != nil || rep.Records != 4*conversations {
		t.Fatalf("Verify: %+v, %v; want %d intact records", rep, err, 4*conversations)
	}
	want := []string{
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob allow",
		"executed P call_status person:bob ok",
		"executed P call_book person:bob ok",
	}
	for _, conv := range convs {
		if got := summaries(auditRecords(t, stores[1].AuditLog(), conv)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("records of %s:\n%v\nwant\n%v", conv, got, want)
		}
	}
	page, err := mustRecords(t, stores[0]).ListPending(t.Context(), nil)
	if err != nil || len(page.Pending) != 0 {
		t.Errorf("index after every decision: %v, %v; want empty", page, err)
	}
}
