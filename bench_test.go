package toolgate_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
)

// benchReply returns a reply of n calls of tool, with ids c0, c1, ….
func benchReply(n int, tool string) *toolgate.AssistantMessage {
	r := &toolgate.AssistantMessage{ToolCalls: make([]toolgate.ToolCall, n)}
	for i := range r.ToolCalls {
		r.ToolCalls[i] = toolgate.ToolCall{ID: "c" + strconv.Itoa(i), Name: tool, Arguments: `{"flight":"VX205"}`}
	}
	return r
}

func noopTool(name string, meta toolgate.ToolMetadata) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name}, meta, func(context.Context, *toolgate.ToolRequest) (string, error) {
		return "ok", nil
	})
}

// benchPrompt carries a few tools, so that finding the call's tool is a
// realistic scan.
func benchPrompt() *toolgate.Prompt {
	return &toolgate.Prompt{
		Messages: []toolgate.Message{&toolgate.SystemMessage{Text: "sys"}, userSays("go")},
		Tools: []*toolgate.Tool{
			noopTool("search", toolgate.ToolMetadata{}),
			noopTool("lookup", toolgate.ToolMetadata{}),
			noopTool("noop", toolgate.ToolMetadata{}),
			noopTool("gated", toolgate.ToolMetadata{RequiresConfirmation: true}),
		},
	}
}

// BenchmarkPause measures the pause decision: every call is judged and the
// reply is handed back with its keys.
func BenchmarkPause(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run("calls="+strconv.Itoa(n), func(b *testing.B) {
			m := toolgate.NewManager(nil)
			p := benchPrompt()
			params := &toolgate.RunParams{Prompt: p, Reply: benchReply(n, "gated")}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(ctx, params); !errors.Is(err, toolgate.ErrPaused) {
					b.Fatalf("got %v, want a pause", err)
				}
			}
		})
	}
}

// BenchmarkResume8 measures a resume of 8 calls with 8 decisions: checks,
// limits, the no-op calls and the history.
func BenchmarkResume8(b *testing.B) {
	m := toolgate.NewManager(&toolgate.ManagerOptions{Limits: toolgate.Limits{MaxCalls: 100}})
	r := benchReply(8, "gated")
	ds := make([]toolgate.Decision, 8)
	for i, k := range r.CallKeys() {
		if i%4 == 3 {
			ds[i] = toolgate.Deny(k, "")
		} else {
			ds[i] = toolgate.Allow(k)
		}
	}
	params := &toolgate.ResumeParams{Prompt: benchPrompt(), Reply: r, Decisions: ds}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Resume(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckDecisions8 measures the validation of 8 decisions alone.
func BenchmarkCheckDecisions8(b *testing.B) {
	r := benchReply(8, "gated")
	p := benchPrompt()
	ds := make([]toolgate.Decision, 8)
	for i, k := range r.CallKeys() {
		ds[7-i] = toolgate.Allow(k)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := toolgate.CheckDecisions(p, r, ds); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun8 measures running 8 no-op raw calls, one at a time and four
// at a time.
func BenchmarkRun8(b *testing.B) {
	for _, bc := range []struct {
		name        string
		concurrency int
	}{{"sequential", 1}, {"concurrent", 4}} {
		b.Run(bc.name, func(b *testing.B) {
			m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: bc.concurrency})
			params := &toolgate.RunParams{Prompt: benchPrompt(), Reply: benchReply(8, "noop")}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkToolCallKeys measures the keys of a reply of 8 calls, one of
// them without an id.
func BenchmarkToolCallKeys(b *testing.B) {
	r := benchReply(8, "noop")
	r.ToolCalls[5].ID = ""
	b.ReportAllocs()
	for b.Loop() {
		if keys := r.CallKeys(); len(keys) != 8 {
			b.Fatal(keys)
		}
	}
}

// BenchmarkTypedToolCall measures one call of a typed tool: schema
// validation, decoding and encoding. It is reported apart from the
// manager's own work, which the other benchmarks measure with raw tools.
func BenchmarkTypedToolCall(b *testing.B) {
	tool := toolgate.NewToolFor("flightStatus", "", func(_ context.Context, _ *toolgate.ToolRequest, in flightInput) (string, error) {
		return in.Flight, nil
	}, nil)
	ctx := context.Background()
	call := toolgate.ToolCall{ID: "c0", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(ctx, &toolgate.ToolRequest{Call: call}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHotPathAllocs pins the allocations of the manager's own work, so that
// a change that makes the hot paths allocate more is noticed.
func TestHotPathAllocs(t *testing.T) {
	ctx := context.Background()
	m := toolgate.NewManager(nil)
	p := benchPrompt()
	gated := benchReply(8, "gated")
	keys := gated.CallKeys()
	allow := make([]toolgate.Decision, len(keys))
	for i, k := range keys {
		allow[i] = toolgate.Allow(k)
	}
	noop := benchReply(8, "noop")
	for i := range noop.ToolCalls {
		noop.ToolCalls[i].Arguments = "" // no argument copy: only the manager's work
	}
	// Each function checks its result, so that a path that allocates
	// little because it fails is not taken for a fast one; check returns
	// "" or what was wrong with the last run.
	tests := []struct {
		name  string
		max   float64
		check func() string
	}{
		{"ToolCallKeys", 1, func() string {
			if keys := gated.CallKeys(); len(keys) != 8 || keys[7] != "c7" {
				return fmt.Sprintf("keys %v, want c0 … c7", keys)
			}
			return ""
		}},
		{"CheckDecisions", 2, func() string {
			if err := toolgate.CheckDecisions(p, gated, allow); err != nil {
				return fmt.Sprintf("CheckDecisions: %v, want nil", err)
			}
			return ""
		}},
		{"Run pausing", 2, func() string {
			_, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: gated})
			// A type assertion, not errors.As, whose target would allocate.
			if pe, ok := err.(*toolgate.PauseError); !ok || len(pe.Awaiting) != 8 {
				return fmt.Sprintf("Run: %v, want a *PauseError awaiting 8 calls", err)
			}
			return ""
		}},
		// keys, results, requests, result with its message, history
		{"Run of 8 calls", 5, func() string {
			res, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: noop})
			if err != nil || len(res.Message.Results) != 8 || res.Message.Results[7].Content != "ok" {
				return fmt.Sprintf("Run: %+v, %v; want 8 results \"ok\"", res, err)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var problem string
			f := func() { problem = tt.check() }
			got := testing.AllocsPerRun(100, f)
			if problem != "" {
				t.Fatal(problem)
			}
			if got > tt.max {
				t.Errorf("got %v allocations, want at most %v", got, tt.max)
			}
		})
	}
}
