package toolgate_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/wiretest"
)

// TestDecisionProblemWireValues pins the wire value of every DecisionProblem:
// they cross the HTTP API and stored records, so they never change. A new
// problem must be added here.
func TestDecisionProblemWireValues(t *testing.T) {
	want := map[toolgate.DecisionProblem]string{
		toolgate.ProblemMissing:               "missing_decision",
		toolgate.ProblemUnknownKey:            "unknown_key",
		toolgate.ProblemDuplicate:             "duplicate_decision",
		toolgate.ProblemToolNotInPrompt:       "tool_not_in_prompt",
		toolgate.ProblemInvalidVerdict:        "invalid_verdict",
		toolgate.ProblemMessageOnAllow:        "message_on_allow",
		toolgate.ProblemNoToolCalls:           "no_tool_calls",
		toolgate.ProblemArgumentsOnDeny:       "arguments_on_deny",
		toolgate.ProblemInvalidArguments:      "invalid_arguments",
		toolgate.ProblemNotAwaited:            "not_awaited",
		toolgate.ProblemNotDecider:            "not_decider",
		toolgate.ProblemEditNeedsConfirmation: "edit_needs_confirmation",
	}
	for p, w := range want {
		if string(p) != w {
			t.Errorf("DecisionProblem %q, want %q", p, w)
		}
	}
	declared := wiretest.StringConsts(t, ".", "DecisionProblem")
	pinned := map[string]bool{}
	for _, w := range want {
		pinned[w] = true
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		if !pinned[declared[name]] {
			t.Errorf("DecisionProblem %s = %q is not pinned by this test", name, declared[name])
		}
	}
	if len(declared) != len(want) {
		t.Errorf("%d DecisionProblem constants declared, %d pinned", len(declared), len(want))
	}
}
