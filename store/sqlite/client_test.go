package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
)

// restartEnv, set to "step:dbpath:runsfile", makes TestClientRestart act as
// one process of the restart story.
const restartEnv = "TOOLGATE_SQLITE_RESTART"

// bookingClient returns a client on the database at path whose tools
// append a line to runs each time they run.
func bookingClient(t testing.TB, path, runs string) (*toolgate.Client, *sqlite.Store) {
	store, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	note := func(name string) {
		f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		fmt.Fprintln(f, name)
	}
	status := toolgate.NewTool(toolgate.ToolDefinition{Name: "flightStatus"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) {
			note("flightStatus")
			return "on time", nil
		})
	book := toolgate.NewTool(toolgate.ToolDefinition{Name: "bookFlight"}, toolgate.ToolMetadata{RequiresConfirmation: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) { note("bookFlight"); return "booked", nil })
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			return scripted.Reply{Text: "Done."}, nil
		}
		return scripted.Reply{ToolCalls: []toolgate.ToolCall{
			{ID: "s", Name: "flightStatus", Arguments: "{}"},
			{ID: "b", Name: "bookFlight", Arguments: "{}"},
		}}, nil
	})
	return toolgate.NewClient(model, []*toolgate.Tool{status, book}, &toolgate.ClientOptions{Store: store, StoreEveryRound: true}), store
}

// TestClientRestart pauses a turn in one process and resumes it in
// another, each with a fresh client on the same SQLite file.
func TestClientRestart(t *testing.T) {
	if v := os.Getenv(restartEnv); v != "" {
		restartChild(t, v)
		return
	}
	dir := t.TempDir()
	path, runs := filepath.Join(dir, "conv.db"), filepath.Join(dir, "runs.txt")
	step := func(name string) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestClientRestart$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%s:%s", restartEnv, name, path, runs))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("step %s: %v\n%s", name, err, out)
		}
	}
	step("pause")
	if b, _ := os.ReadFile(runs); len(b) != 0 {
		t.Fatalf("tools ran before the decision: %q", b)
	}
	step("resume")
	step("replay")
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "flightStatus bookFlight" {
		t.Errorf("tool runs %v, want each tool once", got)
	}
	store, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	conv, err := store.Load(t.Context(), "trip")
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range conv.Messages {
		roles = append(roles, string(m.Role()))
	}
	if got := strings.Join(roles, " "); got != "user assistant tool assistant" || conv.Pause != nil {
		t.Errorf("stored %q, pause %+v; want a complete conversation", got, conv.Pause)
	}
}

func restartChild(t *testing.T, v string) {
	parts := strings.SplitN(v, ":", 3)
	client, store := bookingClient(t, parts[1], parts[2])
	defer store.Close()
	ctx := context.Background()
	switch parts[0] {
	case "pause":
		resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "trip", Input: "book it"})
		if err != nil || !resp.Paused() {
			t.Fatalf("call: %v, paused %v", err, resp.Paused())
		}
	case "resume":
		resp, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "trip"), ConversationID: "trip", Decisions: []toolgate.Decision{toolgate.Allow("s"), toolgate.Allow("b")}})
		if err != nil || resp.Text() != "Done." {
			t.Fatalf("resume: %v %+v", err, resp)
		}
	case "replay":
		_, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "trip"), ConversationID: "trip", Decisions: []toolgate.Decision{toolgate.Allow("s"), toolgate.Allow("b")}})
		if !errors.Is(err, toolgate.ErrNoOpenPause) {
			t.Fatalf("replayed resume: %v, want ErrNoOpenPause", err)
		}
	}
}

// TestClientConcurrentResume resumes one pause from many goroutines, each
// with its own client and store on the same file: exactly one runs tools.
func TestClientConcurrentResume(t *testing.T) {
	dir := t.TempDir()
	path, runs := filepath.Join(dir, "conv.db"), filepath.Join(dir, "runs.txt")
	client, store := bookingClient(t, path, runs)
	defer store.Close()
	if resp, err := client.Call(t.Context(), &toolgate.CallParams{ConversationID: "trip", Input: "book"}); err != nil || !resp.Paused() {
		t.Fatalf("call: %v", err)
	}
	const n = 6
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		c, s := bookingClient(t, path, runs)
		defer s.Close()
		wg.Go(func() {
			<-start
			_, err := c.Resume(context.Background(), &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, c, "trip"), ConversationID: "trip", Decisions: []toolgate.Decision{toolgate.Allow("s"), toolgate.Deny("b", "")}})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, toolgate.ErrNoOpenPause):
				refused.Add(1)
			default:
				t.Errorf("resume: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	b, _ := os.ReadFile(runs)
	if ok.Load() != 1 || refused.Load() != n-1 || strings.TrimSpace(string(b)) != "flightStatus" {
		t.Errorf("ok %d refused %d runs %q; want 1, %d, flightStatus once", ok.Load(), refused.Load(), b, n-1)
	}
}

// BenchmarkResume pauses a turn and resumes it from SQLite: the store's
// load, claim and two appends plus one model round.
func BenchmarkResume(b *testing.B) {
	dir := b.TempDir()
	client, store := bookingClient(b, filepath.Join(dir, "conv.db"), filepath.Join(dir, "runs.txt"))
	defer store.Close()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		id := fmt.Sprint("c", i)
		paused, err := client.Call(ctx, &toolgate.CallParams{ConversationID: id, Input: "book"})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: paused.PauseID, ConversationID: id, Decisions: []toolgate.Decision{toolgate.Allow("s"), toolgate.Deny("b", "")}}); err != nil {
			b.Fatal(err)
		}
	}
}
