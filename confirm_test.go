package toolgate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// callsWithIDs returns a reply with one call per id.
func callsWithIDs(ids ...string) *toolgate.AssistantMessage {
	r := &toolgate.AssistantMessage{}
	for _, id := range ids {
		r.ToolCalls = append(r.ToolCalls, toolgate.ToolCall{ID: id, Name: "t"})
	}
	return r
}

// referenceKeys is the rule of the contract written as plainly as possible.
func referenceKeys(r *toolgate.AssistantMessage) []string {
	if r == nil || len(r.ToolCalls) == 0 {
		return nil
	}
	keys := make([]string, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		n := 0
		for _, d := range r.ToolCalls {
			if d.ID == c.ID {
				n++
			}
		}
		if c.ID != "" && c.ID[0] != '#' && n == 1 {
			keys[i] = c.ID
		} else {
			keys[i] = "#" + strconv.Itoa(i)
		}
	}
	return keys
}

func TestToolCallKeys(t *testing.T) {
	tests := []struct {
		name  string
		reply *toolgate.AssistantMessage
		want  []string
	}{
		{"nil reply", nil, nil},
		{"no calls", &toolgate.AssistantMessage{Text: "hi"}, nil},
		{"unique ids", callsWithIDs("call_1", "call_2", "x"), []string{"call_1", "call_2", "x"}},
		{"empty ids", callsWithIDs("", "", ""), []string{"#0", "#1", "#2"}},
		{"some empty", callsWithIDs("a", "", "c"), []string{"a", "#1", "c"}},
		{"duplicated ids", callsWithIDs("a", "b", "a"), []string{"#0", "b", "#2"}},
		{"duplicated adjacent", callsWithIDs("a", "a"), []string{"#0", "#1"}},
		{"id starting with #", callsWithIDs("#1", "x"), []string{"#0", "x"}},
		{"id that looks positional elsewhere", callsWithIDs("x", "#0"), []string{"x", "#1"}},
		{"lone #", callsWithIDs("#"), []string{"#0"}},
		{"ids are case sensitive", callsWithIDs("A", "a"), []string{"A", "a"}},
		{"space id is usable", callsWithIDs(" ", "a"), []string{" ", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *toolgate.AssistantMessage
			if tt.reply != nil {
				before = cloneReply(tt.reply)
			}
			got := tt.reply.CallKeys()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ToolCallKeys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(referenceKeys(tt.reply), got); diff != "" {
				t.Errorf("ToolCallKeys disagrees with the reference (-reference +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.reply); diff != "" {
				t.Errorf("ToolCallKeys changed the reply (-before +after):\n%s", diff)
			}
		})
	}
}

// TestToolCallKeysLongReplies checks that replies longer than the pairwise
// scan (over 32 calls, keyed through a map) follow the same rule.
func TestToolCallKeysLongReplies(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		ids := make([]string, 40)
		for i := range ids {
			ids[i] = fmt.Sprintf("call_%d", i)
		}
		ids[3], ids[37] = "dup", "dup"
		ids[10] = ""
		ids[20] = "#20"
		ids[35] = "#5"
		got := callsWithIDs(ids...).CallKeys()
		want := make([]string, 40)
		copy(want, ids)
		want[3], want[37], want[10], want[20], want[35] = "#3", "#37", "#10", "#20", "#35"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ToolCallKeys (-want +got):\n%s", diff)
		}
	})
	t.Run("random", func(t *testing.T) {
		seed := testSeed(t, 1)
		rng := rand.New(rand.NewPCG(seed, 2))
		alphabet := []string{"", "a", "b", "c", "#0", "#1", "#40", "d", "e"}
		for n := 1; n <= 80; n++ {
			for range 20 {
				ids := make([]string, n)
				for i := range ids {
					if rng.IntN(3) == 0 {
						ids[i] = alphabet[rng.IntN(len(alphabet))]
					} else {
						ids[i] = "id" + strconv.Itoa(rng.IntN(2*n))
					}
				}
				r := callsWithIDs(ids...)
				got := r.CallKeys()
				if diff := cmp.Diff(referenceKeys(r), got); diff != "" {
					t.Fatalf("ids %q: ToolCallKeys disagrees with the reference (-reference +got):\n%s", ids, diff)
				}
				checkDistinct(t, got)
			}
		}
	})
	t.Run("small and large agree", func(t *testing.T) {
		// The same 32 leading calls, once alone and once followed by calls
		// with fresh ids: their keys must not change.
		ids := make([]string, 32)
		for i := range ids {
			ids[i] = []string{"", "x", "y", "#3", "z" + strconv.Itoa(i)}[i%5]
		}
		small := callsWithIDs(ids...).CallKeys()
		more := append(append([]string(nil), ids...), "fresh1", "fresh2", "fresh3")
		large := callsWithIDs(more...).CallKeys()
		if diff := cmp.Diff(small, large[:32]); diff != "" {
			t.Errorf("keys of the first 32 calls changed with the reply's length (-32 calls +35 calls):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"fresh1", "fresh2", "fresh3"}, large[32:]); diff != "" {
			t.Errorf("keys of the extra calls (-want +got):\n%s", diff)
		}
	})
}

