package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcptool"
	"github.com/toolgate/toolgate/provider/scripted"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type weather struct {
	Temperature int    `json:"temperature"`
	Conditions  string `json:"conditions"`
}

func ptr[T any](v T) *T { return &v }

// newTestServer returns an in-process server with a few tools.
func newTestServer(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "weather", Description: "Structured weather"},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, weather, error) {
			return nil, weather{Temperature: 21, Conditions: "Sunny"}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is full")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_all", Description: "Deletes everything",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
		})
	return s
}

func connect(t *testing.T, server *mcp.Server, opts *mcptool.Options) *mcptool.Server {
	t.Helper()
	srv, err := mcptool.Connect(t.Context(), mcptool.InMemory(server, nil), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func names(tools []*toolgate.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name())
	}
	return out
}

func toolNamed(t *testing.T, tools []*toolgate.Tool, name string) *toolgate.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %q in %v", name, names(tools))
	return nil
}

func call(ctx context.Context, tool *toolgate.Tool, args string) (string, error) {
	return tool.Call(ctx, &toolgate.ToolRequest{Call: toolgate.ToolCall{ID: "c1", Name: tool.Name(), Arguments: args}})
}

func TestToolsAndCalls(t *testing.T) {
	srv := connect(t, newTestServer(nil), &mcptool.Options{Prefix: "t_"})
	tools := srv.Tools()
	if diff := cmp.Diff([]string{"t_delete_all", "t_echo", "t_fail", "t_weather"}, slices.Sorted(slices.Values(names(tools)))); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	echo := toolNamed(t, tools, "t_echo")
	def := echo.Definition()
	if def.Description != "Echo the text" {
		t.Errorf("description: got %q", def.Description)
	}
	if def.InputSchema == nil || def.InputSchema.Type != "object" || def.InputSchema.Properties["text"] == nil {
		t.Errorf("input schema: got %+v, want an object schema with property text", def.InputSchema)
	}

	tests := []struct {
		tool, args, want string
		wantErr          string
	}{
		{tool: "t_echo", args: `{"text":"hello"}`, want: "hello"},
		{tool: "t_weather", args: ``, want: `{"conditions":"Sunny","temperature":21}`},
		{tool: "t_fail", args: `{}`, wantErr: "the disk is full"},
		{tool: "t_echo", args: `{"text":5}`, wantErr: "text"}, // the server validates
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			got, err := call(t.Context(), toolNamed(t, tools, tt.tool), tt.args)
			if tt.wantErr != "" {
				var te *mcptool.ToolError
				if !errors.As(err, &te) {
					t.Fatalf("got %q, %v; want a *ToolError", got, err)
				}
				if te.Tool != tt.tool || !strings.Contains(te.Content, tt.wantErr) {
					t.Errorf("got %+v, want tool %s and content containing %q", te, tt.tool, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestToolErrorIsAnErrorResult: an isError result reaches the model as an
// error result and the turn goes on.
func TestToolErrorIsAnErrorResult(t *testing.T) {
	srv := connect(t, newTestServer(nil), nil)
	var results []toolgate.ToolResult
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			results = tm.Results
			return scripted.Reply{Text: "sorry"}, nil
		}
		return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "fail", Arguments: "{}"}}}, nil
	})
	client := toolgate.NewClient(model, srv.Tools(), nil)
	resp, err := client.Call(t.Context(), &toolgate.CallParams{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	want := []toolgate.ToolResult{{CallID: "c1", Name: "fail", Content: "the disk is full", Status: toolgate.ResultError}}
	if diff := cmp.Diff(want, results); diff != "" || resp.Text() != "sorry" {
		t.Errorf("results (-want +got):\n%s\ntext %q", diff, resp.Text())
	}
}

func TestConfirmation(t *testing.T) {
	type ann = mcp.ToolAnnotations
	tests := []struct {
		name    string
		ann     *ann
		hints   mcptool.Hints
		confirm []string
		want    bool
	}{
		{"no annotations", nil, mcptool.HintDestructive, nil, false},
		{"destructive", &ann{DestructiveHint: ptr(true)}, mcptool.HintDestructive, nil, true},
		{"not destructive", &ann{DestructiveHint: ptr(false)}, mcptool.HintDestructive, nil, false},
		{"destructive, hints off", &ann{DestructiveHint: ptr(true)}, mcptool.HintNone, nil, false},
		{"no annotations, not read-only rule", nil, mcptool.HintNotReadOnly, nil, true},
		{"read-only, not read-only rule", &ann{ReadOnlyHint: true}, mcptool.HintNotReadOnly, nil, false},
		{"read-only and destructive", &ann{ReadOnlyHint: true, DestructiveHint: ptr(true)}, mcptool.HintNotReadOnly, nil, true},
		{"read-only and destructive, default rule", &ann{ReadOnlyHint: true, DestructiveHint: ptr(true)}, mcptool.HintDestructive, nil, true},
		// A server that lies: it calls a tool read-only and not
		// destructive, but the application named it.
		{"lying server, named", &ann{ReadOnlyHint: true, DestructiveHint: ptr(false)}, mcptool.HintNotReadOnly, []string{"p_tool"}, true},
		{"lying server, pattern", &ann{ReadOnlyHint: true, DestructiveHint: ptr(false)}, mcptool.HintNone, []string{"p_t*"}, true},
		{"pattern without match", &ann{ReadOnlyHint: true}, mcptool.HintDestructive, []string{"other_*", "tool"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
			s.AddTool(&mcp.Tool{Name: "tool", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: tt.ann},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
			srv := connect(t, s, &mcptool.Options{Prefix: "p_", Hints: tt.hints, ConfirmTools: tt.confirm})
			tools := srv.Tools()
			if got := toolNamed(t, tools, "p_tool").Metadata().RequiresConfirmation; got != tt.want {
				t.Errorf("RequiresConfirmation: got %v, want %v", got, tt.want)
			}
			if got := srv.Policy()(toolgate.ToolCall{Name: "p_tool"}, toolgate.ToolMetadata{}); got != (tt.confirm != nil && tt.want) {
				t.Errorf("Policy: got %v", got)
			}
		})
	}
}

// TestLyingServerPauses: a tool the server annotates as read-only pauses
// the turn when the application named it, also with a manager that does
// not honour the metadata flag but uses the Server's policy.
func TestLyingServerPauses(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "liar"}, nil)
	var deleted atomic.Bool
	s.AddTool(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			deleted.Store(true)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
	srv := connect(t, s, &mcptool.Options{Prefix: "db_", Hints: mcptool.HintNotReadOnly, ConfirmTools: []string{"db_wipe"}})
	for _, opts := range []*toolgate.ClientOptions{
		nil,
		{DisableMetadataFlag: true, Policy: srv.Policy(), Logger: discard()},
	} {
		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "db_wipe", Arguments: "{}"}}})
		client := toolgate.NewClient(model, srv.Tools(), opts)
		resp, err := client.Call(t.Context(), &toolgate.CallParams{Input: "wipe it"})
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Paused() || !slices.Equal(resp.Awaiting, []string{"c1"}) || deleted.Load() {
			t.Errorf("paused %v, awaiting %v, deleted %v; want a pause on c1 and nothing deleted", resp.Paused(), resp.Awaiting, deleted.Load())
		}
	}
}

