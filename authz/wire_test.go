package authz_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate/authz"
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
	declared := stringConsts(t, ".", "Code")
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
