package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/openai"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/sqlite"
)

const demoInput = "Check flight VX205 and book it if it is on time."

// demoPrivateInput is the input of --privacy: it holds an e-mail address and
// a card number that the model must never see.
const demoPrivateInput = "Check flight VX205 and book it if it is on time, for ada.lovelace@example.com, card 4111 1111 1111 1111."

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

// demoTools are the story's tools with their run counters.
type demoTools struct {
	status, book atomic.Int32
	mu           sync.Mutex
	bookArgs     []string // the arguments bookFlight received, as JSON
}

type flightArgs struct {
	Flight string `json:"flight" jsonschema:"the flight number, for example VX205"`
}

type bookArgs struct {
	Flight string `json:"flight" jsonschema:"the flight number, for example VX205"`
	Email  string `json:"email,omitempty" jsonschema:"where to send the ticket"`
	Card   string `json:"card,omitempty" jsonschema:"the card to pay with"`
}

func (d *demoTools) tools() []*toolgate.Tool {
	return []*toolgate.Tool{
		toolgate.NewToolFor("flightStatus", "Get the status of a flight",
			func(_ context.Context, _ *toolgate.ToolRequest, in flightArgs) (string, error) {
				d.status.Add(1)
				return "Flight " + in.Flight + " is on time", nil
			}, nil),
		toolgate.NewToolFor("bookFlight", "Book a seat on a flight",
			func(_ context.Context, req *toolgate.ToolRequest, in bookArgs) (string, error) {
				d.book.Add(1)
				d.mu.Lock()
				d.bookArgs = append(d.bookArgs, string(req.Arguments))
				d.mu.Unlock()
				if in.Email != "" {
					return "Booked " + in.Flight + "; the ticket goes to " + in.Email, nil
				}
				return "Booked " + in.Flight, nil
			}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}}),
	}
}

// tokenPattern matches the privacy guard's tokens, such as [EMAIL_ADDRESS_1].
var tokenPattern = regexp.MustCompile(`\[[A-Z_]+_[0-9]+\]`)

// demoModel plays the model's part: it asks for both tools in one reply
// (only for the tools it is offered), passing on the contact details it
// was given, and answers from the tool results it gets back.
func demoModel() *scripted.Model {
	return scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if len(p.Messages) == 0 {
			return scripted.Reply{}, errors.New("demo model: empty prompt")
		}
		tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage)
		if !ok {
			user, _ := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage)
			reply := scripted.Reply{Text: "I will check the flight and book it."}
			if p.Tool("flightStatus") != nil {
				reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: "call_status", Name: "flightStatus", Arguments: `{"flight":"VX205"}`})
			}
			if p.Tool("bookFlight") == nil {
				reply.Text = "I will check the flight. Booking is not something I can do for you."
			} else {
				args := `{"flight":"VX205"}`
				if user != nil {
					if toks := tokenPattern.FindAllString(user.Text, 2); len(toks) == 2 {
						args = fmt.Sprintf(`{"flight":"VX205","email":%q,"card":%q}`, toks[0], toks[1])
					}
				}
				reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: "call_book", Name: "bookFlight", Arguments: args})
			}
			return reply, nil
		}
		var parts []string
		for _, r := range tm.Results {
			switch {
			case r.Name == "flightStatus" && r.Status == toolgate.ResultOK:
				parts = append(parts, "VX205 is on time.")
			case r.Name == "bookFlight" && r.Status == toolgate.ResultOK:
				parts = append(parts, "Your seat on VX205 is booked.")
				if toks := tokenPattern.FindAllString(r.Content, 1); len(toks) == 1 {
					parts = append(parts, "The ticket goes to "+toks[0]+".")
				}
			case r.Status == toolgate.ResultDenied:
				parts = append(parts, fmt.Sprintf("I did not run %s: %s", r.Name, r.Content))
			default:
				parts = append(parts, fmt.Sprintf("%s failed: %s", r.Name, r.Content))
			}
		}
		return scripted.Reply{Text: strings.Join(parts, " ")}, nil
	})
}

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
	var store toolgate.ConversationStore = toolgate.NewMemoryStore()
	if f.db != "" {
		s, err := sqlite.Open(ctx, f.db, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
			return 1
		}
		defer s.Close()
		store = s
	}
	d := &demo{flags: f, env: e, tools: &demoTools{}, in: bufio.NewReader(e.stdin)}
	model, err := demoProviderModel(f)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
		return 1
	}
	opts := &toolgate.ClientOptions{
		Store:        store,
		SystemPrompt: "You are a travel agent. Check a flight's status before you book it, and use the tools for both.",
		// Record what the model is sent (after the guards), to show it.
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{d.record},
	}
	if f.user != "" {
		d.principal = demoUsers[f.user]
		policy, err := demoPolicy(f.policy)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
			return 1
		}
		opts.Authorizer = authz.NewGuard(policy, nil)
	}
	if f.privacy {
		guard, err := privacy.NewGuard(&privacy.GuardOptions{
			Disclosure: map[string]privacy.Grant{"bookFlight": privacy.Types(privacy.EmailAddress)},
		})
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
			return 1
		}
		opts.Protector = guard
	}
	d.client = toolgate.NewClient(model, d.tools.tools(), opts)
	if err := d.run(ctx); err != nil {
		fmt.Fprintf(e.stderr, "toolgate demo: %v\n", err)
		return 1
	}
	return 0
}

type demo struct {
	flags     *demoFlags
	env       *env
	tools     *demoTools
	client    *toolgate.Client
	principal *toolgate.Principal
	in        *bufio.Reader

	mu      sync.Mutex
	prompts []*toolgate.Prompt // guarded by mu: what the model was sent
}

