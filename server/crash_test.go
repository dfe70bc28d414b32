package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
	"github.com/toolgate/toolgate/store/sqlite"
)

// The crash tests run the service in a child process (this test binary,
// run again with crashChildEnv set) on a SQLite file, kill it with SIGKILL
// at a chosen point of the resumption of a decided pause, start a new child
// on the same files and check that the pause is resolved and that no call
// ran twice.
//
// The child announces every point of a resumption it passes on its
// standard output ("at claimed", "at ran t0", ...), and at the point it is
// told to stop at it announces "blocked ..." and waits to be killed. Its
// tools append one line per run to a file, synced before the tool returns:
// the tool's name, the call's idempotency key and the process id.

// crashChildEnv holds the JSON [crashChildConfig] of a child; the test
// binary run with it serves instead of testing.
const crashChildEnv = "TOOLGATE_SERVER_CRASH_CHILD"

// crashChildConfig configures a child.
type crashChildConfig struct {
	DB    string // the SQLite file of conversations and records
	Audit string // the SQLite file of the audit log; "": the store's own
	// Postgres, when set, is the URL of the PostgreSQL database whose
	// schema Schema keeps conversations, records and the audit log,
	// instead of DB.
	Postgres, Schema string
	Runs             string // the file the tools append their runs to
	// Stop is the number of the point the child stops at, counting from
	// 1 in the order the child passes them; 0: never.
	Stop int
	// Concurrency is the tool manager's concurrency.
	Concurrency int
	// Lease is the server's claim lease ([server.Config.ClaimLease]).
	Lease time.Duration
}

// The calls of the paused reply: t0 to t2 are allowed, t3 denied.
var crashCalls = []string{"t0", "t1", "t2", "t3"}

const crashDecision = `{"decisions":[{"key":"t0","verdict":"allow"},{"key":"t1","verdict":"allow"},{"key":"t2","verdict":"allow"},{"key":"t3","verdict":"deny","message":"no"}]}`

// crashPoints is how many points a resumption passes in a child that is
// not stopped. With the audit log in a file of its own: begun, claimed,
// started and ran for each of t0 to t2, appending, appended, finished.
// With everything in the store's database, where the decision record is
// written with the claim and the outcome with the answer: claimed,
// started and ran for each of t0 to t2, appending, appended, answering,
// answered.
const crashPoints = 11

// crashHooks calls hook at the points of a resumption.
type crashHooks struct {
	hook func(string)
	// answers: the answer's append is a point too (with the records in
	// the store's transactions).
	answers bool
}

// hookedStore passes its calls on to the store it wraps, with their
// contexts, so that the server's hooks run in the store's transactions.
type hookedStore struct {
	toolgate.ConversationStore
	h *crashHooks
}

func (s *hookedStore) Unwrap() toolgate.ConversationStore { return s.ConversationStore }

func (s *hookedStore) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	err := s.ConversationStore.ClaimPause(ctx, id, pauseID, c)
	if err == nil && len(c.Decisions) > 0 {
		s.h.hook("claimed")
		// The first calls start with the claim, in the same write.
		for _, k := range c.Started {
			s.h.hook("started " + k)
		}
	}
	return err
}

func (s *hookedStore) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	err := s.ConversationStore.MarkStarted(ctx, id, pauseID, token, keys)
	if err == nil {
		for _, k := range keys {
			s.h.hook("started " + k)
		}
	}
	return err
}

func (s *hookedStore) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	resolves := p != nil && p.Resolves != ""
	answer := s.h.answers && p != nil && !resolves && p.Pause == nil && len(p.Messages) > 0 && isAnswer(p.Messages[len(p.Messages)-1])
	switch {
	case resolves:
		s.h.hook("appending")
	case answer:
		s.h.hook("answering")
	}
	err := s.ConversationStore.Append(ctx, id, p)
	switch {
	case err != nil:
	case resolves:
		s.h.hook("appended")
	case answer:
		s.h.hook("answered")
	}
	return err
}

// isAnswer reports whether m is a reply of the model without tool calls.
func isAnswer(m toolgate.Message) bool {
	a, ok := m.(*toolgate.AssistantMessage)
	return ok && !a.HasToolCalls()
}

// hookedRecords passes its calls on to the record store it wraps; it keeps
// that store's audit log and conversation store, so that the server writes
// its records in the store's transactions when its audit log is the
// store's too.
type hookedRecords struct {
	records.Transactional
	h *crashHooks
}

