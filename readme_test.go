package toolgate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeBlock returns the fenced block of README.md that follows the
// first line containing marker, without its fences.
func readmeBlock(t *testing.T, readme, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, marker)
	if !ok {
		t.Fatalf("README.md has no %q", marker)
	}
	_, rest, ok = strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("README.md: no block after %q", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the fence's language
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("README.md: the block after %q does not end", marker)
	}
	return block
}

// TestReadmeProgram copies the program of README.md into a module of its
// own that uses this checkout of toolgate, runs it with go run, and checks
// that it prints what the README says it prints.
func TestReadmeProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	program := readmeBlock(t, readme, "TestReadmeProgram runs this program")
	want := readmeBlock(t, readme, "It prints:")
	if !strings.HasPrefix(program, "package main\n") {
		t.Fatalf("the README's program does not start with package main:\n%s", program)
	}

	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/readme\n\ngo 1.26\n\nrequire github.com/toolgate/toolgate v0.0.0\n\nreplace github.com/toolgate/toolgate => " + root + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"main.go": program, "go.mod": gomod, "go.sum": string(sum)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goTool(t), "run", ".")
	cmd.Dir = dir
	// -mod=mod lets go run add the indirect requirements to the new go.mod.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of the README's program: %v\n%s", err, out)
	}
	if string(out) != want {
		t.Errorf("the README's program printed\n%s\nwant (the README's \"It prints:\")\n%s", out, want)
	}
}
