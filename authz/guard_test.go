package authz_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/toolgatetest"
)

// counter is a set of tools that count their runs and record the
// principals they saw.
type counter struct {
	mu         sync.Mutex
	runs       map[string]int
	principals []*toolgate.Principal
}

func (c *counter) tool(name string, meta toolgate.ToolMetadata) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: "the " + name + " tool"}, meta,
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.runs == nil {
				c.runs = map[string]int{}
			}
			c.runs[name]++
			c.principals = append(c.principals, req.Principal)
			return name + " done", nil
		})
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.runs {
		n += v
	}
	return n
}

func (c *counter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[name]
}

var (
	alice = &toolgate.Principal{ID: "alice", Roles: []string{"finance"}}
	bob   = &toolgate.Principal{ID: "bob", Roles: []string{"support"}}
)

var roles = authz.RoleTools(map[string][]string{
	"support": {"lookup"},
	"finance": {"lookup", "transfer", "book"},
})

func calls(names ...string) []toolgate.ToolCall {
	out := make([]toolgate.ToolCall, len(names))
	for i, n := range names {
		out[i] = toolgate.ToolCall{ID: fmt.Sprint("c", i), Name: n, Arguments: `{"amount":5000}`}
	}
	return out
}

func toolNames(ts []*toolgate.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

// runWithoutGuard runs the calls with tools through a client that has no
// authorizer, as a program that got the guard's tools and runs them itself
// would: the tools must guard themselves. It returns the turn's error.
func runWithoutGuard(ctx context.Context, tools []*toolgate.Tool, p *toolgate.Principal, calls []toolgate.ToolCall) error {
	model := scripted.New(scripted.Reply{ToolCalls: calls}, scripted.Reply{Text: "done"})
	c := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Logger: quiet()})
	_, err := c.Call(ctx, &toolgate.CallParams{Principal: p, Input: "go"})
	return err
}

func denial(t *testing.T, err error, code authz.Code) *authz.DenialError {
	t.Helper()
	var de *authz.DenialError
	if !errors.As(err, &de) {
		t.Fatalf("got error %v, want a DenialError %s", err, code)
	}
	if de.Code != code {
		t.Fatalf("got code %s (%v), want %s", de.Code, err, code)
	}
	if !errors.Is(err, authz.ErrDenied) {
		t.Errorf("errors.Is(%v, ErrDenied) = false", err)
	}
	if strings.Contains(err.Error(), "5000") {
		t.Errorf("denial message %q carries an argument value", err)
	}
	return de
}

func setup(policy authz.Policy, opts *authz.Options, replies ...scripted.Reply) (*counter, *scripted.Model, *toolgate.Client) {
	var c counter
	tools := []*toolgate.Tool{
		c.tool("lookup", toolgate.ToolMetadata{}),
		c.tool("transfer", toolgate.ToolMetadata{}),
		c.tool("book", toolgate.ToolMetadata{RequiresConfirmation: true}),
	}
	model := scripted.New(replies...)
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Authorize: authz.NewGuard(policy, opts).Begin})
	return &c, model, client
}

