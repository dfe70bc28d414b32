package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
)

// crashEnv, set to "point:concurrency:dbpath:runsfile", makes
// TestCrashDuringResume act as the process that resumes a pause and is
// killed at point.
const crashEnv = "TOOLGATE_SQLITE_CRASH"

// crashKeys are the calls of the paused reply: t0 to t2 are allowed, t3 is
// denied.
var crashKeys = []string{"t0", "t1", "t2", "t3"}

func crashDecisions() []toolgate.Decision {
	return []toolgate.Decision{toolgate.Allow("t0"), toolgate.Allow("t1"), toolgate.Allow("t2"), toolgate.Deny("t3", "no")}
}

// crashClient returns a client on store whose four gated tools append
// "name pid" to the runs file when they run, then call hook (if any).
func crashClient(store toolgate.ConversationStore, runs string, concurrency int, hook func(string)) *toolgate.Client {
	var tools []*toolgate.Tool
	for _, key := range crashKeys {
		tools = append(tools, toolgate.NewTool(toolgate.ToolDefinition{Name: key}, toolgate.ToolMetadata{RequiresConfirmation: true},
			func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
				f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return "", err
				}
				_, err = fmt.Fprintf(f, "%s %d %s\n", key, os.Getpid(), req.IdempotencyKey)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return "", err
				}
				if hook != nil {
					hook("running " + key)
				}
				return key + " done", nil
			}))
	}
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			return scripted.Reply{Text: "All done."}, nil
		}
		var calls []toolgate.ToolCall
		for _, key := range crashKeys {
			calls = append(calls, toolgate.ToolCall{ID: key, Name: key, Arguments: "{}"})
		}
		return scripted.Reply{ToolCalls: calls}, nil
	})
	return toolgate.NewClient(model, tools, &toolgate.ClientOptions{
		Store:       store,
		Concurrency: concurrency,
	})
}

// hookedStore calls hook at the points of a resumption where the crash
// test kills the process.
type hookedStore struct {
	*sqlite.Store
	hook func(string)
}

func (s *hookedStore) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	err := s.Store.ClaimPause(ctx, id, pauseID, c)
	if err == nil {
		s.hook("claimed")
		// The first calls start with the claim, in the same write.
		for _, k := range c.Started {
			s.hook("marked " + k)
		}
	}
	return err
}

func (s *hookedStore) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	err := s.Store.MarkStarted(ctx, id, pauseID, token, keys)
	for _, k := range keys {
		if err == nil {
			s.hook("marked " + k)
		}
	}
	return err
}

func (s *hookedStore) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	if p != nil && p.Resolves != "" {
		s.hook("appending")
	}
	err := s.Store.Append(ctx, id, p)
	if err == nil && p != nil && p.Resolves != "" {
		s.hook("appended")
	}
	return err
}