func TestPagination(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "pages"}, &mcp.ServerOptions{PageSize: 2})
	var want []string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		s.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		want = append(want, n)
	}
	var mu sync.Mutex
	lists := 0
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				mu.Lock()
				lists++
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	srv := connect(t, s, nil)
	if diff := cmp.Diff(want, names(srv.Tools())); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if lists != 3 {
		t.Errorf("tools/list requests: got %d, want 3 pages", lists)
	}
}

// withListedTools makes the server list extra tools besides its own, as a
// hostile or broken server might.
func withListedTools(s *mcp.Server, extra ...*mcp.Tool) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				r.Tools = append(r.Tools, extra...)
			}
			return res, err
		}
	})
}

func TestSkippedTools(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 200) + `{}` + strings.Repeat(`}}`, 200)
	huge := `{"type":"object","description":"` + strings.Repeat("x", 300<<10) + `"}`
	tests := []struct {
		tool    *mcp.Tool
		wantErr error
	}{
		{&mcp.Tool{Name: "bad name!", InputSchema: json.RawMessage(`{"type":"object"}`)}, mcptool.ErrInvalidName},
		{&mcp.Tool{Name: "", InputSchema: json.RawMessage(`{"type":"object"}`)}, mcptool.ErrInvalidName},
		{&mcp.Tool{Name: strings.Repeat("n", 63), InputSchema: json.RawMessage(`{"type":"object"}`)}, mcptool.ErrInvalidName}, // too long with the prefix
		{&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, mcptool.ErrDuplicateName},
		{&mcp.Tool{Name: "props", InputSchema: json.RawMessage(`{"type":"object","properties":5}`)}, mcptool.ErrInvalidSchema},
		{&mcp.Tool{Name: "string", InputSchema: json.RawMessage(`{"type":"string"}`)}, mcptool.ErrInvalidSchema},
		{&mcp.Tool{Name: "array", InputSchema: json.RawMessage(`[1,2]`)}, mcptool.ErrInvalidSchema},
		{&mcp.Tool{Name: "regexp", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`)}, mcptool.ErrInvalidSchema},
		{&mcp.Tool{Name: "remote_ref", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`)}, mcptool.ErrInvalidSchema},
		{&mcp.Tool{Name: "huge", InputSchema: json.RawMessage(huge)}, mcptool.ErrInvalidSchema},
		{&mcp.Tool{Name: "types", InputSchema: json.RawMessage(`{"type":["object","null"]}`)}, mcptool.ErrInvalidSchema},
	}
	s := newTestServer(nil)
	var extra []*mcp.Tool
	for _, tt := range tests {
		extra = append(extra, tt.tool)
	}
	extra = append(extra,
		&mcp.Tool{Name: "deep", InputSchema: json.RawMessage(deep)},
		&mcp.Tool{Name: "untyped", InputSchema: json.RawMessage(`{"properties":{"a":{"type":"string"}}}`)},
		&mcp.Tool{Name: "draft7", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/x"}}}`)},
	)
	withListedTools(s, extra...)
	srv := connect(t, s, &mcptool.Options{Prefix: "p_", Logger: discard()})

	issues := srv.Issues()
	if len(issues) != len(tests) {
		t.Errorf("got %d issues, want %d: %v", len(issues), len(tests), issues)
	}
	for i, tt := range tests {
		if i >= len(issues) {
			break
		}
		if issues[i].Name != tt.tool.Name || !errors.Is(issues[i].Err, tt.wantErr) {
			t.Errorf("issue %d: got %q %v, want %q %v", i, issues[i].Name, issues[i].Err, tt.tool.Name, tt.wantErr)
		}
	}
	got := names(srv.Tools())
	for _, n := range []string{"p_echo", "p_deep", "p_untyped", "p_draft7"} {
		if !slices.Contains(got, n) {
			t.Errorf("tool %s is not exposed: %v", n, got)
		}
	}
	if s := toolNamed(t, srv.Tools(), "p_untyped").Definition().InputSchema; s == nil || s.Type != "object" {
		t.Errorf("untyped schema: got %+v, want type object", s)
	}
}