func TestDefinitionFiltering(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		who  *toolgate.Principal
		want []string
	}{
		{alice, []string{"lookup", "transfer", "book"}},
		{bob, []string{"lookup"}},
		{&toolgate.Principal{ID: "eve"}, nil},
	} {
		t.Run(tc.who.ID, func(t *testing.T) {
			_, model, client := setup(roles, nil, scripted.Reply{Text: "hi"})
			if _, err := client.Call(ctx, &toolgate.CallParams{Principal: tc.who, Input: "hello"}); err != nil {
				t.Fatal(err)
			}
			got := toolNames(model.Prompts()[0].Tools)
			if !slices.Equal(got, tc.want) {
				t.Errorf("model saw %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEmptyListNeverFallsBack(t *testing.T) {
	ctx := context.Background()
	deny := authz.PolicyFunc(func(context.Context, *authz.Request) (authz.Decision, error) { return authz.Decision{}, nil })
	c, model, client := setup(deny, nil, scripted.Reply{ToolCalls: calls("lookup")})
	_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"})
	denial(t, err, authz.CodeToolNotExposed)
	if n := len(model.Prompts()[0].Tools); n != 0 {
		t.Errorf("model saw %d tools, want 0", n)
	}
	if c.total() != 0 {
		t.Error("a tool ran")
	}
}

// TestBypassAttempts covers every way around the guard that the reference
// test suite lists; each must fail with the right code and run nothing.
func TestBypassAttempts(t *testing.T) {
	ctx := context.Background()
	t.Run("no principal", func(t *testing.T) {
		c, model, client := setup(authz.AllowAll(), nil, scripted.Reply{ToolCalls: calls("lookup")})
		_, err := client.Call(ctx, &toolgate.CallParams{Input: "x"})
		de := denial(t, err, authz.CodeAuthenticationRequired)
		if de.Phase != "" {
			t.Errorf("phase %q, want none", de.Phase)
		}
		if len(model.Prompts()) != 0 || c.total() != 0 {
			t.Error("the model was called or a tool ran")
		}
	})
	t.Run("no principal, no tools", func(t *testing.T) {
		model := scripted.New(scripted.Reply{Text: "hi"})
		client := toolgate.NewClient(model, nil, &toolgate.ClientOptions{Authorize: authz.NewGuard(authz.AllowAll(), nil).Begin})
		if _, err := client.Call(ctx, &toolgate.CallParams{Input: "x"}); err != nil {
			t.Errorf("request without tools refused: %v", err)
		}
	})
	t.Run("hidden tool called", func(t *testing.T) {
		c, _, client := setup(roles, nil, scripted.Reply{ToolCalls: calls("transfer")})
		_, err := client.Call(ctx, &toolgate.CallParams{Principal: bob, Input: "x"})
		denial(t, err, authz.CodeToolNotExposed)
		if c.total() != 0 {
			t.Error("a tool ran")
		}
	})
	t.Run("unknown tool called", func(t *testing.T) {
		c, _, client := setup(roles, nil, scripted.Reply{ToolCalls: calls("lookup", "rm_rf")})
		_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"})
		denial(t, err, authz.CodeToolNotExposed)
		if c.total() != 0 {
			t.Error("a tool ran")
		}
	})
	middlewareAttempt := func(t *testing.T, change func(p *toolgate.Prompt, extra *toolgate.Tool), code authz.Code) {
		var c counter
		lookup := c.tool("lookup", toolgate.ToolMetadata{})
		extra := c.tool("transfer", toolgate.ToolMetadata{})
		model := scripted.New(scripted.Reply{ToolCalls: calls("transfer")})
		mw := func(next toolgate.ModelFunc) toolgate.ModelFunc {
			return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
				change(p, extra)
				return next(ctx, p)
			}
		}
		client := toolgate.NewClient(model, []*toolgate.Tool{lookup}, &toolgate.ClientOptions{
			Authorize:       authz.NewGuard(authz.AllowAll(), nil).Begin,
			ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{mw},
		})
		_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"})
		denial(t, err, code)
		if len(model.Prompts()) != 0 || c.total() != 0 {
			t.Error("the model saw the changed tools or a tool ran")
		}
	}
	t.Run("tool added after the start", func(t *testing.T) {
		middlewareAttempt(t, func(p *toolgate.Prompt, extra *toolgate.Tool) { p.Tools = append(p.Tools, extra) }, authz.CodeCallbackAdded)
	})
	t.Run("same-name replacement", func(t *testing.T) {
		middlewareAttempt(t, func(p *toolgate.Prompt, _ *toolgate.Tool) {
			p.Tools[0] = toolgate.NewTool(toolgate.ToolDefinition{Name: "lookup"}, toolgate.ToolMetadata{},
				func(context.Context, *toolgate.ToolRequest) (string, error) { return "evil", nil })
		}, authz.CodeCallbackReplaced)
	})
	t.Run("one denied call among allowed ones", func(t *testing.T) {
		policy := authz.All(roles, authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
			if r.Phase == authz.PhaseExecution && r.Tool.Name == "transfer" {
				return authz.Deny("transfers are frozen"), nil
			}
			return authz.Allow("ok"), nil
		}))
		c, _, client := setup(policy, nil, scripted.Reply{ToolCalls: calls("lookup", "transfer", "lookup")})
		_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"})
		de := denial(t, err, authz.CodeExecutionDenied)
		if de.Tool != "transfer" || de.Phase != authz.PhaseExecution || de.Reason != "transfers are frozen" {
			t.Errorf("denial %+v", de)
		}
		if c.total() != 0 {
			t.Error("a tool ran")
		}
	})
	t.Run("user manager still rechecks", func(t *testing.T) {
		// The tools the client hands out re-check before they run, even when
		// something other than the client's manager runs them.
		var offered []*toolgate.Tool
		var allowExec atomic.Bool
		allowExec.Store(true)
		policy := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
			if r.Phase == authz.PhaseExecution && !allowExec.Load() {
				return authz.Deny("revoked"), nil
			}
			return authz.Allow("ok"), nil
		})
		var c counter
		mw := func(next toolgate.ModelFunc) toolgate.ModelFunc {
			return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
				offered = p.Tools
				return next(ctx, p)
			}
		}
		client := toolgate.NewClient(scripted.New(scripted.Reply{Text: "hi"}), []*toolgate.Tool{c.tool("lookup", toolgate.ToolMetadata{})},
			&toolgate.ClientOptions{Authorize: authz.NewGuard(policy, nil).Begin, ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{mw}})
		if _, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"}); err != nil {
			t.Fatal(err)
		}
		allowExec.Store(false)
		err := runWithoutGuard(ctx, offered, alice, calls("lookup"))
		denial(t, err, authz.CodeExecutionDenied)
		if c.total() != 0 {
			t.Error("the tool ran after its access was revoked")
		}
	})
}