func checkDistinct(t *testing.T, keys []string) {
	t.Helper()
	seen := make(map[string]int, len(keys))
	for i, k := range keys {
		if j, ok := seen[k]; ok {
			t.Fatalf("keys %d and %d are both %q", j, i, k)
		}
		seen[k] = i
	}
}

func TestDecisionConstructors(t *testing.T) {
	tests := []struct {
		name string
		got  toolgate.Decision
		want toolgate.Decision
	}{
		{"Allow", toolgate.Allow("k"), toolgate.Decision{Key: "k", Verdict: toolgate.VerdictAllow}},
		{"Deny", toolgate.Deny("k", ""), toolgate.Decision{Key: "k", Verdict: toolgate.VerdictDeny, Message: "The user did not allow this tool call."}},
		{"DenyWithMessage", toolgate.Deny("k", "No."), toolgate.Decision{Key: "k", Verdict: toolgate.VerdictDeny, Message: "No."}},
		{"DenyWithMessage empty", toolgate.Deny("k", ""), toolgate.Decision{Key: "k", Verdict: toolgate.VerdictDeny, Message: toolgate.DefaultDenyMessage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDenyAll(t *testing.T) {
	r := callsWithIDs("a", "", "a", "b")
	got := toolgate.DenyAll(r, "The user moved on.")
	want := []toolgate.Decision{
		toolgate.Deny("#0", "The user moved on."),
		toolgate.Deny("#1", "The user moved on."),
		toolgate.Deny("#2", "The user moved on."),
		toolgate.Deny("b", "The user moved on."),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DenyAll (-want +got):\n%s", diff)
	}
	// A denial needs no tool: DenyAll resolves a pause even when the prompt
	// carries none of the reply's tools.
	if err := toolgate.CheckDecisions(&toolgate.Prompt{}, r, got); err != nil {
		t.Errorf("CheckDecisions(DenyAll): %v", err)
	}
	if got := toolgate.DenyAll(nil, "x"); len(got) != 0 {
		t.Errorf("DenyAll(nil) = %v, want none", got)
	}
}

func TestCheckDecisionsLongReply(t *testing.T) {
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = "c" + strconv.Itoa(i)
	}
	ids[5] = ""
	r := callsWithIDs(ids...)
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{countingTool("t", toolgate.ToolMetadata{}, nil)}}
	var ds []toolgate.Decision
	for _, k := range r.CallKeys() {
		ds = append(ds, toolgate.Allow(k))
	}
	if err := toolgate.CheckDecisions(p, r, ds); err != nil {
		t.Fatalf("CheckDecisions: %v", err)
	}
	tests := []struct {
		name string
		ds   []toolgate.Decision
		want toolgate.DecisionError
	}{
		{"missing", ds[1:], toolgate.DecisionError{Problem: toolgate.ProblemMissing, Key: "c0"}},
		{"unknown", append(ds[:len(ds):len(ds)], toolgate.Allow("c5")), toolgate.DecisionError{Problem: toolgate.ProblemUnknownKey, Key: "c5"}},
		{"duplicate", append(ds[:len(ds):len(ds)], toolgate.Deny("c39", "")), toolgate.DecisionError{Problem: toolgate.ProblemDuplicate, Key: "c39"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var de *toolgate.DecisionError
			if err := toolgate.CheckDecisions(p, r, tt.ds); !errors.As(err, &de) {
				t.Fatalf("got %v, want a *DecisionError", err)
			}
			if diff := cmp.Diff(tt.want, *de); diff != "" {
				t.Errorf("DecisionError (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecisionErrorText(t *testing.T) {
	problems := []toolgate.DecisionProblem{
		toolgate.ProblemMissing, toolgate.ProblemUnknownKey, toolgate.ProblemDuplicate, toolgate.ProblemToolNotInPrompt,
		toolgate.ProblemInvalidVerdict, toolgate.ProblemMessageOnAllow, toolgate.ProblemNoToolCalls, "something_new",
	}
	seen := map[string]bool{}
	for _, p := range problems {
		text := (&toolgate.DecisionError{Problem: p, Key: "k", Tool: "t"}).Error()
		if seen[text] {
			t.Errorf("problem %s: text %q is shared with another problem", p, text)
		}
		seen[text] = true
	}
}

func TestDecisionProblemValues(t *testing.T) {
	// The values cross the wire: they must never change.
	got := []toolgate.DecisionProblem{
		toolgate.ProblemMissing, toolgate.ProblemUnknownKey, toolgate.ProblemDuplicate, toolgate.ProblemToolNotInPrompt,
		toolgate.ProblemInvalidVerdict, toolgate.ProblemMessageOnAllow, toolgate.ProblemNoToolCalls,
	}
	want := []toolgate.DecisionProblem{
		"missing_decision", "unknown_key", "duplicate_decision", "tool_not_in_prompt",
		"invalid_verdict", "message_on_allow", "no_tool_calls",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problem values (-want +got):\n%s", diff)
	}
}

func TestDecisionJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    toolgate.Decision
		problem toolgate.DecisionProblem // "" when it decodes
	}{
		{"allow", `{"key":"k","verdict":"allow"}`, toolgate.Allow("k"), ""},
		{"deny with message", `{"key":"k","verdict":"deny","message":"No."}`, toolgate.Deny("k", "No."), ""},
		{"deny without message", `{"key":"#0","verdict":"deny"}`, toolgate.Deny("#0", ""), ""},
		{"bad verdict", `{"key":"k","verdict":"perhaps"}`, toolgate.Decision{}, toolgate.ProblemInvalidVerdict},
		{"no verdict", `{"key":"k"}`, toolgate.Decision{}, toolgate.ProblemInvalidVerdict},
		{"verdict case", `{"key":"k","verdict":"ALLOW"}`, toolgate.Decision{}, toolgate.ProblemInvalidVerdict},
		{"message on allow", `{"key":"k","verdict":"allow","message":"ok"}`, toolgate.Decision{}, toolgate.ProblemMessageOnAllow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got toolgate.Decision
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.problem != "" {
				var de *toolgate.DecisionError
				if !errors.As(err, &de) || de.Problem != tt.problem {
					t.Fatalf("got error %v, want a *DecisionError with problem %s", err, tt.problem)
				}
				if !errors.Is(err, toolgate.ErrInvalidDecisions) {
					t.Errorf("errors.Is(%v, ErrInvalidDecisions) = false, want true", err)
				}
				if diff := cmp.Diff(toolgate.Decision{}, got); diff != "" {
					t.Errorf("a failed decode changed the decision (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`[]`, `"allow"`, `{"key":1,"verdict":"allow"}`, `{"key":"k","verdict":true}`, `nul`} {
		var d toolgate.Decision
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s): got %+v and no error, want an error", bad, d)
		}
	}
	for _, d := range []toolgate.Decision{{Key: "k"}, {Key: "k", Verdict: "maybe"}, {Key: "k", Verdict: toolgate.VerdictAllow, Message: "x"}} {
		if b, err := json.Marshal(d); !errors.Is(err, toolgate.ErrInvalidDecisions) {
			t.Errorf("Marshal(%+v) = %s, %v; want an error matching ErrInvalidDecisions", d, b, err)
		}
	}
}

// TestClientCheckDecisions: the client checks decisions against its own
// tools, and runs nothing.
func TestClientCheckDecisions(t *testing.T) {
	var ran atomic.Int32
	tool := countingTool("t", toolgate.ToolMetadata{RequiresConfirmation: true}, &ran)
	c := toolgate.NewClient(scripted.New(), []*toolgate.Tool{tool}, nil)
	r := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{call("a", "t", "{}"), call("b", "gone", "{}")}}
	if err := c.CheckDecisions(r, []toolgate.Decision{toolgate.Allow("a"), toolgate.Deny("b", "")}); err != nil {
		t.Errorf("allow of a client tool, deny of another: %v", err)
	}
	var de *toolgate.DecisionError
	err := c.CheckDecisions(r, []toolgate.Decision{toolgate.Allow("a"), toolgate.Allow("b")})
	if !errors.As(err, &de) || de.Problem != toolgate.ProblemToolNotInPrompt || de.Key != "b" {
		t.Errorf("allow of a tool the client lacks: got %v, want %s on b", err, toolgate.ProblemToolNotInPrompt)
	}
	if err := c.CheckDecisions(r, []toolgate.Decision{toolgate.Allow("a")}); !errors.As(err, &de) || de.Problem != toolgate.ProblemMissing {
		t.Errorf("a missing decision: got %v, want %s", err, toolgate.ProblemMissing)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the tool ran %d times", n)
	}
}
