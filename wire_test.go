package toolgate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
)

// stringConsts returns the string constants of type typ declared in the
// non-test Go files of dir, by name.
func stringConsts(t *testing.T, dir, typ string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if matched, _ := filepath.Match("*_test.go", filepath.Base(name)); matched {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: constant %s of type %s is not a string literal", name, n.Name, typ)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

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
	declared := stringConsts(t, ".", "DecisionProblem")
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