func TestRecheckRightBeforeRunning(t *testing.T) {
	ctx := context.Background()
	// The batch check passes; the second call's own recheck is denied: the
	// first call ran, the second did not, and the turn ends with the denial.
	var execs atomic.Int32
	policy := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		if r.Phase == authz.PhaseExecution && execs.Add(1) == 4 {
			return authz.Deny("revoked mid-reply"), nil
		}
		return authz.Allow("ok"), nil
	})
	c, _, client := setup(policy, nil, scripted.Reply{ToolCalls: calls("lookup", "transfer")})
	_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"})
	denial(t, err, authz.CodeExecutionDenied)
	if c.count("lookup") != 1 || c.count("transfer") != 0 {
		t.Errorf("runs %v, want lookup 1 transfer 0", c.runs)
	}
}

func TestRevokedWhilePaused(t *testing.T) {
	ctx := context.Background()
	var revoked atomic.Bool
	var revokedPhase authz.Phase
	policy := authz.All(roles, authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		if revoked.Load() && r.Tool.Name == "book" && r.Phase == revokedPhase {
			return authz.Deny("booking revoked"), nil
		}
		return authz.Allow("ok"), nil
	}))
	for _, tc := range []struct {
		phase authz.Phase
		want  authz.Code
	}{
		{authz.PhaseExecution, authz.CodeExecutionDenied},
		{authz.PhaseDefinition, authz.CodeToolNotExposed}, // book is no longer shown
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			revoked.Store(false)
			revokedPhase = tc.phase
			c, _, client := setup(policy, nil, scripted.Reply{ToolCalls: calls("lookup", "book")}, scripted.Reply{Text: "done"})
			resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "p", Principal: alice, Input: "x"})
			if err != nil || !resp.Paused() {
				t.Fatalf("got %v paused=%v", err, resp.Paused())
			}
			revoked.Store(true)
			p := &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "p", Principal: alice, Decisions: []toolgate.Decision{toolgate.Allow("c0"), toolgate.Allow("c1")}}
			_, err = client.Resume(ctx, p)
			denial(t, err, tc.want)
			if c.total() != 0 {
				t.Errorf("tools ran: %v", c.runs)
			}
			// The pause is still open: denying the revoked call works.
			revoked.Store(false)
			p.Decisions[1] = toolgate.Deny("c1", "")
			if _, err := client.Resume(ctx, p); err != nil {
				t.Fatalf("resume after restoring access: %v", err)
			}
			if c.count("lookup") != 1 || c.count("book") != 0 {
				t.Errorf("runs %v", c.runs)
			}
		})
	}
	t.Run("other principal", func(t *testing.T) {
		c, _, client := setup(roles, nil, scripted.Reply{ToolCalls: calls("book")}, scripted.Reply{Text: "done"})
		if resp, _ := client.Call(ctx, &toolgate.CallParams{ConversationID: "q", Principal: alice, Input: "x"}); !resp.Paused() {
			t.Fatal("not paused")
		}
		_, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "q"), ConversationID: "q", Principal: bob, Decisions: []toolgate.Decision{toolgate.Allow("c0")}})
		denial(t, err, authz.CodeToolNotExposed)
		if c.total() != 0 {
			t.Error("bob's resumption ran alice's call")
		}
	})
}

