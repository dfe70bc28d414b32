package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/openai"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
)

// demoUsers are the principals of --user, matched by examples/flights.cedar.
var demoUsers = map[string]*toolgate.Principal{
	"alice": {ID: "alice", Roles: []string{"traveller"}},
	"bob":   {ID: "bob", Roles: []string{"guest"}},
}

const demoUsage = `Usage: toolgate demo [flags]

The flight-booking story: a model asks for flightStatus (runs at once) and
bookFlight (needs your decision) in one reply. The whole reply pauses; you
allow or deny each call; the turn resumes. By default the model is scripted
(offline, no API key); --provider runs the same story on a real model, with
the key from OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY (base URL
overridable with OPENAI_BASE_URL, ANTHROPIC_BASE_URL or GEMINI_BASE_URL).

Flags:
`

type demoFlags struct {
	yes          bool
	no           string
	noSet        bool
	db           string
	resume       bool
	conversation string
	user         string
	policy       string
	privacy      bool
	provider     string
	model        string
}

// demoDefaultModels are the models --provider uses without --model.
var demoDefaultModels = map[string]string{
	"openai":    "gpt-4.1-mini",
	"anthropic": "claude-sonnet-4-5",
	"gemini":    "gemini-2.5-flash",
}

func parseDemoFlags(args []string, e *env) (*demoFlags, int) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, demoUsage)
		fs.PrintDefaults()
	}
	var f demoFlags
	fs.BoolVar(&f.yes, "yes", false, "allow every call that awaits a decision")
	fs.Func("no", "deny every call that awaits a decision, with this `message` for the model", func(s string) error {
		f.no, f.noSet = s, true
		return nil
	})
	fs.StringVar(&f.db, "db", "", "keep the conversation in this SQLite `file`, so a pause survives the process")
	fs.BoolVar(&f.resume, "resume", false, "resume the paused conversation kept in --db")
	fs.StringVar(&f.conversation, "conversation", "demo", "conversation `id`")
	fs.StringVar(&f.user, "user", "", "run as this `user` under the Cedar policies: alice (may book) or bob (cannot see bookFlight)")
	fs.StringVar(&f.policy, "policy", "", "Cedar policy `file` for --user (default: the embedded examples/flights.cedar)")
	fs.StringVar(&f.provider, "provider", "", "run on a real model: openai, anthropic or gemini (default: the scripted model)")
	fs.StringVar(&f.model, "model", "", "the model `name` for --provider (default: gpt-4.1-mini, claude-sonnet-4-5 or gemini-2.5-flash)")
	fs.BoolVar(&f.privacy, "privacy", false, "protect personal data: the model sees tokens, bookFlight gets only the real e-mail")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(e.stderr, "toolgate demo: unexpected argument %q\n", fs.Arg(0))
		return nil, 2
	case f.yes && f.noSet:
		fmt.Fprintln(e.stderr, "toolgate demo: --yes and --no exclude each other")
		return nil, 2
	case f.resume && f.db == "":
		fmt.Fprintln(e.stderr, "toolgate demo: --resume needs --db FILE, where the paused conversation is kept")
		return nil, 2
	case f.conversation == "":
		fmt.Fprintln(e.stderr, "toolgate demo: --conversation must not be empty")
		return nil, 2
	case f.user != "" && demoUsers[f.user] == nil:
		fmt.Fprintf(e.stderr, "toolgate demo: unknown --user %q: choose alice or bob\n", f.user)
		return nil, 2
	case f.policy != "" && f.user == "":
		fmt.Fprintln(e.stderr, "toolgate demo: --policy needs --user")
		return nil, 2
	case f.provider != "" && demoDefaultModels[f.provider] == "":
		fmt.Fprintf(e.stderr, "toolgate demo: unknown --provider %q: choose openai, anthropic or gemini\n", f.provider)
		return nil, 2
	case f.model != "" && f.provider == "":
		fmt.Fprintln(e.stderr, "toolgate demo: --model needs --provider")
		return nil, 2
	}
	return &f, -1
}

