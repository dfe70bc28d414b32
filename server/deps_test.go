package server_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEmbedDependencies lists the packages linked by testdata/embed, a
// program that embeds the server with a scripted model and the in-memory
// stores, and checks that none of them is a model provider's SDK, a
// database driver, Cedar, the MCP SDK or the packages of toolgate that
// bring them: a program links those only when it imports them itself
// (package serve, for a configuration file, imports them all).
func TestEmbedDependencies(t *testing.T) {
	const pkg = "github.com/toolgate/toolgate/server/testdata/embed"
	out, err := exec.Command(goTool(t), "list", "-deps", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	deps := strings.Fields(string(out))
	forbidden := []string{
		"github.com/openai/", "github.com/anthropics/", "google.golang.org/genai",
		"github.com/jackc/", "modernc.org/", "github.com/lib/pq", "github.com/mattn/go-sqlite3",
		"github.com/cedar-policy/", "github.com/modelcontextprotocol/",
		"github.com/toolgate/toolgate/provider/openai", "github.com/toolgate/toolgate/provider/anthropic",
		"github.com/toolgate/toolgate/provider/gemini",
		"github.com/toolgate/toolgate/store/sqlite", "github.com/toolgate/toolgate/store/postgres",
		"github.com/toolgate/toolgate/audit/sqlite", "github.com/toolgate/toolgate/audit/postgres",
		"github.com/toolgate/toolgate/authz/cedar", "github.com/toolgate/toolgate/mcptool",
		"github.com/toolgate/toolgate/serve", "github.com/toolgate/toolgate/internal/flightdemo",
	}
	var found []string
	for _, dep := range deps {
		for _, f := range forbidden {
			// "x/" forbids every path under x; "x" forbids x and its
			// subpackages.
			if strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) || dep == f || strings.HasPrefix(dep, f+"/") {
				found = append(found, dep)
				break
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("%s links %d packages it does not import (want none):\n%s", pkg, len(found), strings.Join(found, "\n"))
	}
	// The list is the program's: it holds the server and the scripted
	// model, so a broken list cannot pass for a clean one.
	for _, want := range []string{pkg, "github.com/toolgate/toolgate/server", "github.com/toolgate/toolgate/provider/scripted"} {
		if !strings.Contains("\n"+string(out), "\n"+want+"\n") {
			t.Errorf("go list -deps %s does not list %s", pkg, want)
		}
	}
	t.Logf("%s links %d packages", pkg, len(deps))
}

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
