package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDemoCtrlCEndsPrompt: an interrupt while the demo waits at its
// prompt ends the demo at once, with nothing run.
func TestDemoCtrlCEndsPrompt(t *testing.T) {
	stdin, w := io.Pipe() // a terminal nobody types at
	t.Cleanup(func() { w.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &promptWatcher{prompt: "Allow bookFlight", seen: make(chan struct{})}
	var errb bytes.Buffer
	db := filepath.Join(t.TempDir(), "demo.db")
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--db", db}, &env{stdin: stdin, stdout: out, stderr: &errb, interactive: true, program: "toolgate"})
	}()
	<-out.seen
	cancel() // what Ctrl-C does to main's context
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("exit %d, want 130\n%s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the demo still waits at its prompt after the interrupt")
	}
	mustContain(t, errb.String(), "interrupted; nothing ran", "toolgate demo --db "+db+" --resume --yes")
	if strings.Contains(out.String(), "Tool results") {
		t.Errorf("a tool ran:\n%s", out.String())
	}
}

// promptWatcher is a stdout that closes seen once prompt was written.
type promptWatcher struct {
	prompt string
	seen   chan struct{}
	mu     sync.Mutex
	buf    bytes.Buffer
	once   sync.Once
}

func (p *promptWatcher) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	if strings.Contains(p.buf.String(), p.prompt) {
		p.once.Do(func() { close(p.seen) })
	}
	return len(b), nil
}

func (p *promptWatcher) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// TestDemoResumeCommandAsPrinted runs the printed "Resume with" command
// through a shell, in another process: it resumes the same story (the
// conversation, the user, privacy) from a --db path with a space in it.
func TestDemoResumeCommandAsPrinted(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"plain", nil, []string{"Your seat on VX205 is booked.", "bookFlight 1"}},
		{"conversation and user", []string{"--conversation", "trip 1", "--user", "alice"}, []string{"Running as alice", "Your seat on VX205 is booked."}},
		{"privacy", []string{"--privacy"}, []string{"bookFlight received:   {\"flight\":\"VX205\",\"email\":\"ada.lovelace@example.com\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "my trips", "demo.db")
			if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"demo", "--db", db}, tc.flags...),
				&env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, program: shellQuote(os.Args[0])})
			if code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
			}
			var command string
			for sc := bufio.NewScanner(&out); sc.Scan(); {
				if c, ok := strings.CutPrefix(sc.Text(), "Resume with:  "); ok {
					command = c
				}
			}
			if command == "" {
				t.Fatalf("no Resume with line:\n%s", out.String())
			}
			cmd := exec.Command("sh", "-c", command)
			cmd.Env = append(os.Environ(), "TOOLGATE_TEST_MAIN=1")
			cmd.Stdin = strings.NewReader("")
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", command, err, got)
			}
			mustContain(t, string(got), append([]string{"Resuming conversation", "[call_book] bookFlight ok"}, tc.want...)...)
		})
	}
}

func TestProgramName(t *testing.T) {
	for _, tc := range []struct{ arg0, want string }{
		{"/tmp/go-build123/b001/exe/toolgate", "go run ./cmd/toolgate"},
		{"/opt/tool gate/toolgate-not-on-path", "'/opt/tool gate/toolgate-not-on-path'"},
		{"./toolgate-not-on-path", "./toolgate-not-on-path"},
	} {
		if got := programName(tc.arg0); got != tc.want {
			t.Errorf("programName(%q) = %q, want %q", tc.arg0, got, tc.want)
		}
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("shellQuote = %s", got)
	}
}
