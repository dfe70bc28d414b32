package server_test

// Browser tests of the pages: headless Chromium (the Debian package
// "chromium") driven through the DevTools protocol, against the server on
// 127.0.0.1. Without a Chromium the tests are skipped, or fail when CI is
// set: CI must run them (.ci/run installs the package).

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

var updateDocs = flag.Bool("update-docs", false, "copy the inbox screenshot of the browser tests to docs/inbox.png")

// hostileNote is a tool argument that would run script if a page inserted
// it as HTML.
const hostileNote = `<script>window.__xss=1</script><img src=x onerror="window.__xss=1">`

// chromiumPath returns the Chromium to drive, skipping the test without
// one unless CI is set.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatal("no chromium, and CI is set: the browser tests must run in CI (apt-get install chromium)")
	}
	t.Skip("no chromium: skipping the browser tests (apt-get install chromium)")
	return ""
}

// artifactsDir is where screenshots go: $TOOLGATE_ARTIFACTS, or a
// temporary directory.
func artifactsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("TOOLGATE_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// webFixture is the embedded demo of "toolgate serve" (the flight agent
// on the scripted model, a SQLite store, a traveller and an approver) plus
// an agent whose calls carry HTML, served on 127.0.0.1.
type webFixture struct {
	url   string
	srv   *server.Server
	tools *flightdemo.Tools
	pairs *flightdemo.Tools // the tools of the agent under a two-person rule
	store toolgate.ConversationStore
	notes chan string // what the hostile agent's tool received
}

// The keys of the web tests' principals.
const (
	webTraveller = "tg_demo_traveller"
	webApprover  = "tg_demo_approver"
	webApprover2 = "tg_demo_approver2"
	webGuest     = "tg_demo_guest"
	webAuditor   = "tg_demo_auditor"
)

func newWebFixture(t *testing.T, wrap func(http.Handler) http.Handler) *webFixture {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tools := &flightdemo.Tools{}
	flights := toolgate.NewClient(flightdemo.Model(), tools.Tools(), &toolgate.ClientOptions{Store: store, SystemPrompt: flightdemo.SystemPrompt})

	// The raw tier: the tool's result is its text, HTML and all.
	notes := make(chan string, 4)
	type noteArgs struct {
		Note string `json:"note"`
	}
	sendNote := toolgate.NewTool(toolgate.ToolDefinition{Name: "sendNote", Description: "Send a note to the team"},
		toolgate.ToolMetadata{RequiresConfirmation: true},
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			var in noteArgs
			if err := json.Unmarshal(req.Arguments, &in); err != nil {
				return "", err
			}
			notes <- in.Note
			return "sent: " + in.Note, nil
		})
	args, _ := json.Marshal(noteArgs{Note: hostileNote})
	hostileModel := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			return scripted.Reply{Text: "Done: " + tm.Results[0].Content}, nil
		}
		return scripted.Reply{Text: "I will send " + hostileNote, ToolCalls: []toolgate.ToolCall{{ID: "call_note", Name: "sendNote", Arguments: string(args)}}}, nil
	})
	hostile := toolgate.NewClient(hostileModel, []*toolgate.Tool{sendNote}, &toolgate.ClientOptions{Store: store})
	pairs := &flightdemo.Tools{}
	twoPerson := toolgate.NewClient(flightdemo.Model(), pairs.Tools(), &toolgate.ClientOptions{Store: store, SystemPrompt: flightdemo.SystemPrompt})

	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{
			"flights": {Client: flights, RequesterRoles: []string{"traveller"},
				Approvals: []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, StickyMax: 30 * time.Minute}}},
			"notes": {Client: hostile, RequesterRoles: []string{"traveller"}, PauseTTL: -1,
				Approvals: []server.ApprovalRule{{Roles: []string{"approver"}}}},
			"pairs": {Client: twoPerson, RequesterRoles: []string{"traveller"},
				Approvals: []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}, Approvers: 2}}},
		},
		APIKeys: []server.APIKey{key(webTraveller, "traveller", "traveller"), key(webApprover, "approver", "approver"),
			key(webApprover2, "approver2", "approver"), key(webGuest, "guest", "guest"), key(webAuditor, "auditor", "auditor")},
		PauseTTL:   time.Hour,
		Audit:      audit.NewMemoryLog(),
		AuditRoles: []string{"auditor"},
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &webFixture{url: ts.URL, srv: srv, tools: tools, pairs: pairs, store: store, notes: notes}
}

// browser is one Chromium process; each user of a test gets a browser
// context of their own (their own cookies).
type browser struct {
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return &browser{ctx: bctx}
}

// user is one person's browser context.
type user struct {
	t   *testing.T
	ctx context.Context
}

// user opens a new browser context, closed when the test ends.
func (b *browser) user(t *testing.T) *user {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first action opens the tab, tied to the context it runs with:
	// this one, not a shorter-lived one of a later step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a browser context: %v", err)
	}
	return &user{t: t, ctx: ctx}
}