func TestResultContent(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "content"}, nil)
	results := map[string]*mcp.CallToolResult{
		"texts": {Content: []mcp.Content{&mcp.TextContent{Text: "one"}, &mcp.TextContent{Text: "two"}}},
		"both": {Content: []mcp.Content{&mcp.TextContent{Text: `{ "b": [1, 2], "a": "x" }`}},
			StructuredContent: map[string]any{"a": "x", "b": []any{1, 2}}},
		"differ": {Content: []mcp.Content{&mcp.TextContent{Text: "It is warm."}},
			StructuredContent: map[string]any{"t": 30}},
		"media": {Content: []mcp.Content{
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte("12345")},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("123")},
			&mcp.ResourceLink{Name: "report", URI: "file:///r.txt"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "hello"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.bin", Blob: []byte{1, 2}}},
		}},
		"empty": {},
	}
	want := map[string]string{
		"texts":  "one\ntwo",
		"both":   `{ "b": [1, 2], "a": "x" }`,
		"differ": "It is warm.\n{\"t\":30}",
		"media":  "[image: image/png, 5 bytes]\n[audio: audio/wav, 3 bytes]\n[resource link: report file:///r.txt]\n[resource: file:///a.txt]\nhello\n[resource: file:///b.bin, unknown, 2 bytes]",
		"empty":  "",
	}
	for name, res := range results {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	srv := connect(t, s, nil)
	for name := range results {
		t.Run(name, func(t *testing.T) {
			got, err := call(t.Context(), toolNamed(t, srv.Tools(), name), "{}")
			if err != nil || got != want[name] {
				t.Errorf("got %q, %v; want %q", got, err, want[name])
			}
		})
	}
}

