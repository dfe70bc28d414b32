package cedar_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
)

// BenchmarkDecision is one decision through the public API.
//
//   - execute: Cedar evaluates the call (arguments converted, principal's
//     entities cached).
//   - discover-uncached: Cedar evaluates, and the entities are built (no
//     cache).
//   - discover: the principal's remembered definition-phase decision.
func BenchmarkDecision(b *testing.B) {
	cached := newPolicy(b, nil, bank)
	uncached := newPolicy(b, &cedar.Options{EntityCacheSize: -1}, bank)
	ctx := context.Background()
	transfer := toolgate.ToolDefinition{Name: "transfer"}
	for _, bc := range []struct {
		name string
		p    *cedar.Policy
		r    *authz.Request
		want bool
	}{
		{"execute", cached, &authz.Request{Principal: fay, Tool: transfer, Phase: authz.PhaseExecution,
			Call: &toolgate.ToolCall{Name: "transfer", Arguments: `{"amount":500,"to":"DE02 1203 0000 0000 2020 51","memo":"rent"}`}}, true},
		{"execute-forbidden", cached, &authz.Request{Principal: mel, Tool: transfer, Phase: authz.PhaseExecution,
			Call: &toolgate.ToolCall{Name: "transfer", Arguments: `{"amount":500}`}}, false},
		{"discover-uncached", uncached, &authz.Request{Principal: fay, Tool: transfer, Phase: authz.PhaseDefinition}, true},
		{"discover", cached, &authz.Request{Principal: fay, Tool: transfer, Phase: authz.PhaseDefinition}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _ := bc.p.Authorize(ctx, bc.r); d.Allowed != bc.want {
					b.Fatal(d.Reason)
				}
			}
		})
	}
}

// BenchmarkFilter200 filters 200 tools through the guard with a Cedar
// policy of 20 role policies, as every round does before the model call:
// "evaluated" asks Cedar for every tool (no cache), "remembered" uses the
// principal's remembered decisions.
func BenchmarkFilter200(b *testing.B) {
	tools := make([]*toolgate.Tool, 200)
	var text strings.Builder
	for i := range tools {
		name := fmt.Sprintf("tool%03d", i)
		tools[i] = toolgate.NewTool(toolgate.ToolDefinition{Name: name}, toolgate.ToolMetadata{},
			func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	}
	for i := range 20 {
		fmt.Fprintf(&text, "@id(\"role%d\") permit (principal in Role::\"role%d\", action, resource) when { resource in [", i, i)
		for j := range 10 {
			if j > 0 {
				text.WriteString(", ")
			}
			fmt.Fprintf(&text, "Tool::\"tool%03d\"", i*10+j)
		}
		text.WriteString("] };\n")
	}
	who := &toolgate.Principal{ID: "fay", Roles: []string{"role0", "role1", "role2", "role3", "role4"}}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts *cedar.Options
	}{
		{"evaluated", &cedar.Options{EntityCacheSize: -1}},
		{"remembered", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			guard := authz.NewGuard(newPolicy(b, bc.opts, text.String()), nil)
			rg, err := guard.Begin(ctx, &toolgate.BeginParams{Principal: who, Tools: tools})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if ts, _ := rg.Tools(ctx); len(ts) != 50 {
					b.Fatal(len(ts))
				}
			}
		})
	}
}