func (r *hookedRecords) Unwrap() records.Store { return r.Transactional }

func (r *hookedRecords) Begin(ctx context.Context, d *records.Decision) (*records.Decision, error) {
	old, err := r.Transactional.Begin(ctx, d)
	if err == nil && old == nil {
		r.h.hook("begun")
	}
	return old, err
}

func (r *hookedRecords) Finish(ctx context.Context, convID, pauseID string, outcome records.Outcome) error {
	err := r.Transactional.Finish(ctx, convID, pauseID, outcome)
	if err == nil {
		r.h.hook("finished " + string(outcome))
	}
	return err
}

// crashStore is a store of the crash tests: SQLite or PostgreSQL.
type crashStore interface {
	toolgate.ConversationStore
	Records(context.Context) (records.Store, error)
	Close() error
}

// openCrashStore opens the store cfg names.
func openCrashStore(ctx context.Context, cfg *crashChildConfig) (crashStore, error) {
	if cfg.Postgres != "" {
		return postgres.Open(ctx, cfg.Postgres, &postgres.Options{Schema: cfg.Schema})
	}
	return sqlite.Open(ctx, cfg.DB, nil)
}

// runCrashChild serves the crash agent as the child process configured by
// v, until its standard input is closed or it is killed.
func runCrashChild(v string) {
	var cfg crashChildConfig
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", crashChildEnv, err)
		os.Exit(2)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	// A parent that goes away closes standard input: exit then.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var mu sync.Mutex
	passed := 0
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	hooks := &crashHooks{answers: cfg.Audit == "", hook: func(at string) {
		mu.Lock()
		passed++
		n := passed
		mu.Unlock()
		say("at %s", at)
		if n == cfg.Stop {
			say("blocked %s", at)
			select {} // until killed
		}
	}}

	ctx := context.Background()
	store, err := openCrashStore(ctx, &cfg)
	if err != nil {
		fail(err)
	}
	rs, err := store.Records(ctx)
	if err != nil {
		fail(err)
	}
	recs := rs.(records.Transactional)
	auditLog := recs.AuditLog()
	if cfg.Audit != "" {
		if auditLog, err = auditsqlite.Open(ctx, cfg.Audit, nil); err != nil {
			fail(err)
		}
	}
	var tools []*toolgate.Tool
	for _, name := range crashCalls {
		tools = append(tools, toolgate.NewTool(toolgate.ToolDefinition{Name: name}, toolgate.ToolMetadata{RequiresConfirmation: true},
			func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
				if err := appendRun(cfg.Runs, fmt.Sprintf("%s %s %d\n", name, req.IdempotencyKey, os.Getpid())); err != nil {
					return "", err
				}
				hooks.hook("ran " + name)
				return name + " done", nil
			}))
	}
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		switch m := p.Messages[len(p.Messages)-1].(type) {
		case *toolgate.ToolMessage:
			return scripted.Reply{Text: "All done."}, nil
		case *toolgate.UserMessage:
			if m.Text == "go" {
				var calls []toolgate.ToolCall
				for _, name := range crashCalls {
					calls = append(calls, toolgate.ToolCall{ID: name, Name: name, Arguments: "{}"})
				}
				return scripted.Reply{ToolCalls: calls}, nil
			}
		}
		return scripted.Reply{Text: "ok"}, nil
	})
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{
		Store:       &hookedStore{ConversationStore: store, h: hooks},
		Concurrency: cfg.Concurrency,
	})
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"crash": {
			Client:    client,
			Approvals: []server.ApprovalRule{{Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{
			{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}},
			{SHA256: server.HashAPIKey(approverKey), Principal: toolgate.Principal{ID: "bob", Roles: []string{"approver"}}},
		},
		AuditRoles: []string{"approver"},
		Records:    &hookedRecords{Transactional: recs, h: hooks},
		Audit:      auditLog,
		ClaimLease: cfg.Lease,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	say("listening %s", ln.Addr())
	fail((&http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}).Serve(ln))
}

// appendRun appends line to the file at path and syncs it.
func appendRun(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// crashChild is a running child process.
type crashChild struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its standard output, closed at its end
	base  string      // http://ADDR
	mu    sync.Mutex
	out   []string // every line read, for failure messages
}

