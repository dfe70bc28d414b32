package server_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/server"
)

var attackSeed = flag.Uint64("attack.seed", 0, "the seed of TestPropertyInvariantOne (0: from the clock; a failure prints the one it used)")

// TestPropertyInvariantOne decides random pauses of random replies (1 to 8
// calls of three tools, some gated by the policy, ids that may look like
// keys) under random approval rules, with random roles changed between the
// pause and the decision, by random deciders sending random decisions
// (allow, deny, edits, on awaiting calls and on others). After every step
// it checks, from the audit log alone and the rules in force at the
// decision, that every call that ran either awaited a decision and was
// allowed by a principal whose roles then let them decide its tool (with
// any edit recorded by them), or awaited none and ran as the model wrote
// it; and that nothing ran for an owner who could no longer use the agent.
func TestPropertyInvariantOne(t *testing.T) {
	seed := *attackSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -attack.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	tools := []string{"lookup", "pay", "wire"}
	roleSets := [][]string{nil, {"payer"}, {"wirer"}, {"payer", "wirer"}}
	deciders := map[string]string{"pat": atkPayer, "wes": atkWirer, "bo": atkBoth}
	steps := 60
	if testing.Short() {
		steps = 15
	}
	for step := range steps {
		// Random rules: each names some tools (or every tool) and a role.
		var rules []server.ApprovalRule
		for range 1 + rng.IntN(3) {
			r := server.ApprovalRule{Roles: []string{[]string{"payer", "wirer"}[rng.IntN(2)]}}
			if rng.IntN(4) > 0 {
				for _, tool := range tools {
					if rng.IntN(2) == 0 {
						r.Tools = append(r.Tools, tool)
					}
				}
				if r.Tools == nil {
					r.Tools = []string{tools[rng.IntN(3)]}
				}
			}
			rules = append(rules, r)
		}
		f := newAtkFixture(t, atkOptions{configure: func(c *server.Config) { c.Agents["ops"].Approvals = rules }})
		// A random reply.
		var calls []toolgate.ToolCall
		for i := range 1 + rng.IntN(8) {
			id := fmt.Sprintf("c%d", i)
			switch rng.IntN(5) {
			case 0:
				id = ""
			case 1:
				id = fmt.Sprintf("#%d", rng.IntN(8))
			}
			args := fmt.Sprintf(`{"n":%d}`, i)
			if rng.IntN(3) == 0 {
				args = fmt.Sprintf(`{"n":%d,"gate":true}`, i)
			}
			calls = append(calls, call(id, tools[rng.IntN(3)], args))
		}
		f.setReply(calls...)
		conv := f.must(201, "POST", "/v1/conversations", atkRequester, `{"agent":"ops"}`)["id"].(string)
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"go"}`)
		if out["status"] != "paused" {
			continue
		}
		pauseID := out["pause"].(map[string]any)["id"].(string)
		keys := (&toolgate.AssistantMessage{ToolCalls: calls}).CallKeys()

		// Random revocations between the pause and the decision.
		roles := map[string][]string{}
		for _, id := range []string{"pat", "wes", "bo"} {
			roles[id] = roleSets[rng.IntN(len(roleSets))]
		}
		ownerRevoked := rng.IntN(4) == 0
		if ownerRevoked {
			roles["ada"] = nil // the owner may no longer use the agent
		}
		if err := f.srv.SetAPIKeys(atkKeys(roles)); err != nil {
			t.Fatal(err)
		}
		// A random decision by a random decider.
		decider := []string{"pat", "wes", "bo"}[rng.IntN(3)]
		var ds []map[string]any
		for i := range calls {
			switch rng.IntN(5) {
			case 0: // left out
			case 1:
				ds = append(ds, map[string]any{"key": keys[i], "verdict": "deny", "message": "no"})
			case 2:
				ds = append(ds, map[string]any{"key": keys[i], "verdict": "allow", "arguments": map[string]any{"n": 100 + i}})
			default:
				ds = append(ds, map[string]any{"key": keys[i], "verdict": "allow"})
			}
		}
		body, _ := json.Marshal(map[string]any{"decisions": ds})
		code, _ := f.decide(deciders[decider], conv, pauseID, string(body))

		// The check, from the audit records of the conversation.
		held := roles[decider]
		mayDecide := func(tool string) bool {
			return slices.ContainsFunc(rules, func(r server.ApprovalRule) bool {
				return (r.Tools == nil || slices.Contains(r.Tools, tool)) && slices.ContainsFunc(held, func(x string) bool { return slices.Contains(r.Roles, x) })
			})
		}
		recs := f.records(conv)
		has := func(kind audit.Kind, key, actor, digest string) bool {
			return slices.ContainsFunc(recs, func(r audit.Record) bool {
				return r.Kind == kind && r.CallKey == key && r.PauseID == pauseID &&
					(actor == "" || r.Actor.ID == actor) && (digest == "" || r.ArgsDigest == digest)
			})
		}
		for i, c := range calls {
			k := keys[i]
			for _, r := range recs {
				if r.Kind != audit.KindExecuted || r.CallKey != k || r.PauseID != pauseID {
					continue
				}
				where := fmt.Sprintf("step %d (seed %d): call %s (%s %s) ran (decision %d %s by %s)", step, seed, k, c.Name, c.Arguments, code, body, decider)
				if ownerRevoked {
					t.Fatalf("%s although its owner may no longer use the agent", where)
				}
				if has(audit.KindRequested, k, "", "") {
					if !has(audit.KindDecided, k, decider, "") || !mayDecide(c.Name) {
						t.Fatalf("%s: it awaited a decision, and no one allowed to decide %s allowed it", where, c.Name)
					}
					if r.ArgsDigest != audit.Digest([]byte(c.Arguments)) && !has(audit.KindEdited, k, decider, r.ArgsDigest) {
						t.Fatalf("%s with arguments nobody allowed", where)
					}
				} else if r.ArgsDigest != audit.Digest([]byte(c.Arguments)) || has(audit.KindEdited, k, "", "") {
					t.Fatalf("%s: it awaited no decision but did not run as the model wrote it", where)
				}
			}
		}
	}
}
