package sqlite_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
)

// childEnv, set to "index:path", makes TestMultiProcess act as one of the
// processes sharing the database at path.
const childEnv = "TOOLGATE_SQLITE_TEST_CHILD"

const (
	procs        = 3  // processes sharing the file
	logPerProc   = 20 // messages each appends to the shared log
	maxAppendTry = 10000
)

var pausedReply = &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "pay", Arguments: `{"eur":5}`}}}

var answer = &toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "pay", Content: `"paid"`}}}

// TestMultiProcess runs several copies of the test binary on one database
// file: they all try to claim one pause, to append at the same position of
// one conversation, and to append in turn to another.
func TestMultiProcess(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		runChild(t, v)
		return
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	s := openAt(t, path, nil)
	prefix := []toolgate.Message{&toolgate.UserMessage{Text: "pay 5 EUR"}, pausedReply}
	if err := s.Append(t.Context(), "shared", &toolgate.AppendParams{Messages: prefix, Pause: &toolgate.PauseRecord{ID: "p1", Awaiting: []string{"c1"}}}); err != nil {
		t.Fatal(err)
	}

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  *bufio.Scanner
		out    []string
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
	// readUntil collects a child's lines up to one with the given prefix;
	// at the end of its output it fails the test.
	readUntil := func(i int, prefix string) {
		c := children[i]
		for c.lines.Scan() {
			c.out = append(c.out, c.lines.Text())
			if strings.HasPrefix(c.lines.Text(), prefix) {
				return
			}
		}
		c.cmd.Wait()
		t.Fatalf("child %d ended before writing %q:\n%s\n%s", i, prefix, strings.Join(c.out, "\n"), c.stderr.String())
	}
	// tell writes a line to every child.
	tell := func(line string) {
		for _, c := range children {
			if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Once all have the database open, they claim together; once all have
	// tried, the winner resolves the pause and they all go on.
	for i := range children {
		readUntil(i, "child ready")
	}
	tell("claim")
	for i := range children {
		readUntil(i, "child claim ")
	}
	tell("go on")
	claims, races := 0, -1
	for i, c := range children {
		c.stdin.Close()
		readUntil(i, "child done")
		for c.lines.Scan() {
			c.out = append(c.out, c.lines.Text())
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s\n%s", i, err, strings.Join(c.out, "\n"), c.stderr.String())
		}
		for _, l := range c.out {
			switch l {
			case "child claim won":
				claims++
			case "child race won":
				if races >= 0 {
					t.Errorf("children %d and %d both appended at position 0", races, i)
				}
				races = i
			}
		}
	}
	if claims != 1 {
		t.Errorf("%d processes claimed the pause, want exactly 1", claims)
	}
	if races < 0 {
		t.Fatal("no process appended at position 0")
	}

	load := func(id string) []toolgate.Message {
		t.Helper()
		c, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatalf("Load(%q): %v", id, err)
		}
		if c.Pause != nil {
			t.Errorf("Load(%q): pause %+v still open", id, c.Pause)
		}
		return c.Messages
	}
	if diff := cmp.Diff(append(prefix, answer), load("shared")); diff != "" {
		t.Errorf("shared conversation mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]toolgate.Message{&toolgate.UserMessage{Text: fmt.Sprint("process ", races)}}, load("race")); diff != "" {
		t.Errorf("race conversation mismatch (-want +got):\n%s", diff)
	}
	log := load("log")
	if len(log) != procs*logPerProc {
		t.Fatalf("log holds %d messages, want %d", len(log), procs*logPerProc)
	}
	next := make([]int, procs)
	for i, m := range log {
		var p, k int
		u, ok := m.(*toolgate.UserMessage)
		if !ok {
			t.Fatalf("log message %d is a %T", i, m)
		}
		if _, err := fmt.Sscanf(u.Text, "%d/%d", &p, &k); err != nil || p < 0 || p >= procs || k != next[p] {
			t.Fatalf("log message %d is %q, out of order or unknown", i, u.Text)
		}
		next[p]++
	}
	if err := s.ClaimPause(t.Context(), "shared", "p1", &toolgate.Claim{Token: "late"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("ClaimPause of the resolved pause: got error %v, want one wrapping %v", err, toolgate.ErrNoOpenPause)
	}
}

// runChild is one process of TestMultiProcess. It reports on standard
// output and fails the test (its exit status) on any unexpected error.
func runChild(t *testing.T, v string) {
	idx, path, ok := strings.Cut(v, ":")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil {
		t.Fatalf("bad %s %q", childEnv, v)
	}
	ctx := t.Context()
	s := openAt(t, path, nil)
	in := bufio.NewReader(os.Stdin)
	wait := func(want string) {
		if line, err := in.ReadString('\n'); err != nil || line != want+"\n" {
			t.Fatalf("waiting for %q: read %q, %v", want, line, err)
		}
	}
	fmt.Println("child ready")
	wait("claim")
	err = s.ClaimPause(ctx, "shared", "p1", &toolgate.Claim{Token: fmt.Sprint("process ", i)})
	switch {
	case err == nil:
		fmt.Println("child claim won")
	case errors.Is(err, toolgate.ErrNoOpenPause):
		fmt.Println("child claim lost")
	default:
		t.Fatalf("ClaimPause: %v", err)
	}
	wait("go on")
	if err == nil {
		if err := s.Append(ctx, "shared", &toolgate.AppendParams{At: 2, Messages: []toolgate.Message{answer}, Resolves: "p1"}); err != nil {
			t.Fatalf("resolving the claimed pause: %v", err)
		}
	}

	switch err := s.Append(ctx, "race", &toolgate.AppendParams{Messages: []toolgate.Message{&toolgate.UserMessage{Text: fmt.Sprint("process ", i)}}}); {
	case err == nil:
		fmt.Println("child race won")
	case errors.Is(err, toolgate.ErrConflict):
		fmt.Println("child race lost")
	default:
		t.Fatalf("Append at 0: %v", err)
	}

	for k := range logPerProc {
		m := &toolgate.UserMessage{Text: fmt.Sprintf("%d/%d", i, k)}
		for try := 0; ; try++ {
			if try == maxAppendTry {
				t.Fatalf("log message %d: no append succeeded in %d tries", k, try)
			}
			c, err := s.Load(ctx, "log")
			if err != nil {
				t.Fatal(err)
			}
			err = s.Append(ctx, "log", &toolgate.AppendParams{At: len(c.Messages), Messages: []toolgate.Message{m}})
			if err == nil {
				break
			}
			if !errors.Is(err, toolgate.ErrConflict) {
				t.Fatalf("log message %d: %v", k, err)
			}
		}
	}
	fmt.Println("child done")
}
