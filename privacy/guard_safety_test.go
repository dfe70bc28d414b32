package privacy_test

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

const (
	grace = "grace.hopper@example.org"
	typed = "typed.by.model@example.net"
)

func argsOf(t *testing.T, s string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("arguments %s: %v", s, err)
	}
	return m
}

// lookupThenSend: a lookup in an unstored round gives grace's address; the
// model then asks to send to that token, with an address it typed itself
// as cc. The send pauses for confirmation.
func lookupThenSend(t *testing.T, rec *recorder, guard *privacy.Guard, store toolgate.ConversationStore) *toolgate.Client {
	t.Helper()
	lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "lookup"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) {
			return `{"assistant":"` + grace + `"}`, nil
		})
	send := rec.tool("send", `"sent"`).WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		switch last := p.Messages[len(p.Messages)-1].(type) {
		case *toolgate.UserMessage:
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "l", Name: "lookup", Arguments: "{}"}}}, nil
		case *toolgate.ToolMessage:
			if last.Results[0].Name == "lookup" {
				tok := tokens(last.Results[0].Content)[0]
				return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "s", Name: "send", Arguments: `{"to":"` + tok + `","cc":"` + typed + `"}`}}}, nil
			}
		}
		return scripted.Reply{Text: "done"}, nil
	})
	return toolgate.NewClient(model, []*toolgate.Tool{lookup, send}, &toolgate.ClientOptions{Protect: guard.Begin, Store: store})
}

// The token of a value first seen in an unstored round is restored to that
// value on resumption (the default vault belongs to the conversation), and
// when the vault is gone (another process without a vault store) it stays a
// token: never the address the model typed in the same reply.
func TestGuardUnstoredRoundTokenOnResume(t *testing.T) {
	ctx := context.Background()
	grant := &privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"send": privacy.AllTypes()}}
	for _, tc := range []struct {
		name     string
		sameProc bool
		wantTo   string
	}{
		{"same guard", true, grace},
		{"new guard without the vault", false, "[EMAIL_ADDRESS_2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			store := memory.New()
			g1, _ := privacy.NewGuard(grant)
			resp, err := lookupThenSend(t, &rec, g1, store).Call(ctx, &toolgate.CallParams{ConversationID: "w", Input: "mail my assistant, I am " + email})
			if err != nil || !resp.Paused() {
				t.Fatalf("%v paused=%v", err, resp != nil && resp.Paused())
			}
			g2 := g1
			if !tc.sameProc {
				g2, _ = privacy.NewGuard(grant)
			}
			if _, err := lookupThenSend(t, &rec, g2, store).Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "w", PauseID: storedPauseID(t, store, "w"), Decisions: []toolgate.Decision{toolgate.Allow("s")}}); err != nil {
				t.Fatal(err)
			}
			got := rec.got()
			if len(got) != 1 {
				t.Fatalf("send ran %d times", len(got))
			}
			a := argsOf(t, got[0])
			if a["to"] != tc.wantTo || a["cc"] != typed {
				t.Errorf("send received %v; want to=%s cc=%s", a, tc.wantTo, typed)
			}
		})
	}
}

// personScanner finds the names of the tests as PERSON.
func personScanner() *privacy.Scanner {
	return privacy.NewScanner(&privacy.ScannerOptions{Recognizers: append(privacy.Builtins(),
		privacy.NewDictionary(privacy.Person, []string{"Ann Lee", "Bob Stone", "Carl Diaz"}, nil))})
}