// runCrashChild resumes the pause of conversation "conv" and, at the hook
// named by point, reports it on standard output and waits to be killed.
func runCrashChild(t *testing.T, v string) {
	parts := strings.SplitN(v, ":", 4)
	if len(parts) != 4 {
		t.Fatalf("bad %s %q", crashEnv, v)
	}
	point, path, runs := parts[0], parts[2], parts[3]
	var concurrency int
	fmt.Sscan(parts[1], &concurrency)
	store, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	hook := func(at string) {
		if at != point {
			return
		}
		fmt.Printf("crash: at %s\n", at)
		// Wait to be killed; a parent that went away closes stdin.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}
	c := crashClient(&hookedStore{Store: store, hook: hook}, runs, concurrency, hook)
	conv, err := store.Load(context.Background(), "conv")
	if err != nil || conv.Pause == nil {
		t.Fatalf("Load: %v, pause %v", err, conv)
	}
	_, err = c.Resume(context.Background(), &toolgate.ResumeTurnParams{ConversationID: "conv", PauseID: conv.Pause.ID, Decisions: crashDecisions()})
	fmt.Printf("crash: resume returned %v\n", err)
}

// TestCrashDuringResume kills (SIGKILL) a process resuming a pause at each
// point of the resumption, then recovers the pause in a fresh client on the
// same SQLite file, and checks the guarantee: no call ran twice, a call
// recorded as started is never re-run (it answers "interrupted" unless its
// result was stored), calls never started run in the recovery, the denied
// call never runs, and the pause ends resolved with a valid history.
func TestCrashDuringResume(t *testing.T) {
	if v := os.Getenv(crashEnv); v != "" {
		runCrashChild(t, v)
		return
	}
	const (
		ok          = toolgate.ResultOK
		interrupted = toolgate.ResultInterrupted
	)
	tests := []struct {
		point       string
		concurrency int
		// want are the statuses of t0..t2 after recovery (t3 is denied);
		// nil when the crash point gives no fixed answer (parallel calls).
		want []toolgate.ResultStatus
		// resolved: the pause was resolved before the kill; there is
		// nothing to recover.
		resolved bool
	}{
		// The claim records the first call as started: t0 counts as
		// started from the claim on, although it may not have begun.
		{"claimed", 1, []toolgate.ResultStatus{interrupted, ok, ok}, false},
		{"marked t0", 1, []toolgate.ResultStatus{interrupted, ok, ok}, false},
		{"running t0", 1, []toolgate.ResultStatus{interrupted, ok, ok}, false},
		{"marked t1", 1, []toolgate.ResultStatus{interrupted, interrupted, ok}, false},
		{"running t1", 1, []toolgate.ResultStatus{interrupted, interrupted, ok}, false},
		{"marked t2", 1, []toolgate.ResultStatus{interrupted, interrupted, interrupted}, false},
		{"running t2", 1, []toolgate.ResultStatus{interrupted, interrupted, interrupted}, false},
		{"appending", 1, []toolgate.ResultStatus{interrupted, interrupted, interrupted}, false},
		{"appended", 1, []toolgate.ResultStatus{ok, ok, ok}, true},
		{"claimed", 3, nil, false},
		{"marked t1", 3, nil, false},
		{"running t2", 3, nil, false},
		{"appending", 3, []toolgate.ResultStatus{interrupted, interrupted, interrupted}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/concurrency %d", tt.point, tt.concurrency), func(t *testing.T) {
			dir := t.TempDir()
			path, runs := filepath.Join(dir, "toolgate.db"), filepath.Join(dir, "runs")

			// Pause a turn.
			store := openAt(t, path, nil)
			c := crashClient(store, runs, tt.concurrency, nil)
			resp, err := c.Call(t.Context(), &toolgate.CallParams{ConversationID: "conv", Input: "go"})
			if err != nil || !resp.Paused() {
				t.Fatalf("Call: %v, paused %v", err, resp.Paused())
			}
			pauseID := load(t, store, "conv").Pause.ID

			// Resume it in a child, killed at the point.
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashDuringResume$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d:%s:%s", crashEnv, tt.point, tt.concurrency, path, runs))
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			reached := false
			var out strings.Builder
			for sc := bufio.NewScanner(stdout); sc.Scan(); {
				out.WriteString(sc.Text() + "\n")
				if sc.Text() == "crash: at "+tt.point {
					reached = true
					break
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, stdout)
			cmd.Wait()
			if !reached {
				t.Fatalf("the child never reached %q; output:\n%s%s", tt.point, out.String(), stderr.String())
			}

			// What the killed process left.
			conv := load(t, store, "conv")
			var startedBefore []string
			if conv.Pause != nil {
				startedBefore = conv.Pause.Started
			}
			firstRuns := readRuns(t, runs)

			// Restart: a fresh store and client on the file recover.
			store2 := openAt(t, path, nil)
			c2 := crashClient(store2, runs, tt.concurrency, nil)
			res, err := c2.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pauseID, Force: true})
			switch {
			case tt.resolved:
				if !errors.Is(err, toolgate.ErrNoOpenPause) {
					t.Fatalf("RecoverPause of a resolved pause: got error %v, want one wrapping %v", err, toolgate.ErrNoOpenPause)
				}
			case err != nil:
				t.Fatalf("RecoverPause: %v", err)
			case res.Response == nil || res.Response.Text() != "All done.":
				t.Errorf("the recovered turn did not continue: %+v", res.Response)
			}

			// The pause is resolved, the history valid, new input accepted.
			conv = load(t, store2, "conv")
			if conv.Pause != nil {
				t.Fatalf("the pause is still open: %+v", conv.Pause)
			}
			if err := validHistory(conv.Messages); err != nil {
				t.Fatal(err)
			}
			results := conv.Messages[2].(*toolgate.ToolMessage).Results
			if _, err := c2.Call(t.Context(), &toolgate.CallParams{ConversationID: "conv", Input: "again"}); err != nil {
				t.Errorf("new input after the recovery: %v", err)
			}

			allRuns := readRuns(t, runs)
			for i, key := range crashKeys {
				r := results[i]
				n := len(allRuns[key])
				if n > 1 {
					t.Errorf("%s ran %d times (processes %v)", key, n, allRuns[key])
				}
				started := slices.Contains(startedBefore, key)
				switch {
				case key == "t3":
					if n != 0 || r.Status != toolgate.ResultDenied {
						t.Errorf("denied %s: ran %d times, result %+v", key, n, r)
					}
				case r.Status == toolgate.ResultOK:
					if n != 1 || r.Content != key+" done" {
						t.Errorf("%s answered ok but ran %d times (result %+v)", key, n, r)
					}
					if started && !tt.resolved {
						t.Errorf("%s was started by the killed process but ran again", key)
					}
				case r.Status == toolgate.ResultInterrupted:
					if !started {
						t.Errorf("%s answered interrupted but was never recorded as started", key)
					}
					if len(allRuns[key]) != len(firstRuns[key]) {
						t.Errorf("%s was started by the killed process and ran again in the recovery", key)
					}
				default:
					t.Errorf("%s: unexpected result %+v", key, r)
				}
				// A call that ran was recorded as started first.
				if len(firstRuns[key]) > 0 && !started && !tt.resolved {
					t.Errorf("%s ran in the killed process without being recorded as started", key)
				}
				if tt.want != nil && i < len(tt.want) && r.Status != tt.want[i] {
					t.Errorf("%s: status %v, want %v", key, r.Status, tt.want[i])
				}
			}
		})
	}
}

