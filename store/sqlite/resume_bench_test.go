package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
)

// BenchmarkResume8 resumes, from SQLite, a paused reply of 8 allowed no-op
// calls: load, claim, a record of each call's start, the resolution, one
// model round and its append. The pause is made with the timer stopped.
func BenchmarkResume8(b *testing.B) {
	for _, concurrency := range []int{1, 4} {
		b.Run(fmt.Sprint("concurrency=", concurrency), func(b *testing.B) {
			store, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "conv.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			model, tools, decisions := noopCalls(8)
			client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{
				Store:       store,
				Concurrency: concurrency,
			})
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				id := fmt.Sprint("c", i)
				paused, err := client.Call(ctx, &toolgate.CallParams{ConversationID: id, Input: "go"})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: paused.PauseID, ConversationID: id, Decisions: decisions}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// noopCalls returns n gated no-op tools t0…tn-1, a model whose reply calls
// them all and then answers "done" to their results, and decisions
// allowing every call.
func noopCalls(n int) (toolgate.Model, []*toolgate.Tool, []toolgate.Decision) {
	var tools []*toolgate.Tool
	var calls []toolgate.ToolCall
	var decisions []toolgate.Decision
	for i := range n {
		name := fmt.Sprint("t", i)
		tools = append(tools, toolgate.NewTool(toolgate.ToolDefinition{Name: name}, toolgate.ToolMetadata{RequiresConfirmation: true},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return "ok", nil }))
		calls = append(calls, toolgate.ToolCall{ID: name, Name: name, Arguments: "{}"})
		decisions = append(decisions, toolgate.Allow(name))
	}
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			return scripted.Reply{Text: "done"}, nil
		}
		return scripted.Reply{ToolCalls: calls}, nil
	})
	return model, tools, decisions
}