// A new turn whose vault is new (another process) never issues a token
// that the stored history already holds for someone else.
func TestGuardNewTurnAvoidsHistoryTokens(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	var rec recorder
	lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "lookup"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return `"Bob Stone"`, nil })
	greet := rec.tool("greet", `"ok"`)
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		switch last := p.Messages[len(p.Messages)-1].(type) {
		case *toolgate.UserMessage:
			if strings.Contains(last.Text, "manager") {
				return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "l", Name: "lookup", Arguments: "{}"}}}, nil
			}
			// Turn 2: greet the person the history calls [PERSON_2].
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "g", Name: "greet", Arguments: `{"who":"[PERSON_2]"}`}}}, nil
		case *toolgate.ToolMessage:
			if last.Results[0].Name == "lookup" {
				return scripted.Reply{Text: "Your manager is " + tokens(last.Results[0].Content)[0] + "."}, nil
			}
		}
		return scripted.Reply{Text: "greeted"}, nil
	})
	newClient := func() *toolgate.Client {
		g, _ := privacy.NewGuard(&privacy.GuardOptions{Scanner: personScanner(), Disclosure: map[string]privacy.Grant{"greet": privacy.AllTypes()}})
		return toolgate.NewClient(model, []*toolgate.Tool{lookup, greet}, &toolgate.ClientOptions{Protect: g.Begin, Store: store})
	}
	if _, err := newClient().Call(ctx, &toolgate.CallParams{ConversationID: "b", Input: "I am Ann Lee, who is my manager?"}); err != nil {
		t.Fatal(err)
	}
	conv, _ := store.Load(ctx, "b")
	if got := conv.Messages[len(conv.Messages)-1].(*toolgate.AssistantMessage).Text; got != "Your manager is [PERSON_2]." {
		t.Fatalf("stored answer %q", got)
	}
	resp, err := newClient().Call(ctx, &toolgate.CallParams{ConversationID: "b", Input: "Say hello to him, and to Carl Diaz."})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp
	if got := rec.got(); len(got) != 1 || strings.Contains(got[0], "Carl") || strings.Contains(got[0], "Ann") {
		t.Errorf("greet received %v; want the unrestorable token, never Carl Diaz", got)
	}
}

// A forged token next to an address the model typed is not restored to it.
func TestGuardForgedTokenNextToTypedAddress(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage); ok {
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{
				{ID: "a", Name: "send", Arguments: `{"cc":"` + typed + `"}`},
				{ID: "b", Name: "send", Arguments: `{"to":"[EMAIL_ADDRESS_2]","cc":"` + typed + `"}`},
			}}, nil
		}
		return scripted.Reply{Text: "done"}, nil
	})
	g, _ := privacy.NewGuard(&privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"send": privacy.AllTypes()}})
	c := toolgate.NewClient(model, []*toolgate.Tool{rec.tool("send", `"sent"`)}, &toolgate.ClientOptions{Protect: g.Begin})
	if _, err := c.Call(ctx, &toolgate.CallParams{Input: "I am " + email}); err != nil {
		t.Fatal(err)
	}
	// The model sees its reply back with the typed address as a token that
	// is not the one the reply already holds.
	ps := model.Prompts()
	if len(ps) != 2 {
		t.Fatalf("%d model calls", len(ps))
	}
	reply := ps[1].Messages[1].(*toolgate.AssistantMessage)
	if a := reply.ToolCalls[0].Arguments; strings.Contains(a, typed) || strings.Contains(a, "[EMAIL_ADDRESS_2]") {
		t.Errorf("the model sees call a as %s; want the typed address under a new token", a)
	}
	got := rec.got()
	if len(got) != 2 {
		t.Fatalf("send ran %d times", len(got))
	}
	for _, s := range got {
		a := argsOf(t, s)
		if a["cc"] != typed {
			t.Errorf("cc %q, want the typed address", a["cc"])
		}
		if to, ok := a["to"]; ok && to != "[EMAIL_ADDRESS_2]" {
			t.Errorf("to %q, want the forged token unchanged", to)
		}
	}
}

// Text a model middleware adds (a retrieval step) is tokenized too.
func TestGuardTokenizesWhatMiddlewareAdds(t *testing.T) {
	ctx := context.Background()
	retrieval := func(next toolgate.ModelFunc) toolgate.ModelFunc {
		return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
			cp := *p
			cp.Messages = append(slices.Clone(p.Messages), &toolgate.UserMessage{Text: "Document: contact " + grace + ", card " + card})
			return next(ctx, &cp)
		}
	}
	model := scripted.New(scripted.Reply{Text: "ok"})
	g, _ := privacy.NewGuard(nil)
	c := toolgate.NewClient(model, nil, &toolgate.ClientOptions{Protect: g.Begin, ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{retrieval}})
	if _, err := c.Call(ctx, &toolgate.CallParams{Input: "hi " + email}); err != nil {
		t.Fatal(err)
	}
	seen := seenByModel(t, model)
	for _, v := range []string{email, grace, card} {
		if strings.Contains(seen, v) {
			t.Errorf("the model saw %q", v)
		}
	}
}