func runDemo(ctx context.Context, args []string, e *env) int {
	f, code := parseDemoFlags(args, e)
	if f == nil {
		return code
	}
	var store toolgate.ConversationStore = memory.New()
	var vaults privacy.VaultStore // with --db: the privacy vaults survive the process too
	if f.db != "" {
		s, err := sqlite.Open(ctx, f.db, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
			return 1
		}
		defer s.Close()
		store, vaults = s, s
	}
	d := &demo{flags: f, env: e, tools: &flightdemo.Tools{}, in: bufio.NewReader(e.stdin)}
	model, err := demoProviderModel(f)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
		return 1
	}
	// Record what the model is sent (after the guards), to show it.
	model = recording{Model: model, d: d}
	opts := &toolgate.ClientOptions{
		Store:        store,
		SystemPrompt: flightdemo.SystemPrompt,
	}
	if f.user != "" {
		d.principal = demoUsers[f.user]
		policy, err := demoPolicy(f.policy)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
			return 1
		}
		opts.Authorize = authz.NewGuard(policy, nil).Begin
	}
	if f.privacy {
		guard, err := privacy.NewGuard(&privacy.GuardOptions{
			Disclosure: map[string]privacy.Grant{"bookFlight": privacy.Types(privacy.EmailAddress)},
			Vaults:     vaults,
			Key:        demoVaultKey[:],
		})
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
			return 1
		}
		opts.Protect = guard.Begin
	}
	d.client = toolgate.NewClient(model, d.tools.Tools(), opts)
	if err := d.run(ctx); err != nil {
		if errors.Is(err, errInterrupted) {
			fmt.Fprintln(e.stdout)
			if f.db != "" {
				fmt.Fprintf(e.stderr, "toolgate demo: interrupted; nothing ran, and the pause is kept in %s: %s --yes\n", f.db, d.resumeCommand())
			} else {
				fmt.Fprintln(e.stderr, "toolgate demo: interrupted; nothing ran")
			}
			return 130
		}
		fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
		return 1
	}
	return 0
}

// demoVaultKey seals the privacy vaults the demo keeps in --db, so that
// --resume finds the originals behind the tokens. It is a published
// constant: the demo's file protects nothing.
var demoVaultKey = sha256.Sum256([]byte("toolgate demo: not a secret"))

type demo struct {
	flags     *demoFlags
	env       *env
	tools     *flightdemo.Tools
	client    *toolgate.Client
	principal *toolgate.Principal
	in        *bufio.Reader

	mu      sync.Mutex
	prompts []*toolgate.Prompt // guarded by mu: what the model was sent
}

// record is model middleware that keeps every prompt the model is sent.
// recording is a model that records the prompts it is sent: what the model
// sees, after every guard.
type recording struct {
	toolgate.Model
	d *demo
}

func (m recording) Generate(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	m.d.record(p)
	return m.Model.Generate(ctx, p)
}

func (m recording) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	m.d.record(p)
	return m.Model.Stream(ctx, p)
}

func (d *demo) record(p *toolgate.Prompt) {
	d.mu.Lock()
	d.prompts = append(d.prompts, p)
	d.mu.Unlock()
}

func (d *demo) sent() []*toolgate.Prompt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.prompts)
}

// demoProviderModel returns the model of the story: scripted, or a real
// provider's with its key from the environment.
func demoProviderModel(f *demoFlags) (toolgate.Model, error) {
	name := f.model
	if name == "" {
		name = demoDefaultModels[f.provider]
	}
	switch f.provider {
	case "":
		return flightdemo.Model(), nil
	case "openai":
		return openai.FromEnv(name)
	case "anthropic":
		return anthropic.FromEnv(name)
	case "gemini":
		return gemini.FromEnv(name)
	}
	return nil, fmt.Errorf("unknown provider %q", f.provider)
}

// demoPolicy loads the Cedar policies of --user: the file, or the embedded
// example.
func demoPolicy(path string) (*cedar.Policy, error) {
	if path != "" {
		return cedar.Load(path)
	}
	return cedar.New(nil, cedar.Source{Name: "examples/flights.cedar", Text: []byte(flightdemo.Policies)})
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.env.stdout, format, args...) }

