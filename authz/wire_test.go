package authz_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/internal/wiretest"
)

// TestCodeWireValues pins the wire value of every Code: codes cross the
// HTTP API and the audit records, so they never change. A new code must be
// added here.
func TestCodeWireValues(t *testing.T) {
	want := map[authz.Code]string{
		authz.CodeAuthenticationRequired: "AUTHENTICATION_REQUIRED",
		authz.CodeToolNotExposed:         "TOOL_NOT_EXPOSED",
		authz.CodeExecutionDenied:        "EXECUTION_DENIED",
		authz.CodeCallbackAdded:          "CALLBACK_ADDED",
		authz.CodeCallbackReplaced:       "CALLBACK_REPLACED",
		authz.CodeToolSearchChanged:      "TOOL_SEARCH_CHANGED",
	}
	for c, w := range want {
		if string(c) != w {
			t.Errorf("Code %q, want %q", c, w)
		}
	}
	declared := wiretest.StringConsts(t, ".", "Code")
	pinned := map[string]bool{}
	for _, w := range want {
		pinned[w] = true
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		if !pinned[declared[name]] {
			t.Errorf("Code %s = %q is not pinned by this test", name, declared[name])
		}
	}
	if len(declared) != len(want) {
		t.Errorf("%d Code constants declared, %d pinned", len(declared), len(want))
	}
}
