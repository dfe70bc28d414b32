package toolgate_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// goTool returns the go command of the toolchain running the tests, or
// "go" from PATH.
func goTool(t *testing.T) string {
	t.Helper()
	//lint:ignore SA1019 the test binary runs on the machine that built it, so its GOROOT is the toolchain running the tests.
	if root := runtime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}

// nonStandardDeps lists the packages pkg depends on (itself included) that
// are not in the standard library: those whose first path element has a
// dot.
func nonStandardDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command(goTool(t), "list", "-deps", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	var deps []string
	for _, line := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(line, "/")
		if strings.Contains(first, ".") {
			deps = append(deps, line)
		}
	}
	if len(deps) == 0 {
		t.Fatalf("go list -deps %s listed no module packages, not even %s:\n%s", pkg, pkg, out)
	}
	return deps
}

// coreInternal are the internal packages the core uses: its argument
// validator, the cap of logged strings and the hand-over of the store
// rules to package storekit. Each imports only the standard library
// (checked by the tests below, which list the core's dependencies).
var coreInternal = []string{
	"github.com/toolgate/toolgate/internal/argcheck",
	"github.com/toolgate/toolgate/internal/logcap",
	"github.com/toolgate/toolgate/internal/storerules",
}

// TestCoreDependencies keeps the core package free of SDKs and frameworks:
// besides the standard library it may use only the JSON schema library and
// its own internal packages (whose dependencies are checked here too).
func TestCoreDependencies(t *testing.T) {
	const core = "github.com/toolgate/toolgate"
	for _, dep := range nonStandardDeps(t, core) {
		switch {
		case dep == core, slices.Contains(coreInternal, dep):
		case strings.HasPrefix(dep, "github.com/google/jsonschema-go/"):
		default:
			t.Errorf("%s depends on %s; want only the standard library and github.com/google/jsonschema-go", core, dep)
		}
	}
}

// TestScriptedDependencies checks that the scripted model, which tests and
// examples run on, pulls in no provider SDK.
func TestScriptedDependencies(t *testing.T) {
	const scripted = "github.com/toolgate/toolgate/provider/scripted"
	for _, dep := range nonStandardDeps(t, scripted) {
		switch {
		case dep == scripted, dep == "github.com/toolgate/toolgate", slices.Contains(coreInternal, dep):
		case strings.HasPrefix(dep, "github.com/google/jsonschema-go/"):
		default:
			t.Errorf("%s depends on %s; want only the core package and the standard library", scripted, dep)
		}
	}
}
