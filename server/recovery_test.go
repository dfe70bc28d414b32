package server_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
)

// abandon claims the open pause of conv as a resumption that allowed both
// calls would, records bookFlight as started, and stops there, as a
// resumption whose process died after starting the call would.
func abandon(t *testing.T, store toolgate.ConversationStore, conv, pause string) {
	t.Helper()
	ctx := context.Background()
	claim := &toolgate.Claim{Token: "dead", At: time.Now(), Decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")}}
	if err := store.ClaimPause(ctx, conv, pause, claim); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkStarted(ctx, conv, pause, "dead", []string{"call_book"}); err != nil {
		t.Fatal(err)
	}
}

// recoveryServer serves the flight agent on a memory store with the given
// claim lease and no pause expiry.
func recoveryServer(t *testing.T, lease time.Duration) (*fixture, *toolgate.MemoryStore) {
	t.Helper()
	store := toolgate.NewMemoryStore()
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{Store: store, SystemPrompt: flightdemo.SystemPrompt})
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}},
			{SHA256: server.HashAPIKey(approverKey), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
		},
		ClaimLease: lease,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv, tools: tools}, store
}

func TestRecoverAbandonedClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, store := recoveryServer(t, 0)
		conv, pause := f.pause(travellerKey)
		abandon(t, store, conv, pause)

		time.Sleep(server.DefaultClaimLease - time.Nanosecond)
		synctest.Wait()
		if c, _ := store.Load(context.Background(), conv); c.Pause == nil || c.Pause.ClaimToken != "dead" {
			t.Fatalf("the claim was taken over before its lease ended: %+v", c.Pause)
		}

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		c, err := store.Load(context.Background(), conv)
		if err != nil {
			t.Fatal(err)
		}
		if c.Pause != nil {
			t.Fatalf("the claim was not recovered after its lease: %+v", c.Pause)
		}
		want := &toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "call_status", Name: "flightStatus", Content: `"Flight VX205 is on time"`, Status: toolgate.ResultOK},
			{CallID: "call_book", Name: "bookFlight", Content: toolgate.InterruptedMessage, Status: toolgate.ResultInterrupted},
		}}
		if diff := cmp.Diff(toolgate.Message(want), c.Messages[2]); diff != "" {
			t.Errorf("stored results (-want +got):\n%s", diff)
		}
		if s, b := f.runs(); s != 1 || b != 0 {
			t.Errorf("runs: status %d book %d; want status once, book never (it was started before)", s, b)
		}
		// The conversation takes new input again; a decision on the
		// recovered pause decides nothing.
		f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"thanks"}`)
		if s, b := f.runs(); b != 0 {
			t.Errorf("runs after new input: status %d book %d; want book never", s, b)
		}
	})
}

func TestRecoveryOff(t *testing.T) {
	// A negative lease turns recovery off: the claim stays.
	synctest.Test(t, func(t *testing.T) {
		f, store := recoveryServer(t, -1)
		conv, pause := f.pause(travellerKey)
		abandon(t, store, conv, pause)
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		if c, _ := store.Load(context.Background(), conv); c.Pause == nil || c.Pause.ClaimToken != "dead" {
			t.Errorf("the claim was recovered with recovery off: %+v", c.Pause)
		}
	})
}

func TestConfigClaimLease(t *testing.T) {
	fc, err := server.LoadConfig(writeConfig(t, validConfig+"claim_lease: 90s\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeStore, err := server.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if cfg.ClaimLease != 90*time.Second {
		t.Errorf("ClaimLease = %v, want 90s", cfg.ClaimLease)
	}
	_, err = server.LoadConfig(writeConfig(t, validConfig+"claim_lease: soon\n"))
	if err == nil || !strings.Contains(err.Error(), "claim_lease") {
		t.Errorf("claim_lease: soon: got error %v, want one naming claim_lease", err)
	}
}