// startCrashChild starts a child with cfg and waits until it listens.
func startCrashChild(t *testing.T, cfg crashChildConfig) *crashChild {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestServerCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(b))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &crashChild{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 64)}
	go func() {
		defer close(c.lines)
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
		if t.Failed() {
			t.Logf("child %d output:\n%s\nstandard error:\n%s", cmd.Process.Pid, strings.Join(c.output(), "\n"), stderr.String())
		}
	})
	c.base = "http://" + strings.TrimPrefix(c.await("listening "), "listening ")
	return c
}

func (c *crashChild) output() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.out)
}

// await returns the first line of the child's output starting with
// prefix, failing the test if the child ends first or says nothing of the
// kind within a generous bound.
func (c *crashChild) await(prefix string) string {
	c.t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("child %d ended without saying %q", c.cmd.Process.Pid, prefix)
			}
			c.mu.Lock()
			c.out = append(c.out, line)
			c.mu.Unlock()
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout.C:
			c.t.Fatalf("child %d did not say %q in 30s", c.cmd.Process.Pid, prefix)
		}
	}
}

// awaitEither waits until one of children says a line starting with
// prefix. From then on every child's output is read in the background (and
// kept for failure messages) until it ends: no later await may be made on
// them.
func awaitEither(t *testing.T, children []*crashChild, prefix string) {
	t.Helper()
	if len(children) == 1 {
		children[0].await(prefix)
		return
	}
	said := make(chan int, len(children))
	for i, c := range children {
		go func() {
			seen := false
			for line := range c.lines {
				c.mu.Lock()
				c.out = append(c.out, line)
				c.mu.Unlock()
				if !seen && strings.HasPrefix(line, prefix) {
					seen = true
					said <- i
				}
			}
		}()
	}
	select {
	case <-said:
	case <-time.After(30 * time.Second):
		t.Fatalf("no instance said %q in 30s", prefix)
	}
}

// kill kills the child with SIGKILL and waits for it to end; the lines it
// wrote before dying are kept.
func (c *crashChild) kill() {
	c.t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	c.drain()
}

// stop closes the child's standard input, which makes it exit, and waits
// for it to end.
func (c *crashChild) stop() {
	c.stdin.Close()
	c.drain()
}

func (c *crashChild) drain() {
	for line := range c.lines {
		c.mu.Lock()
		c.out = append(c.out, line)
		c.mu.Unlock()
	}
	c.cmd.Wait()
}

// do sends a request to the child and returns the status and the decoded
// body.
func (c *crashChild) do(method, path, key, body string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: %d, body not JSON: %w", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, out, nil
}

// must is do, failing the test unless the status is want.
func (c *crashChild) must(want int, method, path, key, body string) map[string]any {
	c.t.Helper()
	code, out, err := c.do(method, path, key, body)
	if err != nil || code != want {
		c.t.Fatalf("%s %s: %d %v %v, want %d", method, path, code, out, err, want)
	}
	return out
}

// crashRun kills a child resuming a pause at its stop'th point, and
// restarts the service to recover the pause.
// crashMode is where a crash test keeps its data.
type crashMode int

const (
	// crashAuditFile: conversations and records in SQLite, the audit log
	// in a file of its own, each written apart.
	crashAuditFile crashMode = iota
	// crashSQLite: everything in one SQLite file, the records and audit
	// records written in the store's transactions.
	crashSQLite
	// crashPostgres: the same in a PostgreSQL schema.
	crashPostgres
	// crashPostgresTwo: crashPostgres restarted as two instances at
	// once, either of which may recover what the killed one left.
	crashPostgresTwo
)

