package sqlite_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit/sqlite"
)

// childEnv, set to "index:path", makes TestMultiProcess act as one of the
// processes appending to the log at path.
const childEnv = "TOOLGATE_AUDIT_TEST_CHILD"

const (
	procs   = 3  // processes appending to the file
	perProc = 25 // records each appends
)

// TestMultiProcess runs several copies of the test binary that append to
// one log file at the same time; the chain must stay intact and numbered
// without gaps.
func TestMultiProcess(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		runChild(t, v)
		return
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	openAt(t, path, nil) // creates the tables before the children race

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  *bufio.Scanner
		stderr bytes.Buffer
	}
	children := make([]*child, procs)
	for i := range children {
		c := &child{cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMultiProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", childEnv, i, path))
		c.cmd.Stderr = &c.stderr
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.lines = bufio.NewScanner(stdout)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	// Once every child has the log open, they all start appending.
	for i, c := range children {
		if !waitLine(c.lines, "child ready") {
			c.cmd.Wait()
			t.Fatalf("child %d ended before it was ready:\n%s", i, c.stderr.String())
		}
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		c.stdin.Close()
	}
	for i, c := range children {
		done := waitLine(c.lines, "child done")
		for c.lines.Scan() {
		}
		if err := c.cmd.Wait(); err != nil || !done {
			t.Fatalf("child %d: %v (done: %v)\n%s", i, err, done, c.stderr.String())
		}
	}
	checkContiguous(t, path, procs*perProc)
}

// waitLine reads lines until one equal to want; it reports whether it
// found one.
func waitLine(s *bufio.Scanner, want string) bool {
	for s.Scan() {
		if s.Text() == want {
			return true
		}
	}
	return false
}

// runChild is one process of TestMultiProcess.
func runChild(t *testing.T, v string) {
	idx, path, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil {
		t.Fatalf("bad %s=%q", childEnv, v)
	}
	l := openAt(t, path, &sqlite.Options{BusyTimeout: time.Minute})
	fmt.Println("child ready")
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || line != "go\n" {
		t.Fatalf("child %d: read %q, %v; want go", n, line, err)
	}
	for i := range perProc {
		if err := l.Append(t.Context(), sample(1000*n+i)); err != nil {
			t.Fatalf("child %d, append %d: %v", n, i, err)
		}
	}
	fmt.Println("child done")
}
