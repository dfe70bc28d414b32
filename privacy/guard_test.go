package privacy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
)

const (
	email = "ada.lovelace@example.com"
	card  = "4111 1111 1111 1111"
)

// recorder is a tool that records the arguments it received.
type recorder struct {
	mu   sync.Mutex
	args []string
}

func (r *recorder) tool(name string, result string) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name}, toolgate.ToolMetadata{},
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.args = append(r.args, string(req.Arguments))
			return result, nil
		})
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.args...)
}

// seenByModel returns everything the model received, as JSON text.
func seenByModel(t *testing.T, m *scripted.Model) string {
	t.Helper()
	var b strings.Builder
	for _, p := range m.Prompts() {
		j, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
	}
	return b.String()
}

// echoModel asks to book with the tokens it was given, then answers with
// the tool result it got back.
func echoModel() *scripted.Model {
	return scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		last := p.Messages[len(p.Messages)-1]
		if tm, ok := last.(*toolgate.ToolMessage); ok {
			var who string
			for _, m := range p.Messages {
				if u, ok := m.(*toolgate.UserMessage); ok {
					who = tokens(u.Text)[0]
				}
			}
			return scripted.Reply{Text: "Done for " + who + ": " + tm.Results[0].Content}, nil
		}
		user := last.(*toolgate.UserMessage).Text
		toks := tokens(user)
		args, _ := json.Marshal(map[string]string{"email": toks[0], "card": toks[1], "note": "call " + toks[0]})
		return scripted.Reply{Text: "Booking for " + toks[0] + ".", ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: string(args)}}}, nil
	})
}

// tokens returns the tokens of text in order.
func tokens(text string) []string {
	var out []string
	for {
		i := strings.IndexByte(text, '[')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(text[i:], ']')
		if j < 0 {
			return out
		}
		if _, _, ok := privacy.ParseToken(text[i : i+j+1]); ok {
			out = append(out, text[i:i+j+1])
		}
		text = text[i+j+1:]
	}
}