// do runs the steps, failing the test on an error.
func (u *user) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		// Say where the browser is, without waiting long for it.
		ctx, cancel := context.WithTimeout(u.ctx, 5*time.Second)
		defer cancel()
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		u.t.Fatalf("%s: %v\nat %s:\n%s", what, err, loc, text)
	}
}

// eval evaluates a JavaScript expression, awaiting a promise.
func eval[T any](u *user, expr string) T {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		u.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// poll waits until the expression is truthy, evaluating it every 50 ms
// (not on animation frames, which a tab in the background may not get).
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(40*time.Second))
}

// waitFor waits until the expression is truthy.
func (u *user) waitFor(what, expr string) {
	u.t.Helper()
	u.do(what, poll(expr))
}

func (u *user) signIn(base, key string) {
	u.t.Helper()
	u.do("sign in",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SetValue(chromedp.ID("key"), key),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.ID("user")),
	)
}

// startPause signs u in as the traveller, starts a conversation with
// agent and sends input; it returns the conversation's id once the chat
// page shows the pause.
func (u *user) startPause(base, agent, input string) string {
	u.t.Helper()
	return u.startPauseAs(base, webTraveller, agent, input)
}

// startPauseAs is startPause for the principal of key.
func (u *user) startPauseAs(base, key, agent, input string) string {
	u.t.Helper()
	u.signIn(base, key)
	u.do("start a conversation",
		chromedp.WaitVisible(chromedp.ID("agent")),
		chromedp.SetValue(chromedp.ID("agent"), agent),
		chromedp.Click(chromedp.CSS("#new-conversation button")),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), input),
		chromedp.Click(chromedp.CSS("#send button")),
		// The pause box is rebuilt whenever the conversation changes:
		// wait for its state, not for one of its nodes.
		poll(`document.getElementById('waiting-for') !== null && !document.getElementById('pause').hidden`),
	)
	// A flag that a reload would clear.
	eval[bool](u, `window.__sameDocument = true`)
	return eval[string](u, `document.body.dataset.conversation`)
}

// fitsWidth checks that the page is no wider than width px and that each
// selector's element is visible inside it.
func (u *user) fitsWidth(width int, selectors ...string) {
	u.t.Helper()
	if w := eval[int](u, `document.documentElement.scrollWidth`); w > width {
		u.t.Errorf("at %d px the page at %s is %d px wide, want no horizontal scrolling", width, eval[string](u, `location.pathname`), w)
	}
	for _, sel := range selectors {
		ok := eval[bool](u, `(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); if (!e) return false;
			const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= `+strconv.Itoa(width)+`; })()`)
		if !ok {
			u.t.Errorf("at %d px, %s is missing, hidden or off the screen", width, sel)
		}
	}
}

// openPause returns the id of the open pause of the conversation u's page
// shows, read from the API as the page's user.
func (u *user) openPause() string {
	u.t.Helper()
	return eval[string](u, `fetch('/v1/conversations/' + encodeURIComponent(document.body.dataset.conversation)).then((r) => r.json()).then((d) => d.pause ? d.pause.id : '')`)
}

// screenshot saves a PNG of the page as name in the artifacts directory
// and returns its path.
func (u *user) screenshot(dir, name string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, 45*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		u.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		u.t.Fatal(err)
	}
	u.t.Logf("screenshot: %s", p)
	return p
}

// everyControlLabelled checks that each form control of the page has a
// label or an aria-label.
func (u *user) everyControlLabelled() {
	u.t.Helper()
	unlabelled := eval[[]string](u, `Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea'))
		.filter((e) => e.labels.length === 0 && !e.getAttribute('aria-label')).map((e) => e.id || e.outerHTML)`)
	if len(unlabelled) > 0 {
		u.t.Errorf("controls without a label: %v", unlabelled)
	}
}

const pageText = `document.querySelector('main').innerText`

// apiPost posts body to url as an API client with key, and returns the
// status and the decoded answer.
func apiPost(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp.StatusCode, out
}