// Every output path follows the mode, and block mode shows what tokens mode
// shows when it does not block, streamed or not.
func TestGuardOutputPaths(t *testing.T) {
	ctx := context.Background()
	// The model answers with a tool whose result returns directly, and
	// whose result holds a card and an e-mail.
	direct := toolgate.NewTool(toolgate.ToolDefinition{Name: "statement"}, toolgate.ToolMetadata{ReturnDirect: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) {
			return `{"card":"` + card + `","owner":"` + grace + `"}`, nil
		})
	model := func() *scripted.Model {
		return scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
			return scripted.Reply{Text: "Here it is. ", ToolCalls: []toolgate.ToolCall{{ID: "s", Name: "statement", Arguments: "{}"}}}, nil
		})
	}
	meta := func(next toolgate.ModelFunc) toolgate.ModelFunc {
		return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
			r, err := next(ctx, p)
			if err == nil {
				r.Metadata = maps.Clone(r.Metadata)
				if r.Metadata == nil {
					r.Metadata = map[string]string{}
				}
				r.Metadata["note"] = "echo " + email
			}
			return r, err
		}
	}
	results := map[privacy.OutputMode]string{}
	for _, mode := range []privacy.OutputMode{privacy.ModeTokens, privacy.ModeBlock} {
		g, _ := privacy.NewGuard(&privacy.GuardOptions{Output: mode})
		c := toolgate.NewClient(model(), []*toolgate.Tool{direct}, &toolgate.ClientOptions{Protect: g.Begin, ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{meta}})
		resp, err := c.Call(ctx, &toolgate.CallParams{Input: "statement for " + email})
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		content := resp.Results[0].Content
		if strings.Contains(content, card) || strings.Contains(content, grace) {
			t.Errorf("%v: return-direct result shown raw: %s", mode, content)
		}
		results[mode] = content
		// Streamed: the same texts, and no error where the blocking call
		// completes.
		var streamed strings.Builder
		for ch, err := range c.Stream(ctx, &toolgate.CallParams{Input: "statement for " + email}) {
			if err != nil {
				t.Fatalf("%v stream: %v", mode, err)
			}
			streamed.WriteString(ch.Text)
			for _, r := range ch.Results {
				streamed.WriteString(r.Content)
			}
		}
		if s := streamed.String(); strings.Contains(s, card) || strings.Contains(s, grace) {
			t.Errorf("%v: streamed %s", mode, s)
		}
	}
	if results[privacy.ModeTokens] != results[privacy.ModeBlock] {
		t.Errorf("tokens mode shows %s, block mode %s", results[privacy.ModeTokens], results[privacy.ModeBlock])
	}
}

// The paused reply's arguments, its metadata and the last chunk of a
// stream are rewritten like the answer text.
func TestGuardPausedReplyOutput(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	send := rec.tool("send", `"sent"`).WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		return scripted.Reply{Text: "Sending.", ToolCalls: []toolgate.ToolCall{{ID: "s", Name: "send", Arguments: `{"to":"` + typed + `"}`}}}, nil
	})
	meta := func(next toolgate.ModelFunc) toolgate.ModelFunc {
		return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
			r, err := next(ctx, p)
			if err == nil {
				r.Metadata = map[string]string{"note": "to " + typed}
			}
			return r, err
		}
	}
	g, _ := privacy.NewGuard(nil)
	c := toolgate.NewClient(model, []*toolgate.Tool{send}, &toolgate.ClientOptions{Protect: g.Begin, ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{meta}})
	resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "p1", Input: "mail " + email})
	if err != nil || !resp.Paused() {
		t.Fatalf("%v", err)
	}
	if a := resp.Message().ToolCalls[0].Arguments; strings.Contains(a, typed) {
		t.Errorf("paused reply's arguments shown raw: %s", a)
	}
	if m := resp.Metadata["note"]; strings.Contains(m, typed) {
		t.Errorf("metadata shown raw: %s", m)
	}
	var last *toolgate.Chunk
	for ch, err := range c.Stream(ctx, &toolgate.CallParams{ConversationID: "p2", Input: "mail " + email}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ch
	}
	if last == nil || len(last.ToolCalls) != 1 || strings.Contains(last.ToolCalls[0].Arguments, typed) {
		t.Errorf("last chunk %+v shows the raw arguments", last)
	}
}

