package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
)

const seniorKey = "key-senior" // an approver who is also "senior"

// inboxItem returns the caller's one inbox item, failing the test unless
// there is exactly one.
func (f *fixture) inboxItem(key string) map[string]any {
	f.t.Helper()
	items := f.must(200, "GET", "/v1/inbox", key, "")["pauses"].([]any)
	if len(items) != 1 {
		f.t.Fatalf("inbox of %s: %d items, want 1", key, len(items))
	}
	return items[0].(map[string]any)
}

// paused starts a conversation of the traveller that pauses, and returns
// its id and the pause's.
func (f *fixture) paused() (conv, pause string) {
	f.t.Helper()
	conv = f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	out := f.post(conv, flightdemo.Input)
	p, ok := out["pause"].(map[string]any)
	if out["status"] != "paused" || !ok {
		f.t.Fatalf("turn: %v, want paused", out)
	}
	return conv, p["id"].(string)
}

// TestInboxStickyMax: an inbox item's sticky_max_minutes is the most
// minutes its caller may make sticky allowing every awaiting call, and the
// server takes exactly that many: one more is refused.
func TestInboxStickyMax(t *testing.T) {
	rule := func(tool string, sticky time.Duration, roles ...string) server.ApprovalRule {
		return server.ApprovalRule{Tools: []string{tool}, Roles: roles, StickyMax: sticky}
	}
	for _, tc := range []struct {
		name       string
		rules      []server.ApprovalRule
		bothGated  bool  // flightStatus awaits a decision too
		approver   int64 // the item's sticky_max_minutes for bob (approver)
		senior     int64 // … and for sen (approver, senior)
		statusOnly bool  // a rule covers only flightStatus
	}{
		{name: "no sticky rule", rules: []server.ApprovalRule{rule("bookFlight", 0, "approver")}},
		{name: "one rule", rules: []server.ApprovalRule{rule("bookFlight", 30*time.Minute, "approver")}, approver: 30, senior: 30},
		{name: "the largest rule of the caller", rules: []server.ApprovalRule{
			rule("bookFlight", 30*time.Minute, "approver"), rule("bookFlight", 90*time.Minute, "senior")}, approver: 30, senior: 90},
		{name: "whole minutes", rules: []server.ApprovalRule{
			rule("bookFlight", 150*time.Second, "approver"), rule("bookFlight", 30*time.Second, "senior")}, approver: 2, senior: 2},
		{name: "less than a minute", rules: []server.ApprovalRule{rule("bookFlight", 59*time.Second, "approver")}},
		{name: "the smallest over the calls", bothGated: true, rules: []server.ApprovalRule{
			rule("bookFlight", 30*time.Minute, "approver"), rule("flightStatus", 10*time.Minute, "approver")}, approver: 10, senior: 10},
		{name: "a call without sticky", bothGated: true, rules: []server.ApprovalRule{
			rule("bookFlight", 30*time.Minute, "approver"), rule("flightStatus", 0, "approver")}},
		{name: "a tool under a two-person rule", rules: []server.ApprovalRule{
			{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, Approvers: 2}, rule("bookFlight", 30*time.Minute, "senior")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newF := func() *fixture {
				return newFixtureWith(t, toolgate.NewMemoryStore(), flightdemo.Model(), func(cfg *server.Config) {
					a := cfg.Agents["flights"]
					a.Approvals = tc.rules
					if tc.bothGated {
						tools := &flightdemo.Tools{}
						a.Client = toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{Store: a.Client.Store(),
							Manager: toolgate.NewManager(&toolgate.ManagerOptions{ConfirmTools: []string{"flightStatus"}})})
					}
					cfg.APIKeys = append(cfg.APIKeys, server.APIKey{SHA256: server.HashAPIKey(seniorKey),
						Principal: toolgate.Principal{ID: "sen", Roles: []string{"approver", "senior"}}})
				})
			}
			f := newF()
			f.paused()
			for _, who := range []struct {
				key  string
				want int64
			}{{approverKey, tc.approver}, {seniorKey, tc.senior}} {
				item := f.inboxItem(who.key)
				got, present := item["sticky_max_minutes"]
				if who.want == 0 {
					if present {
						t.Errorf("%s: sticky_max_minutes %v, want it omitted", who.key, got)
					}
					continue
				}
				if got != float64(who.want) {
					t.Errorf("%s: sticky_max_minutes %v, want %d", who.key, got, who.want)
				}
				if item["may_reveal"] != nil {
					t.Errorf("%s: may_reveal %v on an agent without privacy", who.key, item["may_reveal"])
				}
			}
			// The server takes what the item says, and not a minute more.
			for _, who := range []struct {
				key  string
				want int64
			}{{approverKey, tc.approver}, {seniorKey, tc.senior}} {
				if who.want == 0 {
					continue
				}
				g := newF()
				gc, gp := g.paused()
				var body string
				allowAll := func(minutes int64) string {
					decisions := `{"key":"call_book","verdict":"allow"}`
					if tc.bothGated {
						decisions += `,{"key":"call_status","verdict":"allow"}`
					}
					return fmt.Sprintf(`{"decisions":[%s],"sticky":{"minutes":%d}}`, decisions, minutes)
				}
				body = allowAll(who.want + 1)
				if out := g.must(422, "POST", decisionsPath(gc, gp), who.key, body); out["error"] != "sticky_not_allowed" {
					t.Errorf("%s: %d minutes: %v, want sticky_not_allowed", who.key, who.want+1, out)
				}
				body = allowAll(who.want)
				if out := g.must(200, "POST", decisionsPath(gc, gp), who.key, body); len(out["grants"].([]any)) == 0 {
					t.Errorf("%s: %d minutes: no grants in %v", who.key, who.want, out)
				}
			}
		})
	}
}