// TestCancellation: cancelling the call's context ends the call at once
// and the server's handler sees the cancellation.
func TestCancellation(t *testing.T) {
	started := make(chan struct{})
	serverCanceled := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "slow"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(serverCanceled)
			return nil, ctx.Err()
		})
	srv := connect(t, s, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := call(ctx, toolNamed(t, srv.Tools(), "slow"), "{}")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	receive(t, serverCanceled) // the server saw the cancellation
}

// TestServerDiesMidCall: a call in flight when the server dies becomes an
// error result and the turn goes on; calls during the outage fail; after
// the backoff the Server reconnects and the tools work again.
func TestServerDiesMidCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sessions []*mcp.ServerSession
		down := false
		started := make(chan struct{}, 1)
		dead := make(chan struct{}) // closed when the server "process" dies
		s := newTestServer(nil)
		s.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				started <- struct{}{}
				// A dying server takes its handlers with it; the SDK's
				// session Close waits for running handlers to return.
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-dead:
					return nil, errors.New("the server died")
				}
			})
		dial := mcptool.InMemory(s, func(ss *mcp.ServerSession) {
			mu.Lock()
			sessions = append(sessions, ss)
			mu.Unlock()
		})
		flaky := func(ctx context.Context) (mcp.Transport, error) {
			mu.Lock()
			d := down
			mu.Unlock()
			if d {
				return nil, errors.New("connection refused")
			}
			return dial(ctx)
		}
		changes := make(chan []*toolgate.Tool, 10)
		srv, err := mcptool.Connect(t.Context(), flaky, &mcptool.Options{
			MinBackoff: time.Second, MaxBackoff: 4 * time.Second, Logger: discard(),
			OnToolsChanged: func(tools []*toolgate.Tool) { changes <- tools },
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()

		// The server dies while a turn's call runs.
		go func() {
			<-started
			mu.Lock()
			down = true
			ss := sessions[0]
			mu.Unlock()
			close(dead)
			ss.Close()
		}()
		var results []toolgate.ToolResult
		model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
			if tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
				results = tm.Results
				return scripted.Reply{Text: "the server failed"}, nil
			}
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "hang", Arguments: "{}"}}}, nil
		})
		client := toolgate.NewClient(model, srv.Tools(), nil)
		resp, err := client.Call(t.Context(), &toolgate.CallParams{Input: "go"})
		if err != nil {
			t.Fatalf("the turn was lost: %v", err)
		}
		if len(results) != 1 || results[0].Status != toolgate.ResultError || resp.Text() != "the server failed" {
			t.Fatalf("got results %+v, text %q; want one error result", results, resp.Text())
		}

		// During the outage calls fail, and reconnection attempts back off.
		synctest.Wait()
		echo := toolNamed(t, srv.Tools(), "echo")
		if _, err := call(t.Context(), echo, `{"text":"x"}`); !errors.Is(err, mcptool.ErrNotConnected) {
			t.Errorf("during the outage: got %v, want ErrNotConnected", err)
		}
		start := time.Now()
		time.Sleep(10 * time.Second) // advances the bubble's clock: attempts at 1s, 3s, 7s fail
		synctest.Wait()
		mu.Lock()
		down = false
		mu.Unlock()
		restored := receive(t, changes)
		// Attempts at 1s, 3s and 7s failed; the next one waits the capped
		// 4s.
		if got := time.Since(start); got != 11*time.Second {
			t.Errorf("reconnected after %v, want 11s", got)
		}
		if !slices.Contains(names(restored), "echo") {
			t.Errorf("restored tools: %v", names(restored))
		}
		// An old tool value works over the new connection.
		if got, err := call(t.Context(), echo, `{"text":"back"}`); err != nil || got != "back" {
			t.Errorf("after reconnection: got %q, %v", got, err)
		}
	})
}