// readRuns returns, by tool, the processes that ran it.
func readRuns(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[0]] = append(out[f[0]], f[1])
		}
	}
	return out
}

func load(t *testing.T, s toolgate.ConversationStore, id string) *toolgate.Conversation {
	t.Helper()
	c, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	return c
}

// validHistory reports whether every tool call of msgs has its result, in
// order, in the tool message that follows its reply.
func validHistory(msgs []toolgate.Message) error {
	for i, m := range msgs {
		reply, ok := m.(*toolgate.AssistantMessage)
		if !ok || !reply.HasToolCalls() {
			continue
		}
		tm, ok := toolMessageAt(msgs, i+1)
		if !ok || len(tm.Results) != len(reply.ToolCalls) {
			return fmt.Errorf("message %d: the reply's calls are not all answered by the next message", i)
		}
		for j, r := range tm.Results {
			if c := reply.ToolCalls[j]; r.CallID != c.ID || r.Name != c.Name {
				return fmt.Errorf("message %d: result %d answers %s/%s, want %s/%s", i, j, r.CallID, r.Name, c.ID, c.Name)
			}
		}
	}
	return nil
}

func toolMessageAt(msgs []toolgate.Message, i int) (*toolgate.ToolMessage, bool) {
	if i >= len(msgs) {
		return nil, false
	}
	tm, ok := msgs[i].(*toolgate.ToolMessage)
	return tm, ok
}