func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	artifacts := artifactsDir(t)

	t.Run("allow", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		traveller.startPause(f.url, "flights", flightdemo.Input)
		if got := eval[string](traveller, `document.getElementById('pause').innerText`); !strings.Contains(got, "bookFlight") || !strings.Contains(got, "VX205") {
			t.Errorf("the chat page's pause shows %q, want the bookFlight call and its arguments", got)
		}
		traveller.everyControlLabelled()

		approver.signIn(f.url, webApprover)
		approver.do("open the inbox",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item input[value=allow]")),
		)
		item := eval[string](approver, `document.querySelector('.pause-item').innerText`)
		for _, want := range []string{"bookFlight", "traveller", "VX205", "left"} {
			if !strings.Contains(item, want) {
				t.Errorf("inbox item %q lacks %q", item, want)
			}
		}
		approver.everyControlLabelled()
		shot := approver.screenshot(artifacts, "inbox.png")
		if *updateDocs {
			data, err := os.ReadFile(shot)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("../docs/inbox.png", data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		approver.do("allow",
			chromedp.Click(chromedp.CSS(".pause-item input[value=allow]")),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)

		traveller.waitFor("the tool result and the answer on the chat page, the pause gone",
			`document.getElementById('messages').innerText.includes('Your seat on VX205 is booked.') && document.getElementById('pause').hidden`)
		msgs := eval[string](traveller, `document.getElementById('messages').innerText`)
		if !strings.Contains(msgs, "Booked VX205") {
			t.Errorf("the chat page shows %q, want the tool result %q", msgs, "Booked VX205")
		}
		if !eval[bool](traveller, `window.__sameDocument === true`) {
			t.Error("the chat page was reloaded; want live updates in the same document")
		}
		traveller.screenshot(artifacts, "chat.png")
		if book := f.tools.Book.Load(); book != 1 {
			t.Errorf("bookFlight ran %d times, want 1", book)
		}

		// The audit trail lists the decision.
		traveller.do("open the audit trail",
			chromedp.Navigate(f.url+"/conversations/"+eval[string](traveller, `document.body.dataset.conversation`)+"/audit"),
			chromedp.WaitVisible(chromedp.CSS("#decisions tbody tr")),
		)
		if got := eval[string](traveller, pageText); !strings.Contains(got, "approver") || !strings.Contains(got, "call_book: allow") {
			t.Errorf("the audit page shows %q, want the approver's allow", got)
		}
	})

	t.Run("deny with a message, by keyboard", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		traveller.startPause(f.url, "flights", flightdemo.Input)
		approver.signIn(f.url, webApprover)
		approver.do("deny",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item input[value=deny]")),
			chromedp.Focus(chromedp.CSS(".pause-item input[value=deny]")),
			chromedp.KeyEvent(" "),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .deny-message input")),
			chromedp.Focus(chromedp.CSS(".pause-item .deny-message input")),
			chromedp.KeyEvent("Not this week\r"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)
		traveller.waitFor("the denial on the chat page",
			`document.getElementById('messages').innerText.includes('Not this week')`)
		if got := f.tools.Book.Load(); got != 0 {
			t.Errorf("bookFlight ran %d times after a denial", got)
		}
	})

	t.Run("edit the arguments", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		approver.signIn(f.url, webApprover)
		editor := chromedp.CSS(".pause-item textarea.json")
		approver.do("open the editor",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item input[value=allow]")),
			chromedp.Click(chromedp.CSS(".pause-item input[value=allow]")),
			chromedp.Click(chromedp.CSS(".pause-item details summary")),
			chromedp.WaitVisible(editor),
			chromedp.SetValue(editor, `{"flight": `),
			chromedp.SendKeys(editor, " "),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .edit .error")),
		)
		if got := eval[string](approver, `document.querySelector('.pause-item .edit .error').innerText`); !strings.Contains(got, "Not valid JSON") {
			t.Errorf("inline error %q, want it to say the JSON is invalid", got)
		}
		approver.do("submit arguments the tool's schema refuses",
			chromedp.SetValue(editor, `{"flight": 5}`),
			chromedp.SendKeys(editor, " "),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .edit .error")),
		)
		// The message next to the editor is the server's refusal, word for
		// word: the same request from an API client gets it.
		msg := eval[string](approver, `document.querySelector('.pause-item .edit .error').innerText`)
		pause := eval[string](approver, `document.querySelector('.pause-item').dataset.pause`)
		code, refusal := apiPost(t, f.url+"/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", webApprover,
			`{"decisions":[{"key":"call_book","verdict":"allow","arguments":{"flight":5}}]}`)
		if code != http.StatusUnprocessableEntity || refusal["problem"] != "invalid_arguments" {
			t.Fatalf("the invalid edit from an API client: %d %v, want 422 invalid_arguments", code, refusal)
		}
		if want, _ := refusal["hint"].(string); !strings.Contains(want, `The field "flight" must be text`) || msg != want {
			t.Errorf("inline error %q, want the server's hint %q naming the field and what it expects", msg, want)
		}
		if eval[string](approver, `document.querySelector('.pause-item textarea.json').getAttribute('aria-invalid')`) != "true" {
			t.Error("the editor is not marked aria-invalid after the server's refusal")
		}
		if got := f.tools.Book.Load(); got != 0 {
			t.Fatalf("bookFlight ran %d times after invalid arguments", got)
		}
		approver.do("submit valid arguments",
			chromedp.SetValue(editor, `{"flight": "VX206"}`),
			chromedp.SendKeys(editor, " "),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)
		traveller.waitFor("the edited call's result on the chat page", `document.getElementById('messages').innerText.includes('Booked VX206')`)
		if got := f.tools.BookArgs(); len(got) != 1 || !strings.Contains(got[0], "VX206") {
			t.Errorf("bookFlight received %v, want the edited flight VX206", got)
		}
		if !eval[bool](traveller, `window.__sameDocument === true`) {
			t.Error("the chat page was reloaded; want live updates in the same document")
		}
	})

	t.Run("unauthorized users", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, guest := b.user(t), b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		guest.signIn(f.url, webGuest)
		guest.do("open the inbox",
			chromedp.Navigate(f.url+"/inbox"),
			poll(`document.getElementById('inbox-status').innerText.includes('Nothing waits')`),
		)
		if n := eval[int](guest, `document.querySelectorAll('.pause-item').length`); n != 0 {
			t.Errorf("the guest's inbox shows %d items, want none", n)
		}
		// The server refuses the inbox's events to a user who decides
		// nothing: the page falls back to a slow poll once the stream fails,
		// which may come after the first read of the inbox.
		guest.waitFor("the inbox to fall back to polling", `document.body.dataset.live === 'polling'`)
		pause := traveller.openPause()
		forge := func(u *user, path, body string) int {
			return eval[int](u, `fetch(`+strconv.Quote(path)+`, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: `+strconv.Quote(body)+`}).then((r) => r.status)`)
		}
		allow := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
		decisions := "/v1/conversations/" + conv + "/pauses/" + pause + "/decisions"
		// The guest may not see the conversation: its pause does not exist
		// for them.
		if got := forge(guest, decisions, allow); got != http.StatusNotFound {
			t.Errorf("the guest's forged decision: status %d, want 404", got)
		}
		if got := forge(guest, "/v1/conversations", `{"agent":"flights"}`); got != http.StatusForbidden {
			t.Errorf("the guest's forged conversation: status %d, want 403", got)
		}
		// The traveller sees the conversation but may not decide their own
		// call.
		if got := forge(traveller, decisions, allow); got != http.StatusForbidden {
			t.Errorf("the traveller's own decision: status %d, want 403", got)
		}
		guest.do("open the decision page",
			chromedp.Navigate(f.url+"/conversations/"+conv+"/pauses/"+pause),
			poll(`document.getElementById('inbox-status').innerText.includes('does not wait for your decision')`),
		)
		if got := f.tools.Book.Load(); got != 0 {
			t.Errorf("bookFlight ran %d times", got)
		}
	})

	t.Run("cross-origin POST", func(t *testing.T) {
		// The attacker's page is on another port of the same host: the
		// same site, so SameSite cookies go with its requests, and only
		// the origin check stands between it and the API.
		type seen struct {
			path   string
			status int
		}
		refused := make(chan seen, 4)
		var evilOrigin string
		var mu sync.Mutex
		f := newWebFixture(t, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				evil := evilOrigin != "" && r.Header.Get("Origin") == evilOrigin
				mu.Unlock()
				if !evil {
					h.ServeHTTP(w, r)
					return
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				refused <- seen{r.URL.Path, rec.Code}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
			})
		})
		traveller := b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<!doctype html><title>prize</title><p id="done">hello</p><script>
