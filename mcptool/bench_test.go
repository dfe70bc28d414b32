package mcptool_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcptool"
)

// BenchmarkCall is one call of a server's tool through the adapter and the
// in-memory transport: JSON-RPC round trip, server handler and result
// mapping.
func BenchmarkCall(b *testing.B) {
	srv, err := mcptool.Connect(b.Context(), mcptool.InMemory(newTestServer(nil), nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var echo *toolgate.Tool
	for _, t := range srv.Tools() {
		if t.Name() == "echo" {
			echo = t
		}
	}
	req := &toolgate.ToolRequest{Call: toolgate.ToolCall{ID: "c1", Name: "echo", Arguments: `{"text":"hello"}`}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := echo.Call(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKCall is the same call made with the SDK's client session
// directly: the difference to BenchmarkCall is the adapter's overhead.
func BenchmarkSDKCall(b *testing.B) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newTestServer(nil).Connect(b.Context(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(b.Context(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}