func TestGuardEndToEnd(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	guard, err := privacy.NewGuard(&privacy.GuardOptions{
		Disclosure: map[string]privacy.Grant{"bookFlight": privacy.Types(privacy.EmailAddress)},
	})
	if err != nil {
		t.Fatal(err)
	}
	model := echoModel()
	// The result names the card again: it must be tokenized for the model.
	client := toolgate.NewClient(model, []*toolgate.Tool{rec.tool("bookFlight", `{"status":"booked","card":"`+card+`"}`)}, &toolgate.ClientOptions{Protect: guard.Begin, StoreEveryRound: true})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "Book VX205 for " + email + ", pay with " + card + "."})
	if err != nil {
		t.Fatal(err)
	}
	seen := seenByModel(t, model)
	for _, v := range []string{email, card, "4111111111111111"} {
		if strings.Contains(seen, v) {
			t.Errorf("the model saw %q", v)
		}
	}
	args := rec.got()
	if len(args) != 1 {
		t.Fatalf("tool ran %d times", len(args))
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(args[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got["email"] != email || got["note"] != "call "+email {
		t.Errorf("tool received %v, want the original e-mail", got)
	}
	if strings.Contains(args[0], "4111") || !strings.HasPrefix(got["card"], "[CREDIT_CARD_") {
		t.Errorf("tool received %v, want the card as a token", got)
	}
	// Default output mode: the caller sees tokens, not originals.
	if strings.Contains(resp.Text(), card) || !strings.Contains(resp.Text(), "[CREDIT_CARD_") {
		t.Errorf("response text %q", resp.Text())
	}
	// The store keeps the tool's real result; the model only saw tokens.
	conv, _ := client.Store().Load(ctx, "p")
	if tm := conv.Messages[2].(*toolgate.ToolMessage); !strings.Contains(tm.Results[0].Content, card) {
		t.Errorf("stored result %q lost the original", tm.Results[0].Content)
	}
}

func TestGuardPrincipalGrantAndOutput(t *testing.T) {
	ctx := context.Background()
	clerk := &toolgate.Principal{ID: "clerk", Roles: []string{"clerk"}}
	manager := &toolgate.Principal{ID: "manager", Roles: []string{"manager"}}
	byRole := func(p *toolgate.Principal) privacy.Grant {
		if p != nil && len(p.Roles) > 0 && p.Roles[0] == "manager" {
			return privacy.AllTypes()
		}
		return privacy.NoTypes()
	}
	for _, tc := range []struct {
		who      *toolgate.Principal
		toolSees string // the e-mail as the tool receives it
		userSees bool   // the caller sees the original e-mail
	}{
		{clerk, "[EMAIL_ADDRESS_1]", false},
		{manager, email, true},
	} {
		t.Run(tc.who.ID, func(t *testing.T) {
			var rec recorder
			guard, err := privacy.NewGuard(&privacy.GuardOptions{
				Disclosure:     map[string]privacy.Grant{"bookFlight": privacy.AllTypes()},
				PrincipalGrant: byRole,
				Output:         privacy.ModeRestore,
				OutputGrant:    byRole,
			})
			if err != nil {
				t.Fatal(err)
			}
			client := toolgate.NewClient(echoModel(), []*toolgate.Tool{rec.tool("bookFlight", `"ok"`)}, &toolgate.ClientOptions{Protect: guard.Begin})
			resp, err := client.Call(ctx, &toolgate.CallParams{Principal: tc.who, Input: "for " + email + " with " + card})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			json.Unmarshal([]byte(rec.got()[0]), &got)
			if got["email"] != tc.toolSees {
				t.Errorf("tool received %q, want %q", got["email"], tc.toolSees)
			}
			if strings.Contains(resp.Text(), email) != tc.userSees {
				t.Errorf("caller saw %q", resp.Text())
			}
		})
	}
}

func TestGuardStreamRestoresSplitTokens(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	guard, _ := privacy.NewGuard(&privacy.GuardOptions{Output: privacy.ModeRestore, OutputGrant: func(*toolgate.Principal) privacy.Grant { return privacy.AllTypes() }})
	// The model answers with a token that the scripted stream splits at the
	// spaces; the caller must see the original, never a partial token.
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		user := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage).Text
		return scripted.Reply{Text: "I will write to " + tokens(user)[0] + " today."}, nil
	})
	client := toolgate.NewClient(model, []*toolgate.Tool{rec.tool("noop", "")}, &toolgate.ClientOptions{Protect: guard.Begin})
	var text strings.Builder
	for ch, err := range client.Stream(ctx, &toolgate.CallParams{Input: "mail " + email}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ch.Text, "[EMAIL") {
			t.Errorf("a chunk carries a token: %q", ch.Text)
		}
		text.WriteString(ch.Text)
	}
	if got, want := text.String(), "I will write to "+email+" today."; got != want {
		t.Errorf("streamed %q, want %q", got, want)
	}
}

func TestGuardResumeRestoresTokensOfThePausedReply(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	guard, _ := privacy.NewGuard(&privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"bookFlight": privacy.AllTypes()}})
	book := rec.tool("bookFlight", `"booked"`).WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
	client := toolgate.NewClient(echoModel(), []*toolgate.Tool{book}, &toolgate.ClientOptions{Protect: guard.Begin})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "r", Input: "for " + email + " with " + card})
	if err != nil || !resp.Paused() {
		t.Fatalf("%v paused=%v", err, resp.Paused())
	}
	if args := resp.Message().ToolCalls[0].Arguments; strings.Contains(args, email) {
		t.Errorf("paused reply shows the original: %s", args)
	}
	// A new request (another process) rebuilds the vault from the history.
	if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "r"), ConversationID: "r", Decisions: []toolgate.Decision{toolgate.Allow("c1")}}); err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	json.Unmarshal([]byte(rec.got()[0]), &got)
	if got["email"] != email || got["card"] != card {
		t.Errorf("tool received %v, want the originals", got)
	}
}

func TestGuardWithAuthorizationSeesTokens(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	var policyArgs []string
	var mu sync.Mutex
	policy := authz.PolicyFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		if r.Call != nil {
			mu.Lock()
			policyArgs = append(policyArgs, r.Call.Arguments)
			mu.Unlock()
		}
		return authz.Allow("ok"), nil
	})
	guard, _ := privacy.NewGuard(&privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"bookFlight": privacy.AllTypes()}})
	client := toolgate.NewClient(echoModel(), []*toolgate.Tool{rec.tool("bookFlight", `"ok"`)},
		&toolgate.ClientOptions{Protect: guard.Begin, Authorize: authz.NewGuard(policy, nil).Begin})
	if _, err := client.Call(ctx, &toolgate.CallParams{Principal: &toolgate.Principal{ID: "u"}, Input: "for " + email + " with " + card}); err != nil {
		t.Fatal(err)
	}
	if len(policyArgs) != 2 {
		t.Fatalf("policy saw %d execution requests, want 2 (reply check, recheck)", len(policyArgs))
	}
	for _, a := range policyArgs {
		if strings.Contains(a, email) {
			t.Errorf("the policy saw an original: %s", a)
		}
	}
	if got := rec.got(); len(got) != 1 || !strings.Contains(got[0], email) {
		t.Errorf("tool got %v", got)
	}
}