// A number holding values of two types reaches a tool granted one of them
// as a token only.
func TestGuardNumberWithTwoTypes(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	s := privacy.NewScanner(&privacy.ScannerOptions{Recognizers: []privacy.Recognizer{
		&privacy.Rule{Type: privacy.PhoneNumber, Pattern: regexp.MustCompile(`5550100`), Score: 0.95},
		&privacy.Rule{Type: privacy.CreditCard, Pattern: regexp.MustCompile(`4111111111111111`), Score: 0.6},
	}})
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage); ok {
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c", Name: "dial", Arguments: `{"n":55501004111111111111111}`}}}, nil
		}
		return scripted.Reply{Text: "done"}, nil
	})
	g, _ := privacy.NewGuard(&privacy.GuardOptions{Scanner: s, Disclosure: map[string]privacy.Grant{"dial": privacy.Types(privacy.PhoneNumber)}})
	c := toolgate.NewClient(model, []*toolgate.Tool{rec.tool("dial", `"ok"`)}, &toolgate.ClientOptions{Protect: g.Begin})
	if _, err := c.Call(ctx, &toolgate.CallParams{Input: "dial"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); len(got) != 1 || strings.Contains(got[0], "4111") {
		t.Errorf("dial received %v; want no card digits", got)
	}
}

// A streamed block-mode turn behaves as the blocking one: it completes
// when the blocking call completes (tool results hold personal data that
// is not the model's), and when the model writes a new value it fails
// before any of the text reaches the reader.
func TestGuardStreamedBlockModeBehavesAsBlocking(t *testing.T) {
	ctx := context.Background()
	lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "lookup"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return `{"owner":"` + grace + `"}`, nil })
	for _, tc := range []struct {
		answer  string
		blocked bool
	}{
		{"The owner is on file.", false},
		{"The owner is " + typed + ", see the file.", true},
	} {
		model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
			if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage); ok {
				return scripted.Reply{Text: "Looking. ", ToolCalls: []toolgate.ToolCall{{ID: "l", Name: "lookup", Arguments: "{}"}}}, nil
			}
			return scripted.Reply{Text: tc.answer}, nil
		})
		g, _ := privacy.NewGuard(&privacy.GuardOptions{Output: privacy.ModeBlock})
		c := toolgate.NewClient(model, []*toolgate.Tool{lookup}, &toolgate.ClientOptions{Protect: g.Begin})
		_, callErr := c.Call(ctx, &toolgate.CallParams{Input: "who owns it? I am " + email})
		var text strings.Builder
		var streamErr error
		for ch, err := range c.Stream(ctx, &toolgate.CallParams{Input: "who owns it? I am " + email}) {
			if err != nil {
				streamErr = err
				break
			}
			text.WriteString(ch.Text)
		}
		if (callErr != nil) != tc.blocked || (streamErr != nil) != tc.blocked {
			t.Errorf("%q: call %v, stream %v; want blocked=%v for both", tc.answer, callErr, streamErr, tc.blocked)
		}
		if tc.blocked && text.Len() > 0 {
			t.Errorf("%q: the reader got %q before the stream was blocked", tc.answer, text.String())
		}
		if s := text.String(); strings.Contains(s, grace) || strings.Contains(s, email) {
			t.Errorf("streamed %q", s)
		}
	}
}

// storedPauseID returns the id of the open pause of conversation id in
// store, or "".
func storedPauseID(t *testing.T, store toolgate.ConversationStore, id string) string {
	t.Helper()
	conv, err := store.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if conv.Pause == nil {
		return ""
	}
	return conv.Pause.ID
}