fetch(` + strconv.Quote(f.url+"/v1/conversations") + `, {method: "POST", credentials: "include", mode: "no-cors",
  headers: {"Content-Type": "text/plain"}, body: '{"agent":"flights"}'});
</script>`))
		}))
		t.Cleanup(evil.Close)
		mu.Lock()
		evilOrigin = evil.URL
		mu.Unlock()
		traveller.do("visit the attacker's page", chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.ID("done")))
		select {
		case s := <-refused:
			if s.path != "/v1/conversations" || s.status != http.StatusForbidden {
				t.Errorf("the cross-origin POST %s: status %d, want 403", s.path, s.status)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the attacker's request never reached the server")
		}
		// Nothing was created: the traveller still has one conversation.
		traveller.do("list the conversations", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#conversations li")))
		if n := eval[int](traveller, `document.querySelectorAll('#conversations li').length`); n != 1 {
			t.Errorf("the traveller has %d conversations after the attack, want 1 (%s)", n, conv)
		}
	})

	t.Run("hostile arguments render as text", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		traveller.startPause(f.url, "notes", "Send the note.")
		approver.signIn(f.url, webApprover)
		approver.do("open the inbox",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item input[value=allow]")),
		)
		if got := eval[string](approver, `document.querySelector('.pause-item .meta').innerText`); !strings.Contains(got, "does not expire") {
			t.Errorf("the card of a pause that never expires says %q, want \"does not expire\"", got)
		}
		if got := eval[string](traveller, `document.getElementById('pause-expiry').innerText`); !strings.Contains(got, "does not expire") {
			t.Errorf("the chat page of a pause that never expires says %q", got)
		}
		for _, u := range []*user{traveller, approver} {
			if got := eval[string](u, pageText); !strings.Contains(got, `<script>window.__xss=1</script><img src=x onerror=`) {
				t.Errorf("the page shows %q, want the hostile argument as text", got)
			}
		}
		// A narrow phone screen: nothing wider than the viewport.
		approver.do("narrow the viewport", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
		if w := eval[int](approver, `document.documentElement.scrollWidth`); w > 360 {
			t.Errorf("at 360 px the inbox is %d px wide, want no horizontal scrolling", w)
		}
		approver.screenshot(artifacts, "inbox-360px.png")
		approver.do("allow",
			chromedp.Click(chromedp.CSS(".pause-item input[value=allow]")),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)
		if got := <-f.notes; got != hostileNote {
			t.Errorf("the tool received %q, want %q", got, hostileNote)
		}
		traveller.waitFor("the answer", `document.getElementById('messages').innerText.includes('Done: sent: ' + `+strconv.Quote(hostileNote)+`)`)
		for _, u := range []*user{traveller, approver} {
			if n := eval[int](u, `document.querySelectorAll('main img, main script').length`); n != 0 {
				t.Errorf("the page holds %d img or script elements from the data", n)
			}
			if eval[bool](u, `window.__xss !== undefined`) {
				t.Error("the hostile argument ran script")
			}
		}
	})

	t.Run("sticky approval", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		approver.signIn(f.url, webApprover)
		approver.do("grant a sticky approval",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item fieldset.sticky")),
		)
		if got := eval[string](approver, `document.querySelector('.pause-item fieldset.sticky').textContent`); !strings.Contains(got, "at most 30") {
			t.Errorf("the sticky control says %q, want the rule's 30 minutes", got)
		}
		approver.everyControlLabelled()
		minutes := chromedp.CSS(".pause-item fieldset.sticky input[type=number]")
		approver.do("allow, sticky",
			chromedp.Click(chromedp.CSS(".pause-item input[value=allow]")),
			chromedp.Click(chromedp.CSS(".pause-item fieldset.sticky input[type=checkbox]")),
			chromedp.WaitVisible(minutes),
		)
		approver.screenshot(artifacts, "inbox-sticky.png")
		approver.do("for 31 minutes, then 10",
			chromedp.SetValue(minutes, "31"),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item fieldset.sticky .error")),
			chromedp.SetValue(minutes, "10"),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)
		if got := eval[string](approver, `document.querySelector('.pause-item .ok').innerText`); !strings.Contains(got, "without asking") {
			t.Errorf("the approver is told %q, want the grant mentioned", got)
		}
		answer := `document.getElementById('messages').innerText.split('Your seat on VX205 is booked.').length - 1`
		traveller.waitFor("the first answer", answer+` === 1 && !document.querySelector('#send button').disabled`)
		// The next pause of the conversation resumes by itself.
		traveller.do("ask again",
			chromedp.SendKeys(chromedp.ID("input"), flightdemo.Input),
			chromedp.Click(chromedp.CSS("#send button")),
		)
		traveller.waitFor("the second answer without a decision", answer+` === 2`)
		if eval[bool](traveller, `!document.getElementById('pause').hidden`) {
			t.Error("the chat page shows a pause; the sticky grant should have resumed it")
		}
		if got := f.tools.Book.Load(); got != 2 {
			t.Errorf("bookFlight ran %d times, want 2", got)
		}
		approver.do("open the inbox again",
			chromedp.Navigate(f.url+"/inbox"),
			poll(`document.getElementById('inbox-status').innerText.includes('Nothing waits')`),
		)
		traveller.do("open the audit trail",
			chromedp.Navigate(f.url+"/conversations/"+conv+"/audit"),
			poll(`document.querySelectorAll('#decisions tbody tr').length === 2`),
		)
		if got := eval[string](traveller, `document.querySelector('#decisions tbody tr:last-child').innerText`); !strings.Contains(got, "sticky grant by approver") {
			t.Errorf("the second decision reads %q, want the sticky grant by approver", got)
		}
	})

	t.Run("sticky grant revoked from the inbox", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		// A grant for the edited arguments: the model's next identical
		// call still pauses, and its card lists the grant.
		api := func(method, path, body string) (int, map[string]any) {
			req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+webApprover)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}
		code, out := api("GET", "/v1/inbox", "")
		if code != 200 || len(out["pauses"].([]any)) != 1 {
			t.Fatalf("the inbox: %d %v", code, out)
		}
		pause := out["pauses"].([]any)[0].(map[string]any)["pause_id"].(string)
		if code, out := api("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions",
			`{"decisions":[{"key":"call_book","verdict":"allow","arguments":{"flight":"VX206"}}],"sticky":{"minutes":10,"same_arguments":true}}`); code != 200 {
			t.Fatalf("the sticky decision: %d %v", code, out)
		}
		traveller.waitFor("the first answer", `!document.querySelector('#send button').disabled`)
		traveller.do("ask again",
			chromedp.SendKeys(chromedp.ID("input"), flightdemo.Input),
			chromedp.Click(chromedp.CSS("#send button")),
		)
		traveller.waitFor("the second pause", `!document.getElementById('pause').hidden`)
		approver.signIn(f.url, webApprover)
		approver.do("revoke the grant",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .grant button.revoke")),
			chromedp.Click(chromedp.CSS(".pause-item .grant button.revoke")),
			poll(`document.querySelectorAll('.pause-item .grant').length === 0`),
		)
		if code, out := api("GET", "/v1/conversations/"+conv+"/grants", ""); code != 200 || len(out["grants"].([]any)) != 0 {
			t.Errorf("grants after the revocation: %d %v, want none", code, out)
		}
	})

	t.Run("inbox updates live", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver := b.user(t), b.user(t)
		approver.signIn(f.url, webApprover)
		approver.do("open the empty inbox",
			chromedp.Navigate(f.url+"/inbox"),
			poll(`document.body.dataset.live === 'events' && document.getElementById('inbox-status').innerText.includes('Nothing waits')`),
		)
		eval[bool](approver, `window.__sameDocument = true`)
		traveller.startPause(f.url, "flights", flightdemo.Input)
		// The state the event leads to, all of it at once: the card, its
		// announcement and the page still following the stream (it polls
		// while the stream reconnects, which a busy machine may cause).
		approver.waitFor("the new pause in the inbox, announced, with the stream open",
			`document.querySelectorAll('.pause-item').length === 1 && document.body.dataset.live === 'events' && `+
				`document.getElementById('live').innerText.includes('waits for your decision')`)
		if !eval[bool](approver, `window.__sameDocument === true`) {
			t.Error("the inbox was reloaded; want it updated in the same document")
		}
		// Decided elsewhere: the item leaves the inbox.
		pause := eval[string](approver, `document.querySelector('.pause-item').dataset.pause`)
		conv := eval[string](traveller, `document.body.dataset.conversation`)
		if code, out := apiPost(t, f.url+"/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", webApprover2,
			`{"decisions":[{"key":"call_book","verdict":"deny"}]}`); code != http.StatusOK {
			t.Fatalf("the other approver's denial: %d %v", code, out)
		}
		approver.waitFor("the decided pause leaves the inbox",
			`document.querySelectorAll('.pause-item').length === 0 && document.getElementById('inbox-status').innerText.includes('Nothing waits')`)
	})

	t.Run("two-person rule", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, first, second := b.user(t), b.user(t), b.user(t)
		traveller.startPause(f.url, "pairs", flightdemo.Input)
		first.signIn(f.url, webApprover)
		first.do("approve first",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item input[value=allow]")),
		)
		if n := eval[int](first, `document.querySelectorAll('.pause-item fieldset.sticky').length`); n != 0 {
			t.Errorf("%d sticky controls under a two-person rule, want none", n)
		}
		first.do("allow",
			chromedp.Click(chromedp.CSS(".pause-item input[value=allow]")),
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)
		if got := eval[string](first, `document.querySelector('.pause-item .ok').innerText`); !strings.Contains(got, "awaiting second approval") {
			t.Errorf("the first approver is told %q, want awaiting second approval", got)
		}
		if got := f.pairs.Book.Load(); got != 0 {
			t.Fatalf("bookFlight ran %d times after one approval", got)
		}
		first.do("open the inbox again",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .second-approval")),
		)
		if got := eval[string](first, `document.querySelector('.pause-item .second-approval').innerText`); !strings.Contains(got, "You approved this") {
			t.Errorf("the first approver's inbox says %q, want their own approval", got)
		}

		second.signIn(f.url, webApprover2)
		second.do("open the inbox",
			chromedp.Navigate(f.url+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .second-approval")),
		)
		if got := eval[string](second, `document.querySelector('.pause-item .second-approval').innerText`); !strings.Contains(got, "Approved by approver") || !strings.Contains(got, "awaiting second approval") {
			t.Errorf("the second approver's inbox says %q, want the first approval", got)
		}
		if !eval[bool](second, `document.querySelector('.pause-item input[value=allow]').checked`) {
			t.Error("the form does not start from the first approver's decisions")
		}
		second.screenshot(artifacts, "inbox-second-approval.png")
		second.do("approve second",
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item .ok")),
		)
		if got := eval[string](second, `document.querySelector('.pause-item .ok').innerText`); !strings.Contains(got, "Decided: allowed") {
			t.Errorf("the second approver is told %q, want the decision", got)
		}
		traveller.waitFor("the answer on the chat page", `document.getElementById('messages').innerText.includes('Your seat on VX205 is booked.')`)
		if got := f.pairs.Book.Load(); got != 1 {
			t.Errorf("bookFlight ran %d times, want 1", got)
		}
		traveller.do("open the audit trail",
			chromedp.Navigate(f.url+"/conversations/"+eval[string](traveller, `document.body.dataset.conversation`)+"/audit"),
			chromedp.WaitVisible(chromedp.CSS("#decisions tbody tr")),
		)
		if got := eval[string](traveller, `document.querySelector('#decisions tbody tr').innerText`); !strings.Contains(got, "approver and approver2") {
			t.Errorf("the decision reads %q, want both approvers", got)
		}
	})

	t.Run("reveal only for revealers", func(t *testing.T) {
		fc, err := serve.LoadConfig(privacyConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg, closeAll, err := serve.Build(context.Background(), fc, &serve.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeAll() })
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		traveller, approver, revealer := b.user(t), b.user(t), b.user(t)
		traveller.startPauseAs(ts.URL, travellerKey, "flights", flightdemo.PrivateInput)
		approver.signIn(ts.URL, approverKey)
		approver.do("open the inbox",
			chromedp.Navigate(ts.URL+"/inbox"),
			chromedp.WaitVisible(chromedp.CSS(".pause-item mark.token")),
		)
		if eval[bool](approver, `!document.getElementById('reveal-bar').hidden`) {
			t.Error("an approver without a reveal role sees the reveal control")
		}
		if got := holdsPrivate(eval[string](approver, pageText)); got != nil {
			t.Errorf("the approver's inbox shows %v", got)
		}
		revealer.signIn(ts.URL, revealerKey)
		revealer.do("find the reveal control",
			chromedp.Navigate(ts.URL+"/inbox"),
			chromedp.WaitVisible(chromedp.ID("reveal-link")),
		)
		href := eval[string](revealer, `document.getElementById('reveal-link').getAttribute('href')`)
		if href != "/inbox?reveal=true" {
			t.Fatalf("the reveal control leads to %q", href)
		}
		revealer.do("reveal",
			chromedp.Navigate(ts.URL+href),
			chromedp.WaitVisible(chromedp.CSS(".pause-item")),
		)
		if got := eval[string](revealer, pageText); !strings.Contains(got, "ada.lovelace@example.com") {
			t.Errorf("the revealed inbox shows %q, want the originals", got)
		}
	})

	t.Run("chat page resyncs", func(t *testing.T) {
		// The conversation's events come from a stream the test controls:
		// the real ones never reach the page, and a resync is the only
		// news it gets of the decision.
		resync := make(chan struct{})
		f := newWebFixture(t, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasPrefix(r.URL.Path, "/v1/conversations/") || !strings.HasSuffix(r.URL.Path, "/events") {
					h.ServeHTTP(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				rc := http.NewResponseController(w)
				_ = rc.Flush()
				select {
				case <-resync:
					_, _ = w.Write([]byte("id: test-1\nevent: resync\ndata: {\"conversation_id\":\"\",\"kind\":\"resync\"}\n\n"))
					_ = rc.Flush()
				case <-r.Context().Done():
					return
				}
				<-r.Context().Done()
			})
		})
		traveller := b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		traveller.waitFor("the stream open", `document.body.dataset.live === 'events'`)
		pause := traveller.openPause()
		if code, out := apiPost(t, f.url+"/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", webApprover,
			`{"decisions":[{"key":"call_book","verdict":"allow"}]}`); code != http.StatusOK {
			t.Fatalf("the approver's decision: %d %v", code, out)
		}
		if eval[bool](traveller, `document.getElementById('messages').innerText.includes('booked')`) {
			t.Fatal("the page learned of the decision without an event")
		}
		resync <- struct{}{}
		traveller.waitFor("the answer after the resync", `document.getElementById('messages').innerText.includes('Your seat on VX205 is booked.')`)
		if !eval[bool](traveller, `window.__sameDocument === true`) {
			t.Error("the chat page was reloaded; want it updated in the same document")
		}
	})
	t.Run("context, roles and ticking times", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver, guest := b.user(t), b.user(t), b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		// The requester: no inbox, no decision form, but who decides and
		// since when.
		if eval[bool](traveller, `document.getElementById('nav-inbox') !== null || document.getElementById('decide-link') !== null`) {
			t.Error("the traveller sees the Inbox link or the decision form")
		}
		waiting := eval[string](traveller, `document.getElementById('waiting-for').innerText`)
		for _, want := range []string{"Waiting since", "ago", "holders of role approver"} {
			if !strings.Contains(waiting, want) {
				t.Errorf("the chat page says %q, want %q in it", waiting, want)
			}
		}
		if got := eval[string](traveller, `document.getElementById('pause-expiry').innerText`); !strings.Contains(got, "left") {
			t.Errorf("the chat page's expiry reads %q, want the time left", got)
		}

		// The approver lands on the inbox, and the card says what they
		// decide on.
		approver.signIn(f.url, webApprover)
		approver.waitFor("the inbox as the start page", `location.pathname === '/inbox' && document.querySelector('.pause-item .request') !== null`)
		card := eval[string](approver, `document.querySelector('.pause-item').innerText`)
		for _, want := range []string{flightdemo.Input, "I will check the flight and book it.", "marked as needing a person's confirmation",
			"rule 1: bookFlight decided by holders of role approver", "2 calls", conv} {
			if !strings.Contains(card, want) {
				t.Errorf("the inbox card lacks %q:\n%s", want, card)
			}
		}
		if n := eval[int](approver, `document.querySelectorAll('.pause-item .description').length`); n != 2 {
			t.Errorf("%d tool descriptions on the card, want one per call", n)
		}

		// Ages tick from the page's clock, without reading the inbox again.
		reads := `performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/v1/inbox').length`
		before := eval[int](approver, reads)
		age := eval[string](approver, `document.querySelector('.pause-item time[data-age]').textContent`)
		approver.waitFor("the age to tick", `document.querySelector('.pause-item time[data-age]').textContent !== `+strconv.Quote(age))
		if after := eval[int](approver, reads); after != before || eval[string](approver, `document.body.dataset.live`) != "events" {
			t.Errorf("the inbox was read %d times while the age ticked (live %q), want no reads", after-before, eval[string](approver, `document.body.dataset.live`))
		}

		// A stale hint goes once its cause does.
		approver.do("submit without a verdict, then choose",
			chromedp.Click(chromedp.CSS(".pause-item button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(".pause-item fieldset.call .error[role=alert]")),
			chromedp.Click(chromedp.CSS(".pause-item input[value=allow]")),
			poll(`document.querySelector('.pause-item fieldset.call .error[role=alert]').hidden`),
		)

		// A phone: nothing wider than 390 px, the controls on screen.
		approver.do("narrow the viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		approver.fitsWidth(390, ".pause-item button[type=submit]", ".pause-item input[value=deny]")
		approver.screenshot(artifacts, "inbox-390px.png")
		approver.everyControlLabelled()

		// The card's link opens the conversation to the approver, read-only,
		// with the decision form a click away; a guest gets Not found.
		approver.do("open the conversation",
			chromedp.Click(chromedp.CSS(".pause-item a.conv-link")),
			chromedp.WaitVisible(chromedp.ID("decide-link")),
		)
		if eval[bool](approver, `document.getElementById('send') !== null || document.getElementById('read-only') === null`) {
			t.Error("the approver's chat page offers the message box")
		}
		if got := eval[string](approver, `document.getElementById('messages').innerText`); !strings.Contains(got, "Requester traveller") || !strings.Contains(got, flightdemo.Input) {
			t.Errorf("the approver's chat page shows %q", got)
		}
		approver.fitsWidth(390, "#decide-link")
		traveller.do("narrow the viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		traveller.fitsWidth(390, "#send button", "#input")
		guest.signIn(f.url, webGuest)
		guest.do("open the conversation", chromedp.Navigate(f.url+"/conversations/"+conv), chromedp.WaitVisible(chromedp.ID("page-error")))
		if eval[bool](guest, `document.getElementById('nav-inbox') !== null`) {
			t.Error("the guest sees the Inbox link")
		}
	})

	t.Run("history and audit timeline", func(t *testing.T) {
		f := newWebFixture(t, nil)
		traveller, approver, auditor := b.user(t), b.user(t), b.user(t)
		conv := traveller.startPause(f.url, "flights", flightdemo.Input)
		pause := traveller.openPause()
		if code, out := apiPost(t, f.url+"/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", webApprover,
			`{"decisions":[{"key":"call_book","verdict":"allow"}]}`); code != http.StatusOK {
			t.Fatalf("the decision: %d %v", code, out)
		}
		approver.signIn(f.url, webApprover)
		approver.do("open the history",
			chromedp.Navigate(f.url+"/history"),
			chromedp.WaitVisible(chromedp.CSS(".history-item")),
		)
		if got := eval[string](approver, `document.getElementById('history').innerText`); !strings.Contains(got, "bookFlight for traveller") || !strings.Contains(got, "by approver") || !strings.Contains(got, "call_book: allowed") {
			t.Errorf("the history shows %q", got)
		}
		approver.everyControlLabelled()
		approver.do("filter by outcome",
			chromedp.SetValue(chromedp.ID("f-outcome"), "expired"),
			chromedp.Click(chromedp.CSS("#history-filters button")),
			poll(`document.getElementById('history-status').innerText.includes('No resolved pause matches') && location.search === '?outcome=expired'`),
		)
		approver.do("narrow the viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		approver.fitsWidth(390, "#history-filters button", "#f-decider")

		auditor.signIn(f.url, webAuditor)
		auditor.do("open the audit trail",
			chromedp.Navigate(f.url+"/conversations/"+conv+"/audit"),
			chromedp.WaitVisible(chromedp.ID("verification")),
			poll(`document.querySelectorAll('#audit .event').length >= 4`),
		)
		if got := eval[string](auditor, `document.getElementById('verification').innerText`); !strings.Contains(got, "Chain verified") {
			t.Errorf("the verification reads %q", got)
		}
		timeline := eval[string](auditor, `document.getElementById('audit').innerText`)
		for _, want := range []string{"Pause " + pause, "awaited a decision", "decided", "by approver", "ran"} {
			if !strings.Contains(timeline, want) {
				t.Errorf("the timeline lacks %q:\n%s", want, timeline)
			}
		}
		lines := eval[int](auditor, `fetch(document.getElementById('export-link').href).then((r) => r.status === 200 ? r.text() : '').then((t) => t.trim().split('\n').filter((l) => JSON.parse(l).conversation_id === document.body.dataset.conversation).length)`)
		if lines != eval[int](auditor, `document.querySelectorAll('#audit .event').length`) {
			t.Errorf("the export holds %d records of the conversation, the timeline %d", lines, eval[int](auditor, `document.querySelectorAll('#audit .event').length`))
		}
		auditor.do("narrow the viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		auditor.fitsWidth(390, "#verification", "#export-link")
		auditor.screenshot(artifacts, "audit-390px.png")
		traveller.do("open the audit trail",
			chromedp.Navigate(f.url+"/conversations/"+conv+"/audit"),
			chromedp.WaitVisible(chromedp.ID("verification")),
		)
		if eval[bool](traveller, `document.getElementById('export-link') !== null`) {
			t.Error("the traveller, no auditor, is offered the export")
		}
		if !eval[bool](traveller, `document.querySelector('link[rel=icon]').getAttribute('href') === '/favicon.ico'`) {
			t.Error("the pages name no icon")
		}
	})
}