func (d *demo) run(ctx context.Context) error {
	if d.flags.provider == "" {
		d.printf("toolgate demo: a flight-booking agent on a scripted model (no network, no API key)\n\n")
	} else {
		d.printf("toolgate demo: a flight-booking agent on %s\n\n", d.flags.provider)
	}
	id := d.flags.conversation
	if d.principal != nil {
		d.printf("Running as %s (roles %v) under the Cedar policies.\n", d.principal.ID, d.principal.Roles)
	}
	if d.flags.resume {
		conv, err := d.client.Store().Load(ctx, id)
		if err != nil {
			return err
		}
		if conv.Pause == nil || conv.Pause.Claimed {
			return fmt.Errorf("conversation %q in %s has no open pause to resume; run without --resume to start a turn", id, d.flags.db)
		}
		var reply *toolgate.AssistantMessage
		if i := conv.Pause.Index; i >= 0 && i < len(conv.Messages) {
			reply, _ = conv.Messages[i].(*toolgate.AssistantMessage)
		}
		if reply == nil {
			return fmt.Errorf("conversation %q in %s: the paused message is not a reply", id, d.flags.db)
		}
		d.printf("Resuming conversation %q from %s.\n", id, d.flags.db)
		return d.decide(ctx, conv.Pause.ID, reply, conv.Pause.Awaiting)
	}
	input := flightdemo.Input
	if d.flags.privacy {
		input = flightdemo.PrivateInput
	}
	d.printf("user: %s\n", input)
	resp, err := d.client.Call(ctx, &toolgate.CallParams{ConversationID: id, Principal: d.principal, Input: input})
	if errors.Is(err, toolgate.ErrPauseOpen) {
		return fmt.Errorf("conversation %q already waits for a decision: run with --db %s --resume", id, d.flags.db)
	}
	if err != nil {
		return err
	}
	d.showModelView()
	if !resp.Paused() {
		d.printf("assistant: %s\n", resp.Text())
		d.printf("\nTool runs in this process: flightStatus %d, bookFlight %d\n", d.tools.Status.Load(), d.tools.Book.Load())
		return nil
	}
	return d.decide(ctx, resp.PauseID, resp.Message(), resp.Awaiting)
}

// showModelView prints what the model was shown: its tools and, with
// --privacy, the user's message as it saw it.
func (d *demo) showModelView() {
	prompts := d.sent()
	if len(prompts) == 0 {
		return
	}
	first := prompts[0]
	if d.principal != nil {
		var names []string
		for _, t := range first.Tools {
			names = append(names, t.Name())
		}
		d.printf("The model was offered: %s\n", strings.Join(names, ", "))
	}
	if d.flags.privacy {
		if u, ok := first.Messages[len(first.Messages)-1].(*toolgate.UserMessage); ok {
			d.printf("The model saw:         %s\n", u.Text)
		}
	}
}

// decide shows the paused reply, collects decisions and resumes.
func (d *demo) decide(ctx context.Context, pauseID string, reply *toolgate.AssistantMessage, awaiting []string) error {
	if reply.Text != "" {
		d.printf("assistant: %s\n", reply.Text)
	}
	keys := reply.CallKeys()
	d.printf("\nThe reply paused: none of its %d tool calls has run.\n", len(keys))
	for i, c := range reply.ToolCalls {
		note := "runs without confirmation"
		if slices.Contains(awaiting, keys[i]) {
			note = "needs your decision"
		}
		d.printf("  [%s] %s %s  (%s)\n", keys[i], c.Name, c.Arguments, note)
	}
	d.printf("\n")

	decisions, ok, err := d.collect(ctx, reply, keys, awaiting)
	if err != nil {
		return err
	}
	if !ok {
		if d.flags.db == "" {
			d.printf("Stopped at the pause. Nothing ran, and without --db the pause is not kept.\n")
			d.printf("Try: %[1]s demo --db demo.db, then %[1]s demo --db demo.db --resume --yes\n", d.program())
			return nil
		}
		d.printf("Stopped at the pause. Nothing ran; the pause is kept in %s.\n", d.flags.db)
		d.printf("Resume with:  %s --yes\n", d.resumeCommand())
		d.printf("         or:  %s --no 'MESSAGE'\n", d.resumeCommand())
		return nil
	}
	resp, err := d.client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: pauseID, ConversationID: d.flags.conversation, Principal: d.principal, Decisions: decisions})
	if err != nil {
		return err
	}
	conv, err := d.client.Store().Load(ctx, d.flags.conversation)
	if err != nil {
		return err
	}
	d.printf("Tool results:\n")
	for _, r := range lastResults(conv.Messages) {
		d.printf("  [%s] %s %s: %s\n", r.CallID, r.Name, r.Status, r.Content)
	}
	if resp.Paused() {
		d.printf("\nThe turn paused again.\n")
		return d.decide(ctx, resp.PauseID, resp.Message(), resp.Awaiting)
	}
	d.printf("assistant: %s\n", resp.Text())
	if d.flags.privacy {
		for _, a := range d.tools.BookArgs() {
			d.printf("\nbookFlight received:   %s\n", a)
		}
		prompts := d.sent()
		if tm, ok := prompts[len(prompts)-1].Messages[len(prompts[len(prompts)-1].Messages)-1].(*toolgate.ToolMessage); ok {
			for _, r := range tm.Results {
				d.printf("The model got back:    %s %s\n", r.Name, r.Content)
			}
		}
	}
	d.printf("\nTool runs in this process: flightStatus %d, bookFlight %d\n", d.tools.Status.Load(), d.tools.Book.Load())
	return nil
}

