package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
)

// TestEditOnApprove: an approver allows bookFlight with other arguments.
// The tool runs once with them; the decision record keeps the model's and
// the approver's arguments; the stored reply keeps the model's, and the
// call's result records the edit for the model.
func TestEditOnApprove(t *testing.T) {
	f := newFixture(t, nil)
	conv, pause := f.pause(travellerKey)
	body := `{"decisions":[{"key":"call_book","verdict":"allow","arguments":{ "flight": "VX206" }}]}`
	out := f.must(200, "POST", decisionsPath(conv, pause), approverKey, body)
	if s, b := f.runs(); s != 1 || b != 1 {
		t.Errorf("runs: status %d book %d, want 1 1", s, b)
	}
	if diff := cmp.Diff([]string{`{"flight":"VX206"}`}, f.tools.BookArgs()); diff != "" {
		t.Errorf("bookFlight received (-want +got):\n%s", diff)
	}
	rec := out["decision"].(map[string]any)
	wantEdits := []any{map[string]any{"key": "call_book", "tool": "bookFlight", "original": `{"flight":"VX205"}`, "edited": map[string]any{"flight": "VX206"}}}
	if diff := cmp.Diff(wantEdits, rec["edits"]); diff != "" {
		t.Errorf("the decision record's edits (-want +got):\n%s", diff)
	}
	wantDecision := map[string]any{"key": "call_book", "verdict": "allow", "arguments": map[string]any{"flight": "VX206"}}
	if ds := rec["decisions"].([]any); len(ds) != 2 || !cmp.Equal(ds[0], wantDecision) {
		t.Errorf("the decision record's decisions %v, want the edit first", ds)
	}

	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	msgs := got["messages"].([]any)
	reply := msgs[1].(map[string]any)["tool_calls"].([]any)
	if args := reply[1].(map[string]any)["arguments"]; args != `{"flight":"VX205"}` {
		t.Errorf("the stored reply's bookFlight arguments are %v, want the model's", args)
	}
	result := msgs[2].(map[string]any)["results"].([]any)[1].(map[string]any)
	if result["edited_arguments"] != `{"flight":"VX206"}` || !strings.HasPrefix(fmt.Sprint(result["content"]), toolgate.EditNote+`{"flight":"VX206"}`+"\n") {
		t.Errorf("the stored result %v does not record the edit", result)
	}
	if ds := got["decisions"].([]any); len(ds) != 1 || ds[0].(map[string]any)["edits"] == nil {
		t.Errorf("the conversation's decision records %v, want one with the edit", ds)
	}
}

// TestInvalidEdit: an edit that is not an object, breaks the tool's schema
// or comes with a denial is refused with 422; nothing runs and the pause
// can still be decided. (An edit that repeats a name is refused with the
// body, 400 invalid_json, and an edit of a call that awaited no decision
// with 403 not_decidable: see the attack tests.)
func TestInvalidEdit(t *testing.T) {
	f := newFixture(t, nil)
	conv, pause := f.pause(travellerKey)
	for _, tc := range []struct {
		name, decision, problem, detail string
	}{
		{"string", `{"key":"call_book","verdict":"allow","arguments":"{\"flight\":\"VX206\"}"}`, "invalid_arguments", "not a JSON object"},
		{"array", `{"key":"call_book","verdict":"allow","arguments":["VX206"]}`, "invalid_arguments", "not a JSON object"},
		{"wrong type", `{"key":"call_book","verdict":"allow","arguments":{"flight":206}}`, "invalid_arguments", "flight"},
		{"missing flight", `{"key":"call_book","verdict":"allow","arguments":{"email":"a@example.com"}}`, "invalid_arguments", "flight"},
		{"unknown property", `{"key":"call_book","verdict":"allow","arguments":{"flight":"VX206","price":0}}`, "invalid_arguments", "price"},
		{"on deny", `{"key":"call_book","verdict":"deny","arguments":{"flight":"VX206"}}`, "arguments_on_deny", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := f.do("POST", decisionsPath(conv, pause), approverKey, `{"decisions":[`+tc.decision+`]}`)
			if code != 422 || out["error"] != "invalid_decisions" || out["problem"] != tc.problem {
				t.Fatalf("got %d %v, want 422 invalid_decisions with problem %s", code, out, tc.problem)
			}
			if msg := fmt.Sprint(out["message"]); !strings.Contains(msg, tc.detail) {
				t.Errorf("message %q does not say %q", msg, tc.detail)
			}
			if s, b := f.runs(); s != 0 || b != 0 {
				t.Fatalf("runs after an invalid edit: status %d book %d, want none", s, b)
			}
		})
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow","arguments":null}]}`)
	if s, b := f.runs(); s != 1 || b != 1 {
		t.Errorf("runs after the valid decision: status %d book %d, want 1 1", s, b)
	}
	if diff := cmp.Diff([]string{`{"flight":"VX205"}`}, f.tools.BookArgs()); diff != "" {
		t.Errorf("bookFlight received (-want +got):\n%s", diff)
	}
}