func crashRun(t *testing.T, stop, concurrency int, mode crashMode) {
	dir := t.TempDir()
	cfg := crashChildConfig{
		DB: filepath.Join(dir, "toolgate.db"), Runs: filepath.Join(dir, "runs"),
		Stop: stop, Concurrency: concurrency,
		Lease: -1, // the first child never recovers its own claim
	}
	switch mode {
	case crashAuditFile:
		cfg.Audit = filepath.Join(dir, "audit.db")
	case crashPostgres, crashPostgresTwo:
		cfg.Postgres, cfg.Schema = pgtest.Schema(t, "toolgate_crash_test_")
	}
	inStore := mode != crashAuditFile

	// Pause a turn, and decide it.
	first := startCrashChild(t, cfg)
	conv := first.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	out := first.must(200, "POST", messagesPath(conv), travellerKey, `{"input":"go"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
	pause := out["pause"].(map[string]any)["id"].(string)
	decided := make(chan error, 1)
	go func() {
		code, out, err := first.do("POST", decisionsPath(conv, pause), approverKey, crashDecision)
		if err == nil {
			err = fmt.Errorf("the decision was answered %d %v", code, out)
		}
		decided <- err
	}()

	// Kill it at the point.
	at := strings.TrimPrefix(first.await("blocked "), "blocked ")
	first.kill()
	if err := <-decided; err == nil || !strings.Contains(err.Error(), "EOF") && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("the decision's request: %v; want it cut off by the kill", err)
	}
	t.Logf("killed at %q (point %d, concurrency %d)", at, stop, concurrency)

	// What the killed process left.
	left := crashState(t, &cfg, conv, pause)
	firstRuns := readCrashRuns(t, cfg.Runs)

	// Restart; the new process recovers what needs it.
	cfg.Stop, cfg.Lease = 0, time.Second
	second := startCrashChild(t, cfg)
	restarted := []*crashChild{second}
	if mode == crashPostgresTwo {
		restarted = append(restarted, startCrashChild(t, cfg))
	}
	awaitAny := func(prefix string) { awaitEither(t, restarted, prefix) }
	var want records.Outcome
	switch {
	case left.record == nil:
		t.Fatalf("no decision record after a kill at %q", at)
	case left.record.Outcome == records.OutcomeDecided:
		want = records.OutcomeDecided // nothing is left to do
	case left.pause == nil:
		// The results were stored but the record never heard of it.
		want = records.OutcomeDecided
		awaitAny("at finished " + string(want))
	case inStore:
		// The outcome is set with the recovered turn's answer.
		want = records.OutcomeRecovered
		awaitAny("at answered")
	default:
		want = records.OutcomeRecovered
		awaitAny("at finished " + string(want))
	}

	// The pause is resolved with the first decision, and recorded so.
	got := second.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	if got["pause"] != nil {
		t.Fatalf("the pause is still open: %v", got["pause"])
	}
	var shown struct {
		Messages []struct {
			Role    string                `json:"role"`
			Text    string                `json:"text"`
			Results []toolgate.ToolResult `json:"results"`
		} `json:"messages"`
		Decisions []records.Decision `json:"decisions"`
	}
	b, _ := json.Marshal(got)
	if err := json.Unmarshal(b, &shown); err != nil {
		t.Fatal(err)
	}
	outcomeOK := len(shown.Decisions) == 1 && shown.Decisions[0].Outcome == want
	if mode == crashPostgresTwo && want == records.OutcomeRecovered && len(shown.Decisions) == 1 && shown.Decisions[0].Outcome == records.OutcomeDecided {
		// One instance recovered the pause; the other, seeing it resolved
		// before the recovery's answer set the outcome, may settle the
		// record as decided first (the first resolving outcome is final).
		outcomeOK = true
	}
	if !outcomeOK || shown.Decisions[0].DecidedBy != "bob" || len(shown.Decisions[0].Decisions) != len(crashCalls) {
		t.Errorf("decision records %+v, want one by bob, outcome %q", shown.Decisions, want)
	}
	if len(shown.Messages) < 3 || shown.Messages[2].Role != "tool" || len(shown.Messages[2].Results) != len(crashCalls) {
		t.Fatalf("messages %+v: want the paused reply answered", shown.Messages)
	}
	if want == records.OutcomeRecovered && (len(shown.Messages) != 4 || shown.Messages[3].Text != "All done.") {
		t.Errorf("messages %+v: want the recovered turn continued", shown.Messages)
	}

	// No call ran twice; a call recorded as started never ran again.
	allRuns := readCrashRuns(t, cfg.Runs)
	results := shown.Messages[2].Results
	for i, key := range crashCalls {
		r, n, before := results[i], len(allRuns[key]), len(firstRuns[key])
		started := slices.Contains(left.started, key)
		if idem := toolgate.IdempotencyKey(conv, pause, key); n > 0 && slices.ContainsFunc(allRuns[key], func(l crashRunLine) bool { return l.idem != idem }) {
			t.Errorf("%s ran with idempotency keys %v, want %s", key, allRuns[key], idem)
		}
		if before > 0 && !started && left.pause != nil {
			t.Errorf("%s ran in the killed process without being recorded as started", key)
		}
		switch {
		case n > 1:
			t.Errorf("%s ran %d times: %v", key, n, allRuns[key])
		case key == "t3":
			if n != 0 || r.Status != toolgate.ResultDenied || r.Content != "no" {
				t.Errorf("denied %s ran %d times, result %+v", key, n, r)
			}
		case r.Status == toolgate.ResultOK:
			if n != 1 || r.Content != key+" done" {
				t.Errorf("%s answered ok, ran %d times: %+v", key, n, r)
			}
			if started && left.pause != nil {
				t.Errorf("%s was started by the killed process and answered ok: it ran again", key)
			}
		case r.Status == toolgate.ResultInterrupted:
			if !started || n != before {
				t.Errorf("%s answered interrupted: started before the kill %v, runs %d before and %d after", key, started, before, n)
			}
		default:
			t.Errorf("%s: result %+v", key, r)
		}
	}

	// The inbox is empty, a late decision decides nothing, new input is
	// taken, and the audit log is intact.
	if items := second.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(items) != 0 {
		t.Errorf("inbox after the recovery: %v", items)
	}
	if code, out, err := second.do("POST", decisionsPath(conv, pause), approverKey, crashDecision); err != nil || code != 409 || out["error"] != "already_decided" {
		t.Errorf("a decision after the recovery: %d %v %v, want 409 already_decided", code, out, err)
	}
	if out := second.must(200, "POST", messagesPath(conv), travellerKey, `{"input":"thanks"}`); out["status"] != "completed" || out["text"] != "ok" {
		t.Errorf("new input after the recovery: %v", out)
	}
	// With the records in the store's transactions, every resolution has
	// its records, whenever the process died.
	checkCrashAudit(t, second.must(200, "GET", "/v1/conversations/"+conv+"/audit", approverKey, ""), pause, results,
		inStore || want == records.OutcomeRecovered || left.record.Outcome == records.OutcomeDecided)
	for _, c := range restarted {
		c.stop()
	}
	verifyAudit(t, &cfg)
	if final := readCrashRuns(t, cfg.Runs); fmt.Sprint(final) != fmt.Sprint(allRuns) {
		t.Errorf("runs changed after the checks: %v, then %v", allRuns, final)
	}
}

// checkCrashAudit checks the audit records of a conversation whose pause
// was decided and resolved with results: each call was requested and
// decided once; a call that answered ok has at most one executed record, a
// denied call at most one denied record, and exactly one when resolved is
// true (the resolution's records were written: by the recovery, or by the
// decider before it was killed); an interrupted call (started before the
// kill, its outcome unknown) has one executed record, written by the
// recovery.
func checkCrashAudit(t *testing.T, out map[string]any, pause string, results []toolgate.ToolResult, resolved bool) {
	t.Helper()
	if out["verified"] != true {
		t.Errorf("the conversation's audit records are not verified: %v", out)
	}
	kinds := map[string]map[string]int{}
	for _, r := range out["records"].([]any) {
		r := r.(map[string]any)
		if r["pause_id"] != pause {
			continue
		}
		key := r["call_key"].(string)
		if kinds[key] == nil {
			kinds[key] = map[string]int{}
		}
		kinds[key][r["kind"].(string)]++
	}
	for i, key := range crashCalls {
		got := kinds[key]
		if got["requested"] != 1 || got["decided"] != 1 {
			t.Errorf("audit records of %s: %v, want requested and decided once", key, got)
		}
		want, n := "", 0
		switch results[i].Status {
		case toolgate.ResultOK, toolgate.ResultInterrupted:
			want = "executed"
		case toolgate.ResultDenied:
			want = "denied"
		}
		if want != "" {
			n = got[want]
		}
		switch {
		case want == "":
			t.Errorf("%s answered %s: want ok, denied or interrupted", key, results[i].Status)
		case n > 1, resolved && want != "" && n != 1:
			t.Errorf("audit records of %s: %v, want %s once", key, got, want)
		}
	}
}

// crashLeft is what a killed process left in the store.
type crashLeft struct {
	pause   *toolgate.PauseRecord // the open pause, nil when resolved
	started []string              // calls recorded as started
	record  *records.Decision
}

// crashState reads the store of cfg as the killed process left it.
func crashState(t *testing.T, cfg *crashChildConfig, conv, pause string) crashLeft {
	t.Helper()
	store, err := openCrashStore(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := store.Load(t.Context(), conv)
	if err != nil {
		t.Fatal(err)
	}
	var left crashLeft
	if c.Pause != nil && c.Pause.ID == pause {
		left.pause, left.started = c.Pause, c.Pause.Started
	}
	rec, err := mustRecords(t, store).Decision(t.Context(), conv, pause)
	if err != nil && !errors.Is(err, records.ErrNotFound) {
		t.Fatal(err)
	}
	left.record = rec
	return left
}

// verifyAudit checks the hash chain of the audit log of cfg.
func verifyAudit(t *testing.T, cfg *crashChildConfig) {
	t.Helper()
	var log audit.Log
	if cfg.Audit != "" {
		l, err := auditsqlite.Open(t.Context(), cfg.Audit, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		log = l
	} else {
		store, err := openCrashStore(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		log = mustRecords(t, store).(records.Transactional).AuditLog()
	}
	sealPending(t, log)
	rep, err := audit.Verify(t.Context(), log, nil)
	if err != nil || rep.Records == 0 || rep.Unsealed != 0 {
		t.Errorf("audit.Verify: %+v, %v", rep, err)
	}
}

// crashRunLine is one run of a tool.
type crashRunLine struct{ idem, pid string }

// readCrashRuns returns the runs of each tool.
func readCrashRuns(t *testing.T, path string) map[string][]crashRunLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]crashRunLine{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]crashRunLine{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("runs file: bad line %q", line)
		}
		out[f[0]] = append(out[f[0]], crashRunLine{idem: f[1], pid: f[2]})
	}
	return out
}

// TestServerCrash kills the service with SIGKILL at every point of the
// resumption of a decided pause, calls running one at a time, and
// restarts it on the same SQLite file: the pause is resolved (recovered,
// or found decided), no call ran twice, and a call recorded as started
// answers "interrupted" instead of running again.
func TestServerCrash(t *testing.T) {
	if v := os.Getenv(crashChildEnv); v != "" {
		runCrashChild(v)
		return
	}
	if testing.Short() {
		t.Skip("starts two processes per point")
	}
	t.Parallel()
	for stop := 1; stop <= crashPoints; stop++ {
		t.Run(strconv.Itoa(stop), func(t *testing.T) {
			t.Parallel()
			crashRun(t, stop, 1, crashAuditFile)
		})
	}
}

// TestServerCrashInStore is [TestServerCrash] with the records and the
// audit log in the store's database, written in its transactions (on
// SQLite, and on PostgreSQL with TOOLGATE_POSTGRES_URL): a decision is
// three transactions, and a kill after any point leaves each of them
// whole or absent. On PostgreSQL it also restarts as two instances at
// once, both recovering: still one decided record per call, in one chain. The pause is resolved once, no call ran twice, and
// every call has its requested and decided records and exactly one
// executed (also when it was interrupted) or denied record.
func TestServerCrashInStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes per point")
	}
	t.Parallel()
	for _, m := range []struct {
		name        string
		mode        crashMode
		concurrency int
	}{
		{"sqlite", crashSQLite, 1},
		{"postgres", crashPostgres, 1},
		{"postgres two instances", crashPostgresTwo, 1},
		// The calls side by side: their starts are one write, the claim.
		{"postgres two instances, calls side by side", crashPostgresTwo, 2},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if m.mode != crashSQLite {
				pgtest.URL(t)
			}
			for stop := 1; stop <= crashPoints; stop++ {
				t.Run(strconv.Itoa(stop), func(t *testing.T) {
					t.Parallel()
					crashRun(t, stop, m.concurrency, m.mode)
				})
			}
		})
	}
}

// TestServerCrashRandom kills the service at random points of resumptions
// whose calls run in parallel (the seed is logged; -seed repeats a run).
func TestServerCrashRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes per point")
	}
	t.Parallel()
	seed := testSeed(t, uint64(time.Now().UnixNano()))
	rng := mrand.New(mrand.NewPCG(seed, seed))
	for i := range 5 {
		stop, concurrency := 1+rng.IntN(crashPoints), 1+rng.IntN(3)
		t.Run(fmt.Sprintf("%d/stop %d/concurrency %d", i, stop, concurrency), func(t *testing.T) {
			t.Parallel()
			crashRun(t, stop, concurrency, crashAuditFile)
		})
	}
}