type mapVaults struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (v *mapVaults) LoadVault(_ context.Context, id string) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[id], nil
}

func (v *mapVaults) SaveVault(_ context.Context, id string, b []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string][]byte{}
	}
	v.m[id] = b
	return nil
}

func TestGuardConversationVault(t *testing.T) {
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef")
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newClient := func(model toolgate.Model) *toolgate.Client {
		guard, err := privacy.NewGuard(&privacy.GuardOptions{Vaults: store, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return toolgate.NewClient(model, nil, &toolgate.ClientOptions{Protect: guard.Begin, Store: store})
	}
	// Turn 1 sees the e-mail as a token; turn 2, in a new client, sees the
	// same token for the same value even though the history it is given
	// starts with a different e-mail first.
	m1 := scripted.New(scripted.Reply{Text: "noted"})
	if _, err := newClient(m1).Call(ctx, &toolgate.CallParams{ConversationID: "v", Input: "mine is " + email}); err != nil {
		t.Fatal(err)
	}
	sealed, err := store.LoadVault(ctx, "v")
	if err != nil || len(sealed) == 0 {
		t.Fatalf("no vault saved: %v", err)
	}
	if strings.Contains(string(sealed), email) {
		t.Error("the stored vault holds the e-mail in the clear")
	}
	first := tokens(m1.Prompts()[0].Messages[0].(*toolgate.UserMessage).Text)[0]
	m2 := scripted.New(scripted.Reply{Text: "ok"})
	if _, err := newClient(m2).Call(ctx, &toolgate.CallParams{ConversationID: "v", Input: "other: bob@example.org, mine: " + email}); err != nil {
		t.Fatal(err)
	}
	second := m2.Prompts()[0].Messages[2].(*toolgate.UserMessage).Text
	if !strings.Contains(second, "mine: "+first) {
		t.Errorf("turn 2 shows %q, want the e-mail as %s again", second, first)
	}
	// A wrong key fails the request before the model is called.
	m3 := scripted.New(scripted.Reply{Text: "never"})
	guard, _ := privacy.NewGuard(&privacy.GuardOptions{Vaults: store, Key: []byte("fedcba9876543210fedcba9876543210")})
	_, err = toolgate.NewClient(m3, nil, &toolgate.ClientOptions{Protect: guard.Begin, Store: store}).Call(ctx, &toolgate.CallParams{ConversationID: "v", Input: "hi"})
	if !errors.Is(err, privacy.ErrVaultKey) || len(m3.Prompts()) != 0 {
		t.Errorf("wrong key: %v, model calls %d; want ErrVaultKey and none", err, len(m3.Prompts()))
	}
}

func TestNewGuardErrors(t *testing.T) {
	if _, err := privacy.NewGuard(&privacy.GuardOptions{Vaults: &mapVaults{}}); err == nil {
		t.Error("vaults without a key accepted")
	}
	if _, err := privacy.NewGuard(&privacy.GuardOptions{Vaults: &mapVaults{}, Key: make([]byte, 16)}); err == nil {
		t.Error("a 16-byte key accepted")
	}
	if _, err := privacy.NewGuard(nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestGuardAnalyzerFailureFailsClosed(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("analyzer down")
	failing := recognizerFunc(func(context.Context, string, []privacy.Finding) ([]privacy.Finding, error) { return nil, boom })
	guard, _ := privacy.NewGuard(&privacy.GuardOptions{Scanner: privacy.NewScanner(&privacy.ScannerOptions{Recognizers: append(privacy.Builtins(), failing)})})
	model := scripted.New(scripted.Reply{Text: "never"})
	_, err := toolgate.NewClient(model, nil, &toolgate.ClientOptions{Protect: guard.Begin}).Call(ctx, &toolgate.CallParams{Input: "mail " + email})
	if !errors.Is(err, boom) || len(model.Prompts()) != 0 {
		t.Errorf("got %v with %d model calls; want the analyzer's error and no call", err, len(model.Prompts()))
	}
	if strings.Contains(err.Error(), email) {
		t.Errorf("error %q carries the original", err)
	}
}

type recognizerFunc func(context.Context, string, []privacy.Finding) ([]privacy.Finding, error)

func (f recognizerFunc) Recognize(ctx context.Context, text string, dst []privacy.Finding) ([]privacy.Finding, error) {
	return f(ctx, text, dst)
}

// TestGuardResumeNeverRestoresAWrongValue: with memory outside the loop, a
// paused call may hold a token of a value that only an unstored round
// produced. The conversation's vault remembers it: after the resumption
// the tool receives that value, never another one.
func TestGuardResumeNeverRestoresAWrongValue(t *testing.T) {
	ctx := context.Background()
	const other = "grace.hopper@example.org"
	var rec recorder
	lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "lookup"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) {
			return `{"assistant":"` + other + `"}`, nil
		})
	send := rec.tool("send", `"sent"`).WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		switch last := p.Messages[len(p.Messages)-1].(type) {
		case *toolgate.UserMessage:
			return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "l", Name: "lookup", Arguments: "{}"}}}, nil
		case *toolgate.ToolMessage:
			if last.Results[0].Name == "lookup" {
				tok := tokens(last.Results[0].Content)[0]
				return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "s", Name: "send", Arguments: `{"to":"` + tok + `"}`}}}, nil
			}
		}
		return scripted.Reply{Text: "done"}, nil
	})
	guard, _ := privacy.NewGuard(&privacy.GuardOptions{Disclosure: map[string]privacy.Grant{"send": privacy.AllTypes()}})
	client := toolgate.NewClient(model, []*toolgate.Tool{lookup, send}, &toolgate.ClientOptions{Protect: guard.Begin})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "w", Input: "mail my assistant, I am " + email})
	if err != nil || !resp.Paused() {
		t.Fatalf("%v paused=%v", err, resp.Paused())
	}
	if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "w"), ConversationID: "w", Decisions: []toolgate.Decision{toolgate.Allow("s")}}); err != nil {
		t.Fatal(err)
	}
	got := rec.got()
	if len(got) != 1 || strings.Contains(got[0], email) || got[0] != `{"to":"`+other+`"}` {
		t.Errorf("send received %v; want the value of the token, never another value", got)
	}
}

