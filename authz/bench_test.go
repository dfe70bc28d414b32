package authz_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
)

func benchTools(n int) ([]*toolgate.Tool, []string) {
	tools := make([]*toolgate.Tool, n)
	names := make([]string, n)
	for i := range tools {
		names[i] = fmt.Sprintf("tool%03d", i)
		tools[i] = toolgate.NewTool(toolgate.ToolDefinition{Name: names[i]}, toolgate.ToolMetadata{},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	}
	return tools, names
}

// BenchmarkDecision is one decision of a Go policy.
func BenchmarkDecision(b *testing.B) {
	_, names := benchTools(200)
	policy := authz.RoleTools(map[string][]string{"finance": names[:100]})
	req := &authz.Request{Principal: alice, Tool: toolgate.ToolDefinition{Name: names[50]}, Phase: authz.PhaseExecution}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := policy.Authorize(ctx, req); !d.Allowed {
			b.Fatal("denied")
		}
	}
}

// BenchmarkFilter200 filters 200 tools for one principal, as every round
// does before the model call: first on a new request (tools are wrapped),
// then on a later round of the same request.
func BenchmarkFilter200(b *testing.B) {
	tools, names := benchTools(200)
	guard := authz.NewGuard(authz.RoleTools(map[string][]string{"finance": names[:100]}), nil)
	ctx := context.Background()
	b.Run("first-round", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rg, err := guard.Begin(ctx, &toolgate.BeginParams{Principal: alice, Tools: tools})
			if err != nil {
				b.Fatal(err)
			}
			if ts, _ := rg.Tools(ctx); len(ts) != 100 {
				b.Fatal(len(ts))
			}
		}
	})
	b.Run("later-round", func(b *testing.B) {
		rg, _ := guard.Begin(ctx, &toolgate.BeginParams{Principal: alice, Tools: tools})
		rg.Tools(ctx)
		b.ReportAllocs()
		for b.Loop() {
			if ts, _ := rg.Tools(ctx); len(ts) != 100 {
				b.Fatal(len(ts))
			}
		}
	})
}

// BenchmarkCheckReply8 authorizes a whole reply of 8 calls.
func BenchmarkCheckReply8(b *testing.B) {
	tools, names := benchTools(200)
	guard := authz.NewGuard(authz.RoleTools(map[string][]string{"finance": names}), nil)
	ctx := context.Background()
	rg, _ := guard.Begin(ctx, &toolgate.BeginParams{Principal: alice, Tools: tools})
	rg.Tools(ctx)
	reply := &toolgate.AssistantMessage{}
	for i := range 8 {
		reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: fmt.Sprint(i), Name: names[i*20], Arguments: "{}"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if r, err := rg.CheckReply(ctx, nil, reply); err != nil || r != nil {
			b.Fatal(err)
		}
	}
}