// receive returns the next value of ch, failing the test if none comes
// within a minute (a hang guard, not synchronisation).
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatal("timed out waiting")
		panic("unreachable")
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestListChangedDuringTurn: the server adds a tool while a turn runs; the
// turn keeps the tools it started with, and the Server's set (and a
// client built from it) has the new tool.
func TestListChangedDuringTurn(t *testing.T) {
	s := newTestServer(nil)
	s.AddTool(&mcp.Tool{Name: "install", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(&mcp.Tool{Name: "fresh", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "installed"}}}, nil
		})
	changes := make(chan []*toolgate.Tool, 10)
	srv := connect(t, s, &mcptool.Options{OnToolsChanged: func(tools []*toolgate.Tool) { changes <- tools }})
	before := names(srv.Tools())

	var promptTools [][]string
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		promptTools = append(promptTools, names(p.Tools))
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			// The listing that follows the notification is done before
			// the turn's second round.
			receive(t, changes)
			return scripted.Reply{Text: "done"}, nil
		}
		return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "install", Arguments: "{}"}}}, nil
	})
	client := toolgate.NewClient(model, srv.Tools(), nil)
	if _, err := client.Call(t.Context(), &toolgate.CallParams{Input: "install"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{before, before}, promptTools); diff != "" {
		t.Errorf("the turn's tools changed (-want +got):\n%s", diff)
	}
	after := names(srv.Tools())
	if !slices.Contains(after, "fresh") || len(after) != len(before)+1 {
		t.Errorf("tools after the change: %v", after)
	}
	got, err := call(t.Context(), toolNamed(t, srv.Tools(), "fresh"), "{}")
	if err != nil || got != "new" {
		t.Errorf("calling the new tool: got %q, %v", got, err)
	}
	s.RemoveTools("fresh")
	if tools := receive(t, changes); slices.Contains(names(tools), "fresh") {
		t.Errorf("removed tool still listed: %v", names(tools))
	}
}

func TestHTTP(t *testing.T) {
	s := newTestServer(nil)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.Header.Get("X-Team"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()

	if _, err := mcptool.Connect(t.Context(), mcptool.HTTP(ts.URL, nil), nil); err == nil {
		t.Error("Connect without a token: got no error")
	}
	srv, err := mcptool.Connect(t.Context(), mcptool.HTTP(ts.URL, &mcptool.HTTPOptions{
		Header:      http.Header{"X-Team": {"blue"}, "Authorization": {"Basic nope"}},
		BearerToken: "s3cret",
	}), &mcptool.Options{Prefix: "h_"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := call(t.Context(), toolNamed(t, srv.Tools(), "h_echo"), `{"text":"over http"}`)
	if err != nil || got != "over http" {
		t.Errorf("got %q, %v", got, err)
	}
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(seen, "Bearer s3cret blue") {
		t.Errorf("headers seen by the server: %q", seen)
	}
}

func TestClose(t *testing.T) {
	srv, err := mcptool.Connect(t.Context(), mcptool.InMemory(newTestServer(nil), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	echo := toolNamed(t, srv.Tools(), "echo")
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := call(t.Context(), echo, `{"text":"x"}`); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("call after Close: got %v, want ErrClosed", err)
	}
}

func TestConnectErrors(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name string
		dial mcptool.Dialer
		opts *mcptool.Options
		want error
	}{
		{"nil dialer", nil, nil, nil},
		{"bad pattern", mcptool.InMemory(newTestServer(nil), nil), &mcptool.Options{ConfirmTools: []string{"a["}}, path.ErrBadPattern},
		{"dial fails", func(context.Context) (mcp.Transport, error) { return nil, refused }, nil, refused},
		{"no command", mcptool.Command("", nil), nil, nil},
		{"missing command", mcptool.Command("/nonexistent/mcp-server", nil), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := mcptool.Connect(t.Context(), tt.dial, tt.opts)
			if err == nil {
				srv.Close()
				t.Fatal("got no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestResultImagesAttached: a result's images reach the call's result as
// files (besides their description); audio and invalid images do not.
func TestResultImagesAttached(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "images"}, nil)
	s.AddTool(&mcp.Tool{Name: "draw", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a chart"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("png-bytes")},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("wav")},
				&mcp.ImageContent{MIMEType: "not a type", Data: []byte("x")},
			}}, nil
		})
	srv := connect(t, s, nil)
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "draw", Arguments: "{}"}}},
		scripted.Reply{Text: "done"},
	)
	c := toolgate.NewClient(model, srv.Tools(), nil)
	if _, err := c.Call(t.Context(), &toolgate.CallParams{Input: "draw"}); err != nil {
		t.Fatal(err)
	}
	msgs := model.Prompts()[1].Messages
	res := msgs[len(msgs)-1].(*toolgate.ToolMessage).Results[0]
	want := toolgate.Parts{toolgate.FilePart{MediaType: "image/png", Data: []byte("png-bytes")}}
	if diff := cmp.Diff(want, res.Parts); diff != "" {
		t.Errorf("attached files (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.Content, "[image: image/png, 9 bytes]") {
		t.Errorf("content %q lost the image's description", res.Content)
	}
}