// program is how the person runs this command.
func (d *demo) program() string {
	if d.env.program == "" {
		return "toolgate"
	}
	return d.env.program
}

// resumeCommand is the command line that resumes the pause kept in --db:
// the same story (conversation, user, policy, privacy, model) as this run.
func (d *demo) resumeCommand() string {
	f := d.flags
	words := []string{d.program(), "demo", "--db", shellQuote(f.db)}
	if f.conversation != "demo" {
		words = append(words, "--conversation", shellQuote(f.conversation))
	}
	if f.user != "" {
		words = append(words, "--user", shellQuote(f.user))
	}
	if f.policy != "" {
		words = append(words, "--policy", shellQuote(f.policy))
	}
	if f.privacy {
		words = append(words, "--privacy")
	}
	if f.provider != "" {
		words = append(words, "--provider", shellQuote(f.provider))
	}
	if f.model != "" {
		words = append(words, "--model", shellQuote(f.model))
	}
	return strings.Join(append(words, "--resume"), " ")
}

// collect returns one decision per call: calls that await a decision are
// decided by the flags or the person; the others are allowed. ok is false
// when nobody can decide now (no flag, no terminal, or end of input).
func (d *demo) collect(ctx context.Context, reply *toolgate.AssistantMessage, keys, awaiting []string) (ds []toolgate.Decision, ok bool, err error) {
	for i, c := range reply.ToolCalls {
		key := keys[i]
		switch {
		case !slices.Contains(awaiting, key):
			ds = append(ds, toolgate.Allow(key))
		case d.flags.yes:
			ds = append(ds, toolgate.Allow(key))
		case d.flags.noSet:
			ds = append(ds, toolgate.Deny(key, d.flags.no))
		case !d.env.interactive:
			return nil, false, nil
		default:
			dec, ok, err := d.ask(ctx, key, c)
			if err != nil || !ok {
				return nil, ok, err
			}
			ds = append(ds, dec)
		}
	}
	return ds, true, nil
}

// ask asks the person about one call until the answer is understood.
func (d *demo) ask(ctx context.Context, key string, c toolgate.ToolCall) (toolgate.Decision, bool, error) {
	for {
		d.printf("Allow %s %s [%s]? (y/n) ", c.Name, c.Arguments, key)
		line, err := d.readLine(ctx)
		if err != nil {
			return toolgate.Decision{}, false, err
		}
		if line == nil {
			d.printf("\n")
			return toolgate.Decision{}, false, nil
		}
		switch strings.ToLower(*line) {
		case "y", "yes", "allow":
			return toolgate.Allow(key), true, nil
		case "n", "no", "deny":
			d.printf("Message for the model (Enter for the default): ")
			msg, err := d.readLine(ctx)
			if err != nil {
				return toolgate.Decision{}, false, err
			}
			if msg == nil {
				msg = new(string)
			}
			return toolgate.Deny(key, *msg), true, nil
		default:
			d.printf("Please answer y (allow) or n (deny).\n")
		}
	}
}

// errInterrupted ends the demo's prompt on Ctrl-C.
var errInterrupted = errors.New("interrupted at the prompt")

// readLine reads one trimmed line; nil at the end of input. It returns
// ctx's error as soon as ctx is done (Ctrl-C), without waiting for the
// line.
func (d *demo) readLine(ctx context.Context) (*string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		// Left blocked on the terminal when ctx ends first; the process
		// is about to exit.
		line, err := d.in.ReadString('\n')
		ch <- result{line, err}
	}()
	var line string
	var err error
	select {
	case <-ctx.Done():
		return nil, errInterrupted
	case r := <-ch:
		line, err = r.line, r.err
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err != nil && line == "" {
		return nil, nil
	}
	s := strings.TrimSpace(line)
	return &s, nil
}

// lastResults returns the results of the last tool message.
func lastResults(msgs []toolgate.Message) []toolgate.ToolResult {
	for i := len(msgs) - 1; i >= 0; i-- {
		if tm, ok := msgs[i].(*toolgate.ToolMessage); ok {
			return tm.Results
		}
	}
	return nil
}