func TestNeutralRefusal(t *testing.T) {
	ctx := context.Background()
	var events []authz.Event
	var mu sync.Mutex
	opts := &authz.Options{RefuseNeutrally: true, OnDecision: func(e authz.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}
	c, model, client := setup(roles, opts, scripted.Reply{ToolCalls: calls("lookup", "transfer")}, scripted.Reply{Text: "I cannot do that."})
	resp, err := client.Call(ctx, &toolgate.CallParams{Principal: bob, Input: "x"})
	if err != nil || resp.Text() != "I cannot do that." {
		t.Fatalf("got %v %q", err, resp.Text())
	}
	if c.total() != 0 {
		t.Error("a tool ran")
	}
	tm := model.Prompts()[1].Messages[2].(*toolgate.ToolMessage)
	if tm.Results[1].Content != authz.DefaultRefusal || tm.Results[1].Status != toolgate.ResultRefused || tm.Results[0].Status != toolgate.ResultRefused {
		t.Errorf("results %+v", tm.Results)
	}
	var sawNotExposed bool
	for _, e := range events {
		if e.Code == authz.CodeToolNotExposed && e.Tool == "transfer" && e.PrincipalID == "bob" {
			sawNotExposed = true
		}
		if strings.Contains(e.Reason, "5000") {
			t.Errorf("event carries an argument value: %+v", e)
		}
	}
	if !sawNotExposed {
		t.Errorf("no TOOL_NOT_EXPOSED event in %+v", events)
	}
}

func TestPolicyErrorAborts(t *testing.T) {
	ctx := context.Background()
	down := errors.New("policy store down")
	for _, phase := range []authz.Phase{authz.PhaseDefinition, authz.PhaseExecution} {
		t.Run(string(phase), func(t *testing.T) {
			policy := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
				if r.Phase == phase {
					return authz.Decision{}, down
				}
				return authz.Allow("ok"), nil
			})
			c, _, client := setup(policy, nil, scripted.Reply{ToolCalls: calls("lookup")})
			_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "x"})
			if !errors.Is(err, down) {
				t.Errorf("got %v, want the policy's error wrapped", err)
			}
			if c.total() != 0 {
				t.Error("a tool ran")
			}
		})
	}
}

func TestPrincipalCarried(t *testing.T) {
	ctx := context.Background()
	var seen []string
	var mu sync.Mutex
	policy := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(r.Phase)+":"+r.Principal.ID)
		return authz.Allow("ok"), nil
	})
	var c counter
	tools := []*toolgate.Tool{c.tool("lookup", toolgate.ToolMetadata{}), c.tool("transfer", toolgate.ToolMetadata{}), c.tool("book", toolgate.ToolMetadata{RequiresConfirmation: true})}
	model := scripted.New(
		scripted.Reply{ToolCalls: calls("lookup", "transfer", "lookup", "transfer")},
		scripted.Reply{ToolCalls: calls("book")},
		scripted.Reply{Text: "done"},
	)
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{
		Authorize:   authz.NewGuard(policy, nil).Begin,
		Concurrency: 4,
	})
	carol := &toolgate.Principal{ID: "carol"}
	resp, err := toolgate.Collect(client.Stream(ctx, &toolgate.CallParams{ConversationID: "s", Principal: carol, Input: "x"}))
	if err != nil || !resp.Paused() {
		t.Fatalf("stream: %v paused=%v", err, resp.Paused())
	}
	if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "s"), ConversationID: "s", Principal: carol, Decisions: []toolgate.Decision{toolgate.Allow("c0")}}); err != nil {
		t.Fatal(err)
	}
	if c.total() != 5 {
		t.Fatalf("runs %v, want 5", c.runs)
	}
	for _, p := range c.principals {
		if p != carol {
			t.Errorf("a tool saw principal %+v", p)
		}
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, ":carol") {
			t.Errorf("policy saw %s", s)
		}
	}
}

// TestPropertyNoDeniedToolLeaks checks, for random policies over 50 tools
// and random replies, that no request sent to the model carries a tool the
// definition phase denied and that no call runs unless both phases allow
// it.
func TestPropertyNoDeniedToolLeaks(t *testing.T) {
	ctx := context.Background()
	seed := testSeed(t, 1)
	rng := rand.New(rand.NewPCG(seed, 2))
	const nTools = 50
	for iter := range 200 {
		var c counter
		tools := make([]*toolgate.Tool, nTools)
		names := make([]string, nTools)
		defAllowed := map[string]bool{}
		execAllowed := map[string]bool{}
		for i := range tools {
			names[i] = fmt.Sprintf("tool%02d", i)
			tools[i] = c.tool(names[i], toolgate.ToolMetadata{})
			defAllowed[names[i]] = rng.IntN(2) == 0
			execAllowed[names[i]] = rng.IntN(3) != 0
		}
		policy := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
			if r.Phase == authz.PhaseDefinition {
				return authz.Decision{Allowed: defAllowed[r.Tool.Name]}, nil
			}
			return authz.Decision{Allowed: execAllowed[r.Tool.Name]}, nil
		})
		var replies []scripted.Reply
		for range 3 {
			n := 1 + rng.IntN(4)
			var cs []toolgate.ToolCall
			for j := range n {
				cs = append(cs, toolgate.ToolCall{ID: fmt.Sprint("c", j), Name: names[rng.IntN(nTools)]})
			}
			replies = append(replies, scripted.Reply{ToolCalls: cs})
		}
		replies = append(replies, scripted.Reply{Text: "end"})
		model := scripted.New(replies...)
		refuse := iter%2 == 0
		client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Authorize: authz.NewGuard(policy, &authz.Options{RefuseNeutrally: refuse}).Begin})
		_, err := client.Call(ctx, &toolgate.CallParams{Principal: alice, Input: "go"})
		if err != nil && !errors.Is(err, authz.ErrDenied) {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		for _, p := range model.Prompts() {
			for _, tool := range p.Tools {
				if !defAllowed[tool.Name()] {
					t.Fatalf("iteration %d: the model saw denied tool %s", iter, tool.Name())
				}
			}
		}
		c.mu.Lock()
		for name, n := range c.runs {
			if n > 0 && (!defAllowed[name] || !execAllowed[name]) {
				t.Fatalf("iteration %d: denied tool %s ran", iter, name)
			}
		}
		c.mu.Unlock()
	}
}