// TestGuardExternalAnalyzerFailsClosed: an analyzer that times out, answers
// garbage or an oversized body makes the request fail before the model is
// called, and the error names no original value.
func TestGuardExternalAnalyzerFailsClosed(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // the server notices the client leaving only once the body is read
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"not":"a list"`) }},
		{"oversized", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "["+strings.Repeat(`{"entity_type":"PERSON","start":0,"end":1,"score":0.9},`, 4000)+`{"entity_type":"PERSON","start":0,"end":1,"score":0.9}]`)
		}},
		{"server error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			analyzer := privacy.NewAnalyzer(srv.URL+"/analyze", &privacy.AnalyzerOptions{Timeout: 200 * time.Millisecond, Retries: -1, MaxResponseBytes: 64 << 10})
			guard, _ := privacy.NewGuard(&privacy.GuardOptions{Scanner: privacy.NewScanner(&privacy.ScannerOptions{Recognizers: append(privacy.Builtins(), analyzer)})})
			model := scripted.New(scripted.Reply{Text: "never"})
			_, err := toolgate.NewClient(model, nil, &toolgate.ClientOptions{Protect: guard.Begin}).Call(ctx, &toolgate.CallParams{Input: "Ada Lovelace, " + email})
			if err == nil || len(model.Prompts()) != 0 {
				t.Fatalf("got %v with %d model calls; want an error and none", err, len(model.Prompts()))
			}
			var ae *privacy.AnalyzerError
			if !errors.As(err, &ae) {
				t.Errorf("error %v is not an AnalyzerError", err)
			}
			if strings.Contains(err.Error(), email) || strings.Contains(err.Error(), "Lovelace") {
				t.Errorf("error %q carries an original", err)
			}
		})
	}
}