// record is model middleware that keeps every prompt the model is sent.
func (d *demo) record(next toolgate.ModelFunc) toolgate.ModelFunc {
	return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
		d.mu.Lock()
		d.prompts = append(d.prompts, p)
		d.mu.Unlock()
		return next(ctx, p)
	}
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
		return demoModel(), nil
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
	return cedar.New(nil, cedar.Source{Name: "examples/flights.cedar", Text: []byte(examples.FlightsCedar)})
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.env.stdout, format, args...) }

func (d *demo) run(ctx context.Context) error {
	if d.flags.provider == "" {
		d.printf("toolgate demo: a flight-booking agent on a scripted model (no network, no API key)\n\n")
	} else {
		d.printf("toolgate demo: a flight-booking agent on %s\n\n", d.flags.provider)
	}
	id := d.flags.conversation
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
		return d.decide(ctx, reply, conv.Pause.Awaiting)
	}
	input := demoInput
	if d.flags.privacy {
		input = demoPrivateInput
	}
	if d.principal != nil {
		d.printf("Running as %s (roles %v) under the Cedar policies.\n", d.principal.ID, d.principal.Roles)
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
		d.printf("\nTool runs in this process: flightStatus %d, bookFlight %d\n", d.tools.status.Load(), d.tools.book.Load())
		return nil
	}
	return d.decide(ctx, resp.Message(), resp.Awaiting)
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
func (d *demo) decide(ctx context.Context, reply *toolgate.AssistantMessage, awaiting []string) error {
	if reply.Text != "" {
		d.printf("assistant: %s\n", reply.Text)
	}
	keys := toolgate.ToolCallKeys(reply)
	d.printf("\nThe reply paused: none of its %d tool calls has run.\n", len(keys))
	for i, c := range reply.ToolCalls {
		note := "runs without confirmation"
		if slices.Contains(awaiting, keys[i]) {
			note = "needs your decision"
		}
		d.printf("  [%s] %s %s  (%s)\n", keys[i], c.Name, c.Arguments, note)
	}
	d.printf("\n")

	decisions, ok, err := d.collect(reply, keys, awaiting)
	if err != nil {
		return err
	}
	if !ok {
		if d.flags.db == "" {
			d.printf("Stopped at the pause. Nothing ran, and without --db the pause is not kept.\n")
			d.printf("Try: toolgate demo --db demo.db, then toolgate demo --db demo.db --resume --yes\n")
			return nil
		}
		d.printf("Stopped at the pause. Nothing ran; the pause is kept in %s.\n", d.flags.db)
		d.printf("Resume with:  toolgate demo --db %s --resume --yes\n", d.flags.db)
		d.printf("         or:  toolgate demo --db %s --resume --no \"MESSAGE\"\n", d.flags.db)
		return nil
	}
	resp, err := d.client.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: d.flags.conversation, Principal: d.principal, Decisions: decisions})
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
		return d.decide(ctx, resp.Message(), resp.Awaiting)
	}
	d.printf("assistant: %s\n", resp.Text())
	if d.flags.privacy {
		d.tools.mu.Lock()
		for _, a := range d.tools.bookArgs {
			d.printf("\nbookFlight received:   %s\n", a)
		}
		d.tools.mu.Unlock()
		prompts := d.sent()
		if tm, ok := prompts[len(prompts)-1].Messages[len(prompts[len(prompts)-1].Messages)-1].(*toolgate.ToolMessage); ok {
			for _, r := range tm.Results {
				d.printf("The model got back:    %s %s\n", r.Name, r.Content)
			}
		}
	}
	d.printf("\nTool runs in this process: flightStatus %d, bookFlight %d\n", d.tools.status.Load(), d.tools.book.Load())
	return nil
}

// collect returns one decision per call: calls that await a decision are
// decided by the flags or the person; the others are allowed. ok is false
// when nobody can decide now (no flag, no terminal, or end of input).
func (d *demo) collect(reply *toolgate.AssistantMessage, keys, awaiting []string) (ds []toolgate.Decision, ok bool, err error) {
	for i, c := range reply.ToolCalls {
		key := keys[i]
		switch {
		case !slices.Contains(awaiting, key):
			ds = append(ds, toolgate.Allow(key))
		case d.flags.yes:
			ds = append(ds, toolgate.Allow(key))
		case d.flags.noSet:
			ds = append(ds, toolgate.DenyWithMessage(key, d.flags.no))
		case !d.env.interactive:
			return nil, false, nil
		default:
			dec, ok, err := d.ask(key, c)
			if err != nil || !ok {
				return nil, ok, err
			}
			ds = append(ds, dec)
		}
	}
	return ds, true, nil
}

// ask asks the person about one call until the answer is understood.
func (d *demo) ask(key string, c toolgate.ToolCall) (toolgate.Decision, bool, error) {
	for {
		d.printf("Allow %s %s [%s]? (y/n) ", c.Name, c.Arguments, key)
		line, err := d.readLine()
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
			msg, err := d.readLine()
			if err != nil {
				return toolgate.Decision{}, false, err
			}
			if msg == nil {
				msg = new(string)
			}
			return toolgate.DenyWithMessage(key, *msg), true, nil
		default:
			d.printf("Please answer y (allow) or n (deny).\n")
		}
	}
}

// readLine reads one trimmed line; nil at the end of input.
func (d *demo) readLine() (*string, error) {
	line, err := d.in.ReadString('\n')
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