func TestNewGuardNilPolicy(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a nil policy")
		}
	}()
	authz.NewGuard(nil, nil)
}

func TestAllAndRoleTools(t *testing.T) {
	ctx := context.Background()
	req := func(p *toolgate.Principal, tool string) *authz.Request {
		return &authz.Request{Principal: p, Tool: toolgate.ToolDefinition{Name: tool}, Phase: authz.PhaseDefinition}
	}
	for _, tc := range []struct {
		name   string
		policy authz.Policy
		req    *authz.Request
		want   bool
	}{
		{"role grants", roles, req(bob, "lookup"), true},
		{"role lacks", roles, req(bob, "transfer"), false},
		{"no principal", roles, req(nil, "lookup"), false},
		{"All empty denies", authz.All(), req(alice, "lookup"), false},
		{"All both allow", authz.All(roles, authz.AllowAll()), req(alice, "transfer"), true},
		{"All one denies", authz.All(authz.AllowAll(), roles), req(bob, "transfer"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.policy.Authorize(ctx, tc.req)
			if err != nil || d.Allowed != tc.want {
				t.Errorf("got %+v %v, want allowed=%v", d, err, tc.want)
			}
		})
	}
}

// TestRequestSearchTool: a request's own search tool
// (BeginParams.SearchTool) is offered without a decision, its calls
// need none, and another tool under its name is refused with
// TOOL_SEARCH_CHANGED.
func TestRequestSearchTool(t *testing.T) {
	ctx := context.Background()
	var c counter
	search := c.tool("search_tools", toolgate.ToolMetadata{})
	impostor := c.tool("search_tools", toolgate.ToolMetadata{})
	lookup := c.tool("lookup", toolgate.ToolMetadata{})
	var decided []string
	g := authz.NewGuard(authz.RoleTools(map[string][]string{"r": {"lookup"}}),
		&authz.Options{OnDecision: func(e authz.Event) { decided = append(decided, e.Tool) }})
	rg, err := g.Begin(ctx, &toolgate.BeginParams{Principal: &toolgate.Principal{ID: "p", Roles: []string{"r"}},
		Tools: []*toolgate.Tool{lookup}, SearchTool: search})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := rg.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0] != search || tools[1].Name() != "lookup" {
		t.Fatalf("offered %v, want the search tool itself and lookup", tools)
	}
	p := &toolgate.Prompt{Tools: tools}
	refusals, err := rg.CheckReply(ctx, p, &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "1", Name: "search_tools"}}})
	if err != nil || refusals != nil {
		t.Fatalf("a search call: %v, %v", refusals, err)
	}
	if slices.Contains(decided, "search_tools") {
		t.Errorf("the search tool got a policy decision: %v", decided)
	}
	// A call of an exposed tool the prompt does not carry is not exposed.
	_, err = rg.CheckReply(ctx, &toolgate.Prompt{Tools: tools[:1]}, &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "1", Name: "lookup"}}})
	var de *authz.DenialError
	if !errors.As(err, &de) || de.Code != authz.CodeToolNotExposed {
		t.Fatalf("a call of a tool not in the prompt: got %v, want %s", err, authz.CodeToolNotExposed)
	}
	err = rg.CheckPrompt(ctx, tools, &toolgate.Prompt{Tools: []*toolgate.Tool{impostor, tools[1]}})
	if !errors.As(err, &de) || de.Code != authz.CodeToolSearchChanged {
		t.Fatalf("a replaced search tool: got %v, want %s", err, authz.CodeToolSearchChanged)
	}
}
