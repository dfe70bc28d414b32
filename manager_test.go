package toolgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
)

// flightInput is the input of the two flight tools.
type flightInput struct {
	Flight string `json:"flight" jsonschema:"the flight number, such as VX205"`
}

// flightsFixture holds the two flight tools: flightStatus
// (ungated) and bookFlight (requires confirmation), each counting its runs.
type flightsFixture struct {
	statusRuns, bookRuns atomic.Int32
	status, book         *toolgate.Tool
}

func newFlightsFixture() *flightsFixture {
	f := &flightsFixture{}
	f.status = toolgate.NewToolFor("flightStatus", "Reports whether a flight is on time.",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightInput) (string, error) {
			f.statusRuns.Add(1)
			return in.Flight + " is on time", nil
		}, nil)
	f.book = toolgate.NewToolFor("bookFlight", "Books a seat on a flight.",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightInput) (string, error) {
			f.bookRuns.Add(1)
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
	return f
}

// prompt returns a prompt carrying both tools.
func (f *flightsFixture) prompt(msgs ...toolgate.Message) *toolgate.Prompt {
	return &toolgate.Prompt{Messages: msgs, Tools: []*toolgate.Tool{f.status, f.book}}
}

func (f *flightsFixture) checkRuns(t *testing.T, status, book int32) {
	t.Helper()
	if got := f.statusRuns.Load(); got != status {
		t.Errorf("flightStatus ran %d times, want %d", got, status)
	}
	if got := f.bookRuns.Load(); got != book {
		t.Errorf("bookFlight ran %d times, want %d", got, book)
	}
}

var (
	statusCall = toolgate.ToolCall{ID: "call_status", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}
	bookCall   = toolgate.ToolCall{ID: "call_book", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}
)

func replyWith(calls ...toolgate.ToolCall) *toolgate.AssistantMessage {
	return &toolgate.AssistantMessage{ToolCalls: calls}
}

func userSays(text string) *toolgate.UserMessage { return &toolgate.UserMessage{Text: text} }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// countingTool returns a raw tool that counts its runs and answers "name:key".
func countingTool(name string, meta toolgate.ToolMetadata, runs *atomic.Int32) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name}, meta,
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			if runs != nil {
				runs.Add(1)
			}
			return name + ":" + req.Key, nil
		})
}

func mustPause(t *testing.T, err error) *toolgate.PauseError {
	t.Helper()
	var pe *toolgate.PauseError
	if !errors.As(err, &pe) {
		t.Fatalf("got error %v, want a *PauseError", err)
	}
	if !errors.Is(err, toolgate.ErrPaused) {
		t.Errorf("errors.Is(%v, ErrPaused) = false, want true", err)
	}
	return pe
}

func TestScenarios(t *testing.T) {
	ctx := context.Background()
	t.Run("ungated call runs at once", func(t *testing.T) {
		f := newFlightsFixture()
		m := toolgate.NewManager(nil)
		res, err := m.Run(ctx, &toolgate.RunParams{Prompt: f.prompt(userSays("Is VX205 on time?")), Reply: replyWith(statusCall)})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		f.checkRuns(t, 1, 0)
		want := []toolgate.ToolResult{{CallID: "call_status", Name: "flightStatus", Content: `"VX205 is on time"`}}
		if diff := cmp.Diff(want, res.Message.Results); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
	})
	t.Run("gated call pauses", func(t *testing.T) {
		f := newFlightsFixture()
		r := replyWith(bookCall)
		_, err := toolgate.NewManager(nil).Run(ctx, &toolgate.RunParams{Prompt: f.prompt(userSays("Book VX205")), Reply: r})
		pe := mustPause(t, err)
		if diff := cmp.Diff([]string{"call_book"}, pe.Awaiting); diff != "" {
			t.Errorf("awaiting (-want +got):\n%s", diff)
		}
		if pe.Reply != r {
			t.Errorf("got paused reply %p, want the reply given %p", pe.Reply, r)
		}
		f.checkRuns(t, 0, 0)
	})
	t.Run("mixed reply pauses as a whole", func(t *testing.T) {
		f := newFlightsFixture()
		_, err := toolgate.NewManager(nil).Run(ctx, &toolgate.RunParams{Prompt: f.prompt(userSays("Check and book VX205")), Reply: replyWith(statusCall, bookCall)})
		pe := mustPause(t, err)
		if diff := cmp.Diff([]string{"call_book"}, pe.Awaiting); diff != "" {
			t.Errorf("awaiting (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"call_status", "call_book"}, pe.Keys); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
		f.checkRuns(t, 0, 0)
	})
	t.Run("resume the mixed reply with allow and deny", func(t *testing.T) {
		f := newFlightsFixture()
		m := toolgate.NewManager(nil)
		p := f.prompt(userSays("Check and book VX205"))
		r := replyWith(statusCall, bookCall)
		_, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: r})
		pe := mustPause(t, err)
		res, err := m.Resume(ctx, &toolgate.ResumeParams{Prompt: p, Reply: pe.Reply, Decisions: []toolgate.Decision{
			toolgate.Allow(pe.Keys[0]),
			toolgate.Deny(pe.Keys[1], "User cancelled the booking."),
		}})
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		f.checkRuns(t, 1, 0)
		want := []toolgate.ToolResult{
			{CallID: "call_status", Name: "flightStatus", Content: `"VX205 is on time"`, Status: toolgate.ResultOK},
			{CallID: "call_book", Name: "bookFlight", Content: "User cancelled the booking.", Status: toolgate.ResultDenied},
		}
		if diff := cmp.Diff(want, res.Message.Results); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
		if res.ReturnDirect {
			t.Errorf("got ReturnDirect true, want false")
		}
	})
	t.Run("resume the gated call with allow", func(t *testing.T) {
		f := newFlightsFixture()
		m := toolgate.NewManager(nil)
		p := f.prompt(userSays("Book VX205"))
		_, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: replyWith(bookCall)})
		pe := mustPause(t, err)
		res, err := m.Resume(ctx, &toolgate.ResumeParams{Prompt: p, Reply: pe.Reply, Decisions: []toolgate.Decision{toolgate.Allow(pe.Awaiting[0])}})
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		f.checkRuns(t, 0, 1)
		want := []toolgate.ToolResult{{CallID: "call_book", Name: "bookFlight", Content: "\"Booked VX205\"", Status: toolgate.ResultOK}}
		if diff := cmp.Diff(want, res.Message.Results); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
	})
}

func TestRunNoToolCalls(t *testing.T) {
	m := toolgate.NewManager(nil)
	for _, p := range []*toolgate.RunParams{nil, {}, {Reply: &toolgate.AssistantMessage{Text: "hello"}}} {
		if _, err := m.Run(context.Background(), p); !errors.Is(err, toolgate.ErrNoToolCalls) {
			t.Errorf("Run(%+v): got error %v, want ErrNoToolCalls", p, err)
		}
	}
	if err := m.CheckResume(nil); !errors.Is(err, toolgate.ErrInvalidDecisions) {
		t.Errorf("CheckResume(nil): got %v, want ErrInvalidDecisions", err)
	}
	if _, err := m.Resume(context.Background(), nil); !errors.Is(err, toolgate.ErrInvalidDecisions) {
		t.Errorf("Resume(nil): got %v, want ErrInvalidDecisions", err)
	}
}

func TestPauseKeysMatchToolCallKeys(t *testing.T) {
	f := newFlightsFixture()
	r := replyWith(
		toolgate.ToolCall{ID: "dup", Name: "bookFlight", Arguments: `{"flight":"A1"}`},
		toolgate.ToolCall{ID: "dup", Name: "flightStatus", Arguments: `{"flight":"A1"}`},
		toolgate.ToolCall{ID: "", Name: "flightStatus", Arguments: `{"flight":"A2"}`},
		toolgate.ToolCall{ID: "#7", Name: "bookFlight", Arguments: `{"flight":"A3"}`},
		toolgate.ToolCall{ID: "solo", Name: "bookFlight", Arguments: `{"flight":"A4"}`},
	)
	before := cloneReply(r)
	_, err := toolgate.NewManager(nil).Run(context.Background(), &toolgate.RunParams{Prompt: f.prompt(userSays("go")), Reply: r})
	pe := mustPause(t, err)
	keys := before.CallKeys()
	if diff := cmp.Diff(keys, pe.Keys); diff != "" {
		t.Errorf("PauseError.Keys differ from ToolCallKeys (-ToolCallKeys +PauseError):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"#0", "#1", "#2", "#3", "solo"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"#0", "#3", "solo"}, pe.Awaiting); diff != "" {
		t.Errorf("awaiting (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, r); diff != "" {
		t.Errorf("Run changed the reply (-before +after):\n%s", diff)
	}
	f.checkRuns(t, 0, 0)
}

func cloneReply(r *toolgate.AssistantMessage) *toolgate.AssistantMessage {
	c := *r
	c.ToolCalls = append([]toolgate.ToolCall(nil), r.ToolCalls...)
	return &c
}

func TestResumeInvalidDecisions(t *testing.T) {
	f := newFlightsFixture()
	full := f.prompt(userSays("Check and book VX205"))
	statusOnly := &toolgate.Prompt{Messages: full.Messages, Tools: []*toolgate.Tool{f.status}}
	both := replyWith(statusCall, bookCall)
	tests := []struct {
		name      string
		prompt    *toolgate.Prompt
		reply     *toolgate.AssistantMessage
		decisions []toolgate.Decision
		want      toolgate.DecisionError
	}{
		{
			name:      "missing decision",
			decisions: []toolgate.Decision{toolgate.Allow("call_status")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemMissing, Key: "call_book"},
		},
		{
			name:      "missing decision for unflagged call",
			decisions: []toolgate.Decision{toolgate.Allow("call_book")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemMissing, Key: "call_status"},
		},
		{
			name:      "unknown key",
			decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Deny("call_book", ""), toolgate.Deny("call_other", "")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemUnknownKey, Key: "call_other"},
		},
		{
			name:      "positional key for a call with a usable id",
			decisions: []toolgate.Decision{toolgate.Allow("#0"), toolgate.Deny("call_book", "")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemUnknownKey, Key: "#0"},
		},
		{
			name:      "duplicate decision",
			decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Deny("call_book", ""), toolgate.Allow("call_status")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemDuplicate, Key: "call_status"},
		},
		{
			name:      "allowed tool not in prompt",
			prompt:    statusOnly,
			decisions: []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemToolNotInPrompt, Key: "call_book", Tool: "bookFlight"},
		},
		{
			name:      "allowed call with nil prompt",
			prompt:    &toolgate.Prompt{},
			decisions: []toolgate.Decision{toolgate.Deny("call_status", ""), toolgate.Allow("call_book")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemToolNotInPrompt, Key: "call_book", Tool: "bookFlight"},
		},
		{
			name:      "zero verdict",
			decisions: []toolgate.Decision{toolgate.Allow("call_status"), {Key: "call_book"}},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemInvalidVerdict, Key: "call_book"},
		},
		{
			name:      "unknown verdict",
			decisions: []toolgate.Decision{toolgate.Allow("call_status"), {Key: "call_book", Verdict: "maybe"}},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemInvalidVerdict, Key: "call_book"},
		},
		{
			name:      "message on allow",
			decisions: []toolgate.Decision{toolgate.Allow("call_status"), {Key: "call_book", Verdict: toolgate.VerdictAllow, Message: "fine"}},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemMessageOnAllow, Key: "call_book"},
		},
		{
			name:      "reply without tool calls",
			reply:     &toolgate.AssistantMessage{Text: "hello"},
			decisions: []toolgate.Decision{toolgate.Allow("call_status")},
			want:      toolgate.DecisionError{Problem: toolgate.ProblemNoToolCalls},
		},
		{
			name:  "no decisions",
			want:  toolgate.DecisionError{Problem: toolgate.ProblemMissing, Key: "call_status"},
			reply: both,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, r := tt.prompt, tt.reply
			if p == nil {
				p = full
			}
			if r == nil {
				r = both
			}
			m := toolgate.NewManager(nil)
			params := &toolgate.ResumeParams{Prompt: p, Reply: r, Decisions: tt.decisions}
			check := func(what string, err error) {
				t.Helper()
				var de *toolgate.DecisionError
				if !errors.As(err, &de) {
					t.Fatalf("%s: got error %v, want a *DecisionError", what, err)
				}
				if diff := cmp.Diff(tt.want, *de); diff != "" {
					t.Errorf("%s: DecisionError (-want +got):\n%s", what, diff)
				}
				if !errors.Is(err, toolgate.ErrInvalidDecisions) {
					t.Errorf("%s: errors.Is(%v, ErrInvalidDecisions) = false, want true", what, err)
				}
				if de.Error() == "" {
					t.Errorf("%s: empty error text", what)
				}
			}
			res, err := m.Resume(context.Background(), params)
			if res != nil {
				t.Errorf("Resume returned a result %+v with an error", res)
			}
			check("Resume", err)
			check("CheckResume", m.CheckResume(params))
			check("CheckDecisions", toolgate.CheckDecisions(p, r, tt.decisions))
			f.checkRuns(t, 0, 0)
		})
	}
}

func TestResumeDeniedUnknownTool(t *testing.T) {
	f := newFlightsFixture()
	ghost := toolgate.ToolCall{ID: "call_ghost", Name: "ghost", Arguments: `{}`}
	p := f.prompt(userSays("go"))
	r := replyWith(statusCall, ghost)
	ds := []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Deny("call_ghost", "")}
	if err := toolgate.CheckDecisions(p, r, ds); err != nil {
		t.Fatalf("CheckDecisions: %v", err)
	}
	res, err := toolgate.NewManager(nil).Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: r, Decisions: ds, Awaiting: []string{"call_ghost"}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	want := []toolgate.ToolResult{
		{CallID: "call_status", Name: "flightStatus", Content: `"VX205 is on time"`},
		{CallID: "call_ghost", Name: "ghost", Content: toolgate.DefaultDenyMessage, Status: toolgate.ResultDenied},
	}
	if diff := cmp.Diff(want, res.Message.Results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	f.checkRuns(t, 1, 0)
}

func TestResumeHistory(t *testing.T) {
	f := newFlightsFixture()
	sys := &toolgate.SystemMessage{Text: "You book flights."}
	u := userSays("Book VX205")
	r := replyWith(bookCall)
	tests := []struct {
		name     string
		messages []toolgate.Message
		want     []toolgate.Message // before the tool message
	}{
		{"prompt without the reply", []toolgate.Message{sys, u}, []toolgate.Message{sys, u, r}},
		{"prompt ending with the reply", []toolgate.Message{sys, u, r}, []toolgate.Message{sys, u, r}},
		{"prompt ending with an equal copy", []toolgate.Message{sys, u, cloneReply(r)}, []toolgate.Message{sys, u, r}},
		{"prompt ending with another reply", []toolgate.Message{u, replyWith(statusCall)}, []toolgate.Message{u, replyWith(statusCall), r}},
		{"empty prompt", nil, []toolgate.Message{r}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := f.prompt(tt.messages...)
			res, err := toolgate.NewManager(nil).Resume(context.Background(), &toolgate.ResumeParams{
				Prompt: p, Reply: r, Decisions: []toolgate.Decision{toolgate.Allow("call_book")},
			})
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			want := append(tt.want, res.Message)
			if diff := cmp.Diff(want, res.History); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if last := res.History[len(res.History)-1]; last != toolgate.Message(res.Message) {
				t.Errorf("last history message is %v, want the result's tool message", last)
			}
			if diff := cmp.Diff(tt.messages, p.Messages); diff != "" {
				t.Errorf("Resume changed the prompt (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReturnDirect(t *testing.T) {
	direct := toolgate.ToolMetadata{ReturnDirect: true}
	gatedDirect := toolgate.ToolMetadata{ReturnDirect: true, RequiresConfirmation: true}
	p := &toolgate.Prompt{
		Messages: []toolgate.Message{userSays("weather?")},
		Tools: []*toolgate.Tool{
			countingTool("weather", direct, nil),
			countingTool("forecast", direct, nil),
			countingTool("charge", gatedDirect, nil),
			countingTool("lookup", toolgate.ToolMetadata{}, nil),
		},
	}
	call := func(id, name string) toolgate.ToolCall { return toolgate.ToolCall{ID: id, Name: name} }
	ctx := context.Background()
	m := toolgate.NewManager(nil)

	t.Run("run with all return-direct", func(t *testing.T) {
		res, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: replyWith(call("a", "weather"), call("b", "forecast"))})
		if err != nil {
			t.Fatal(err)
		}
		if !res.ReturnDirect {
			t.Errorf("got ReturnDirect false, want true")
		}
		want := []toolgate.Generation{
			{Message: &toolgate.AssistantMessage{Text: "weather:a"}, FinishReason: toolgate.FinishReturnDirect},
			{Message: &toolgate.AssistantMessage{Text: "forecast:b"}, FinishReason: toolgate.FinishReturnDirect},
		}
		if diff := cmp.Diff(want, res.Generations()); diff != "" {
			t.Errorf("generations (-want +got):\n%s", diff)
		}
	})
	t.Run("run with mixed tools", func(t *testing.T) {
		res, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: replyWith(call("a", "weather"), call("b", "lookup"))})
		if err != nil {
			t.Fatal(err)
		}
		if res.ReturnDirect {
			t.Errorf("got ReturnDirect true, want false")
		}
	})
	t.Run("run with an unknown tool", func(t *testing.T) {
		res, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: replyWith(call("a", "weather"), call("b", "ghost"))})
		if err != nil {
			t.Fatal(err)
		}
		if res.ReturnDirect {
			t.Errorf("got ReturnDirect true, want false")
		}
	})
	t.Run("resume with all allowed", func(t *testing.T) {
		res, err := m.Resume(ctx, &toolgate.ResumeParams{Prompt: p, Reply: replyWith(call("a", "weather"), call("b", "charge")),
			Decisions: []toolgate.Decision{toolgate.Allow("a"), toolgate.Allow("b")}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.ReturnDirect {
			t.Errorf("got ReturnDirect false, want true")
		}
	})
	t.Run("resume with one denied", func(t *testing.T) {
		res, err := m.Resume(ctx, &toolgate.ResumeParams{Prompt: p, Reply: replyWith(call("a", "weather"), call("b", "charge")),
			Decisions: []toolgate.Decision{toolgate.Allow("a"), toolgate.Deny("b", "")}})
		if err != nil {
			t.Fatal(err)
		}
		if res.ReturnDirect {
			t.Errorf("got ReturnDirect true, want false")
		}
	})
	t.Run("generations of nil", func(t *testing.T) {
		var r *toolgate.RunResult
		if g := r.Generations(); g != nil {
			t.Errorf("got %v, want nil", g)
		}
	})
}

func TestRunLimits(t *testing.T) {
	var noopRuns atomic.Int32
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{countingTool("a", toolgate.ToolMetadata{}, &noopRuns), countingTool("b", toolgate.ToolMetadata{}, &noopRuns)}}
	calls := func(names ...string) *toolgate.AssistantMessage {
		r := &toolgate.AssistantMessage{}
		for i, n := range names {
			r.ToolCalls = append(r.ToolCalls, toolgate.ToolCall{ID: strconv.Itoa(i), Name: n})
		}
		return r
	}
	tests := []struct {
		name   string
		limits toolgate.Limits
		reply  *toolgate.AssistantMessage
		want   *toolgate.LimitError // nil: runs
	}{
		{"under MaxCalls", toolgate.Limits{MaxCalls: 3}, calls("a", "b", "a"), nil},
		{"over MaxCalls", toolgate.Limits{MaxCalls: 2}, calls("a", "b", "a"), &toolgate.LimitError{Limit: 2, Count: 3}},
		{"under MaxCallsPerTool", toolgate.Limits{MaxCallsPerTool: map[string]int{"a": 2}}, calls("a", "b", "a", "b"), nil},
		{"over MaxCallsPerTool", toolgate.Limits{MaxCallsPerTool: map[string]int{"b": 1}}, calls("a", "b", "a", "b"), &toolgate.LimitError{Tool: "b", Limit: 1, Count: 2}},
		{"zero per-tool limit is no limit", toolgate.Limits{MaxCallsPerTool: map[string]int{"a": 0}}, calls("a", "a"), nil},
		{"limit on another tool", toolgate.Limits{MaxCallsPerTool: map[string]int{"c": 1}}, calls("a", "a"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noopRuns.Store(0)
			m := toolgate.NewManager(&toolgate.ManagerOptions{Limits: tt.limits})
			res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: tt.reply})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got, want := int(noopRuns.Load()), len(tt.reply.ToolCalls); got != want {
					t.Errorf("%d calls ran, want %d", got, want)
				}
				if len(res.Message.Results) != len(tt.reply.ToolCalls) {
					t.Errorf("got %d results, want %d", len(res.Message.Results), len(tt.reply.ToolCalls))
				}
				return
			}
			checkLimitError(t, err, tt.want)
			if n := noopRuns.Load(); n != 0 {
				t.Errorf("%d calls ran, want 0", n)
			}
		})
	}
}

func checkLimitError(t *testing.T, err error, want *toolgate.LimitError) {
	t.Helper()
	var le *toolgate.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got error %v, want a *LimitError", err)
	}
	if diff := cmp.Diff(*want, *le); diff != "" {
		t.Errorf("LimitError (-want +got):\n%s", diff)
	}
	if !errors.Is(err, toolgate.ErrLimitExceeded) {
		t.Errorf("errors.Is(%v, ErrLimitExceeded) = false, want true", err)
	}
	if !strings.Contains(le.Error(), strconv.Itoa(want.Limit)) {
		t.Errorf("error text %q does not mention the limit %d", le.Error(), want.Limit)
	}
}

func TestPauseCountsNoLimit(t *testing.T) {
	f := newFlightsFixture()
	m := toolgate.NewManager(&toolgate.ManagerOptions{Limits: toolgate.Limits{MaxCalls: 1}})
	_, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: f.prompt(userSays("go")), Reply: replyWith(statusCall, bookCall, statusCall)})
	mustPause(t, err)
	f.checkRuns(t, 0, 0)
}

func TestResumeLimits(t *testing.T) {
	f := newFlightsFixture()
	res := func(name string, st toolgate.ResultStatus) toolgate.ToolResult {
		return toolgate.ToolResult{Name: name, Content: "x", Status: st}
	}
	// Two earlier calls ran in this turn: one flightStatus, one bookFlight
	// (an error result still ran). The denied and skipped calls did not run,
	// and the two bookFlight calls before the last user message belong to
	// an earlier turn.
	history := []toolgate.Message{
		userSays("first turn"),
		replyWith(bookCall, bookCall),
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{res("bookFlight", toolgate.ResultOK), res("bookFlight", toolgate.ResultOK)}},
		&toolgate.AssistantMessage{Text: "Done."},
		userSays("second turn"),
		replyWith(statusCall, bookCall, bookCall, statusCall),
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			res("flightStatus", toolgate.ResultOK),
			res("bookFlight", toolgate.ResultError),
			res("bookFlight", toolgate.ResultDenied),
			res("flightStatus", toolgate.ResultSkipped),
		}},
	}
	r := replyWith(statusCall, bookCall)
	allowBoth := []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Allow("call_book")}
	denyBook := []toolgate.Decision{toolgate.Allow("call_status"), toolgate.Deny("call_book", "")}
	tests := []struct {
		name      string
		limits    toolgate.Limits
		messages  []toolgate.Message
		decisions []toolgate.Decision
		want      *toolgate.LimitError
	}{
		{"total at the limit", toolgate.Limits{MaxCalls: 4}, history, allowBoth, nil},
		{"total over the limit", toolgate.Limits{MaxCalls: 3}, history, allowBoth, &toolgate.LimitError{Limit: 3, Count: 4}},
		{"total with a denial", toolgate.Limits{MaxCalls: 3}, history, denyBook, nil},
		{"per tool at the limit", toolgate.Limits{MaxCallsPerTool: map[string]int{"bookFlight": 2}}, history, allowBoth, nil},
		{"per tool over the limit", toolgate.Limits{MaxCallsPerTool: map[string]int{"bookFlight": 1}}, history, allowBoth, &toolgate.LimitError{Tool: "bookFlight", Limit: 1, Count: 2}},
		{"per tool with a denial", toolgate.Limits{MaxCallsPerTool: map[string]int{"bookFlight": 1}}, history, denyBook, nil},
		{"prompt with the reply at its end", toolgate.Limits{MaxCalls: 3}, append(history[:len(history):len(history)], r), allowBoth, &toolgate.LimitError{Limit: 3, Count: 4}},
		{"prompt without earlier rounds counts fewer", toolgate.Limits{MaxCalls: 2}, []toolgate.Message{userSays("second turn")}, allowBoth, nil},
		{"prompt without a user message counts everything", toolgate.Limits{MaxCalls: 5}, history[1:3], allowBoth, nil},
		{"prompt without a user message over the limit", toolgate.Limits{MaxCalls: 3}, history[1:3], allowBoth, &toolgate.LimitError{Limit: 3, Count: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.statusRuns.Store(0)
			f.bookRuns.Store(0)
			m := toolgate.NewManager(&toolgate.ManagerOptions{Limits: tt.limits})
			params := &toolgate.ResumeParams{Prompt: f.prompt(tt.messages...), Reply: r, Decisions: tt.decisions}
			checkErr := m.CheckResume(params)
			out, err := m.Resume(context.Background(), params)
			if tt.want == nil {
				if checkErr != nil {
					t.Errorf("CheckResume: %v", checkErr)
				}
				if err != nil {
					t.Fatalf("Resume: %v", err)
				}
				book := int32(0)
				if tt.decisions[1].Verdict == toolgate.VerdictAllow {
					book = 1
				}
				f.checkRuns(t, 1, book)
				if len(out.Message.Results) != 2 {
					t.Errorf("got %d results, want 2", len(out.Message.Results))
				}
				return
			}
			checkLimitError(t, err, tt.want)
			checkLimitError(t, checkErr, tt.want)
			f.checkRuns(t, 0, 0)
		})
	}
}

func TestRunErrorResults(t *testing.T) {
	var typedRuns, rawRuns atomic.Int32
	var gotArgs sync.Map // call id -> arguments the raw tool received
	errBackend := errors.New("backend down")
	type optional struct {
		Limit int `json:"limit,omitempty"`
	}
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{
		toolgate.NewToolFor("flightStatus", "", func(_ context.Context, _ *toolgate.ToolRequest, in flightInput) (string, error) {
			typedRuns.Add(1)
			return in.Flight, nil
		}, nil),
		toolgate.NewToolFor("listFlights", "", func(_ context.Context, _ *toolgate.ToolRequest, in optional) (int, error) {
			return in.Limit + 10, nil
		}, nil),
		toolgate.NewTool(toolgate.ToolDefinition{Name: "failing"}, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) {
			return "", errBackend
		}),
		toolgate.NewTool(toolgate.ToolDefinition{Name: "panicky"}, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) {
			panic("boom")
		}),
		toolgate.NewTool(toolgate.ToolDefinition{Name: "echo"}, toolgate.ToolMetadata{}, func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			rawRuns.Add(1)
			gotArgs.Store(req.Call.ID, string(req.Arguments))
			return string(req.Arguments), nil
		}),
	}}
	r := replyWith(
		toolgate.ToolCall{ID: "ghost", Name: "ghost", Arguments: `{}`},
		toolgate.ToolCall{ID: "failing", Name: "failing"},
		toolgate.ToolCall{ID: "panicky", Name: "panicky"},
		toolgate.ToolCall{ID: "badjson", Name: "flightStatus", Arguments: `{"flight":`},
		toolgate.ToolCall{ID: "missing", Name: "flightStatus", Arguments: `{}`},
		toolgate.ToolCall{ID: "wrongtype", Name: "flightStatus", Arguments: `{"flight":5}`},
		toolgate.ToolCall{ID: "extra", Name: "flightStatus", Arguments: `{"flight":"VX1","seat":"1A"}`},
		toolgate.ToolCall{ID: "notobject", Name: "flightStatus", Arguments: `["VX1"]`},
		toolgate.ToolCall{ID: "rawbad", Name: "echo", Arguments: `{nope}`},
		toolgate.ToolCall{ID: "empty", Name: "echo", Arguments: ""},
		toolgate.ToolCall{ID: "blank", Name: "echo", Arguments: " \n\t"},
		toolgate.ToolCall{ID: "typedempty", Name: "listFlights", Arguments: ""},
		toolgate.ToolCall{ID: "ok", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
	)
	handled := map[string]error{}
	var logs bytes.Buffer
	m := toolgate.NewManager(&toolgate.ManagerOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		ErrorHandler: func(ctx context.Context, call toolgate.ToolCall, err error) (string, error) {
			handled[call.ID] = err // calls run one at a time
			return toolgate.DefaultErrorHandler(ctx, call, err)
		},
	})
	res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: r})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Message.Results) != len(r.ToolCalls) {
		t.Fatalf("got %d results, want %d", len(res.Message.Results), len(r.ToolCalls))
	}
	tests := []struct {
		id      string
		status  toolgate.ResultStatus
		content string // substring of the content
		is      error  // what the handler's error matches; nil: no error
	}{
		{"ghost", toolgate.ResultError, `no tool named "ghost" is available`, toolgate.ErrUnknownTool},
		{"failing", toolgate.ResultError, "backend down", errBackend},
		{"panicky", toolgate.ResultError, "tool panicked", toolgate.ErrToolPanicked},
		{"badjson", toolgate.ResultError, "invalid arguments", toolgate.ErrInvalidArguments},
		{"missing", toolgate.ResultError, "invalid arguments", toolgate.ErrInvalidArguments},
		{"wrongtype", toolgate.ResultError, "invalid arguments", toolgate.ErrInvalidArguments},
		{"extra", toolgate.ResultError, "invalid arguments", toolgate.ErrInvalidArguments},
		{"notobject", toolgate.ResultError, "invalid arguments", toolgate.ErrInvalidArguments},
		{"rawbad", toolgate.ResultError, "invalid arguments", toolgate.ErrInvalidArguments},
		{"empty", toolgate.ResultOK, "{}", nil},
		{"blank", toolgate.ResultOK, "{}", nil},
		{"typedempty", toolgate.ResultOK, "10", nil},
		{"ok", toolgate.ResultOK, `"VX205"`, nil},
	}
	for i, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got := res.Message.Results[i]
			if got.CallID != tt.id || got.Name != r.ToolCalls[i].Name {
				t.Errorf("result %d is for %q (%s), want %q (%s)", i, got.CallID, got.Name, tt.id, r.ToolCalls[i].Name)
			}
			if got.Status != tt.status {
				t.Errorf("got status %v, want %v", got.Status, tt.status)
			}
			if !strings.Contains(got.Content, tt.content) {
				t.Errorf("got content %q, want it to contain %q", got.Content, tt.content)
			}
			herr := handled[tt.id]
			switch {
			case tt.is == nil && herr != nil:
				t.Errorf("handler got %v, want no call", herr)
			case tt.is != nil && !errors.Is(herr, tt.is):
				t.Errorf("handler got %v, want an error matching %v", herr, tt.is)
			case tt.is != nil && got.Content != herr.Error():
				t.Errorf("got content %q, want the default handler's %q", got.Content, herr.Error())
			}
		})
	}
	if n := typedRuns.Load(); n != 1 {
		t.Errorf("the typed function ran %d times, want 1 (invalid arguments must not reach it)", n)
	}
	if n := rawRuns.Load(); n != 2 {
		t.Errorf("the raw function ran %d times, want 2 (invalid JSON must not reach it)", n)
	}
	// The panic is logged with its value's type, not the value, which may
	// hold what the tool was given.
	if !strings.Contains(logs.String(), "tool panicked") || !strings.Contains(logs.String(), "panic=string") || strings.Contains(logs.String(), "boom") {
		t.Errorf("log %q does not report the panic, or repeats its value", logs.String())
	}
}

func TestErrorHandlerAbort(t *testing.T) {
	var after atomic.Int32
	errAbort := errors.New("stop everything")
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{
		toolgate.NewTool(toolgate.ToolDefinition{Name: "failing"}, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) {
			return "", errors.New("broken")
		}),
		countingTool("after", toolgate.ToolMetadata{}, &after),
	}}
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency=%d", conc), func(t *testing.T) {
			m := toolgate.NewManager(&toolgate.ManagerOptions{
				Concurrency: conc,
				ErrorHandler: func(_ context.Context, call toolgate.ToolCall, err error) (string, error) {
					return "", fmt.Errorf("%s: %w (%v)", call.Name, errAbort, err)
				},
			})
			res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: replyWith(
				toolgate.ToolCall{ID: "1", Name: "failing"},
				toolgate.ToolCall{ID: "2", Name: "after"},
			)})
			if !errors.Is(err, errAbort) {
				t.Errorf("got error %v, want the handler's abort error", err)
			}
			if res != nil {
				t.Errorf("got result %+v, want nil", res)
			}
		})
	}
	if n := after.Load(); n > 1 {
		t.Errorf("the call after the abort ran %d times", n)
	}
}

func TestErrorHandlerAbortStopsSequentialBatch(t *testing.T) {
	var after atomic.Int32
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{countingTool("after", toolgate.ToolMetadata{}, &after)}}
	errAbort := errors.New("abort")
	m := toolgate.NewManager(&toolgate.ManagerOptions{ErrorHandler: func(context.Context, toolgate.ToolCall, error) (string, error) {
		return "", errAbort
	}})
	_, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: replyWith(toolgate.ToolCall{Name: "ghost"}, toolgate.ToolCall{Name: "after"})})
	if !errors.Is(err, errAbort) {
		t.Errorf("got error %v, want %v", err, errAbort)
	}
	if n := after.Load(); n != 0 {
		t.Errorf("the call after the abort ran %d times, want 0", n)
	}
}

// amountPolicy asks for confirmation of transfers above 1000, and of any
// transfer whose arguments it cannot read.
func amountPolicy(call toolgate.ToolCall, _ toolgate.ToolMetadata) bool {
	if call.Name != "transferMoney" {
		return false
	}
	var args struct {
		Amount *float64 `json:"amount"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args.Amount == nil {
		return true
	}
	return *args.Amount > 1000
}

func TestManagerPolicies(t *testing.T) {
	f := newFlightsFixture()
	transfer := countingTool("transferMoney", toolgate.ToolMetadata{}, nil)
	tools := []*toolgate.Tool{f.status, f.book, transfer}
	small := toolgate.ToolCall{ID: "small", Name: "transferMoney", Arguments: `{"amount":500}`}
	large := toolgate.ToolCall{ID: "large", Name: "transferMoney", Arguments: `{"amount":5000}`}
	garbled := toolgate.ToolCall{ID: "garbled", Name: "transferMoney", Arguments: `{"amount":`}
	ghost := toolgate.ToolCall{ID: "ghost", Name: "ghost"}
	tests := []struct {
		name     string
		opts     *toolgate.ManagerOptions
		calls    []toolgate.ToolCall
		awaiting []string // nil: runs
	}{
		{"default honours the flag", nil, []toolgate.ToolCall{statusCall, bookCall}, []string{"call_book"}},
		{"default lets ungated calls run", nil, []toolgate.ToolCall{statusCall, small, large}, nil},
		{"ConfirmTools adds a tool", &toolgate.ManagerOptions{ConfirmTools: []string{"flightStatus"}}, []toolgate.ToolCall{statusCall, bookCall}, []string{"call_status", "call_book"}},
		{"Policy by name", &toolgate.ManagerOptions{Policy: byName("flightStatus", "transferMoney")}, []toolgate.ToolCall{statusCall, small}, []string{"call_status", "small"}},
		{"Policy by arguments, small", &toolgate.ManagerOptions{Policy: amountPolicy}, []toolgate.ToolCall{small, statusCall}, nil},
		{"Policy by arguments, large", &toolgate.ManagerOptions{Policy: amountPolicy}, []toolgate.ToolCall{small, large, garbled}, []string{"large", "garbled"}},
		{"Policy Or", &toolgate.ManagerOptions{Policy: toolgate.Or(nil, byName("flightStatus"), amountPolicy)}, []toolgate.ToolCall{statusCall, small, large}, []string{"call_status", "large"}},
		{"a policy cannot remove the flag", &toolgate.ManagerOptions{Policy: never}, []toolgate.ToolCall{bookCall}, []string{"call_book"}},
		{"disabled flag", &toolgate.ManagerOptions{DisableMetadataFlag: true}, []toolgate.ToolCall{statusCall, bookCall}, nil},
		{"disabled flag keeps ConfirmTools", &toolgate.ManagerOptions{DisableMetadataFlag: true, ConfirmTools: []string{"flightStatus"}}, []toolgate.ToolCall{statusCall, bookCall}, []string{"call_status"}},
		{"disabled flag keeps Policy", &toolgate.ManagerOptions{DisableMetadataFlag: true, Policy: amountPolicy}, []toolgate.ToolCall{bookCall, large}, []string{"large"}},
		{"unknown tool judged with zero metadata", &toolgate.ManagerOptions{Policy: byName("ghost")}, []toolgate.ToolCall{statusCall, ghost}, []string{"ghost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts == nil {
				opts = &toolgate.ManagerOptions{}
			}
			opts.Logger = discardLogger()
			m := toolgate.NewManager(opts)
			p := &toolgate.Prompt{Messages: []toolgate.Message{userSays("go")}, Tools: tools}
			r := replyWith(tt.calls...)
			res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: r})
			for i, c := range tt.calls {
				want := hasKey(tt.awaiting, r.CallKeys()[i])
				if got := m.NeedsConfirmation(p, c); got != want {
					t.Errorf("NeedsConfirmation(%s) = %v, want %v", c.ID, got, want)
				}
			}
			if tt.awaiting == nil {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if len(res.Message.Results) != len(tt.calls) {
					t.Errorf("got %d results, want %d", len(res.Message.Results), len(tt.calls))
				}
				return
			}
			pe := mustPause(t, err)
			if diff := cmp.Diff(tt.awaiting, pe.Awaiting); diff != "" {
				t.Errorf("awaiting (-want +got):\n%s", diff)
			}
		})
	}
}

func hasKey(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestDisableMetadataFlagWarns(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	toolgate.NewManager(&toolgate.ManagerOptions{Logger: logger})
	if buf.Len() != 0 {
		t.Errorf("a manager honouring the flag logged %q, want nothing", buf.String())
	}
	f := newFlightsFixture()
	m := toolgate.NewManager(&toolgate.ManagerOptions{Logger: logger, DisableMetadataFlag: true})
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "disabled") {
		t.Errorf("got log %q, want a warning that the flag is disabled", buf.String())
	}
	if _, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: f.prompt(userSays("book")), Reply: replyWith(bookCall)}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	f.checkRuns(t, 0, 1)
}

func TestPolicySeesPromptMetadata(t *testing.T) {
	f := newFlightsFixture()
	seen := map[string]toolgate.ToolMetadata{}
	m := toolgate.NewManager(&toolgate.ManagerOptions{Policy: func(call toolgate.ToolCall, meta toolgate.ToolMetadata) bool {
		seen[call.Name] = meta
		return false
	}})
	// The prompt carries flightStatus only: a call of bookFlight is judged
	// with zero metadata, even though a flagged tool of that name exists.
	p := &toolgate.Prompt{Messages: []toolgate.Message{userSays("go")}, Tools: []*toolgate.Tool{f.status.WithMetadata(toolgate.ToolMetadata{ReturnDirect: true})}}
	res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: replyWith(statusCall, bookCall)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]toolgate.ToolMetadata{"flightStatus": {ReturnDirect: true}, "bookFlight": {}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("metadata seen by the policy (-want +got):\n%s", diff)
	}
	if got := res.Message.Results[1]; got.Status != toolgate.ResultError || !strings.Contains(got.Content, `no tool named "bookFlight" is available`) {
		t.Errorf("got result %+v, want an unknown-tool error", got)
	}
	f.checkRuns(t, 1, 0)
}

func TestUnmatchedConfirmTools(t *testing.T) {
	f := newFlightsFixture()
	tools := []*toolgate.Tool{f.status, nil, f.book}
	tests := []struct {
		confirm []string
		want    []string
	}{
		{nil, nil},
		{[]string{"bookFlight", "flightStatus"}, nil},
		{[]string{"bookFlight", "bokFlight", "flightstatus"}, []string{"bokFlight", "flightstatus"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.confirm, ","), func(t *testing.T) {
			m := toolgate.NewManager(&toolgate.ManagerOptions{ConfirmTools: tt.confirm})
			if diff := cmp.Diff(tt.want, m.UnmatchedConfirmTools(tools)); diff != "" {
				t.Errorf("UnmatchedConfirmTools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestManagerCopiesOptions(t *testing.T) {
	f := newFlightsFixture()
	opts := &toolgate.ManagerOptions{
		ConfirmTools: []string{"flightStatus"},
		Limits:       toolgate.Limits{MaxCallsPerTool: map[string]int{"flightStatus": 5}},
	}
	m := toolgate.NewManager(opts)
	opts.ConfirmTools[0] = "other"
	opts.Limits.MaxCallsPerTool["flightStatus"] = 0
	_, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: f.prompt(), Reply: replyWith(statusCall)})
	mustPause(t, err)
}

// callGate is a tool body that lets a test see which calls are running at once:
// every call announces itself on started, then waits for release.
type callGate struct {
	started         chan int
	release         chan struct{}
	active, maxSeen atomic.Int32
}

func newCallGate(n int) *callGate {
	return &callGate{started: make(chan int, n), release: make(chan struct{})}
}

func (g *callGate) tool(name string) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name}, toolgate.ToolMetadata{}, func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
		n := g.active.Add(1)
		defer g.active.Add(-1)
		for {
			old := g.maxSeen.Load()
			if n <= old || g.maxSeen.CompareAndSwap(old, n) {
				break
			}
		}
		i, _ := strconv.Atoi(req.Call.ID)
		g.started <- i
		select {
		case <-g.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "result " + req.Call.ID, nil
	})
}

// waitStarted receives n start notices; it fails the test instead of hanging
// when the calls do not overlap.
func (g *callGate) waitStarted(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case <-g.started:
		case <-timeout:
			t.Fatalf("fewer than %d calls were running at once", n)
		}
	}
}

func TestConcurrency(t *testing.T) {
	const calls, limit = 8, 4
	g := newCallGate(calls)
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{g.tool("slow")}}
	r := &toolgate.AssistantMessage{}
	for i := range calls {
		r.ToolCalls = append(r.ToolCalls, toolgate.ToolCall{ID: strconv.Itoa(i), Name: "slow"})
	}
	m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: limit})
	type outcome struct {
		res *toolgate.RunResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: r})
		done <- outcome{res, err}
	}()
	// All four slots fill before any call may finish: the calls overlap.
	g.waitStarted(t, limit)
	close(g.release)
	out := <-done
	if out.err != nil {
		t.Fatalf("Run: %v", out.err)
	}
	if got := g.maxSeen.Load(); got != limit {
		t.Errorf("at most %d calls ran at once, want exactly %d", got, limit)
	}
	if got := len(g.started); got != calls-limit {
		t.Errorf("%d more calls started, want %d", got, calls-limit)
	}
	for i, res := range out.res.Message.Results {
		want := toolgate.ToolResult{CallID: strconv.Itoa(i), Name: "slow", Content: "result " + strconv.Itoa(i)}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("result %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestConcurrencyResumeKeepsOrder(t *testing.T) {
	const calls = 8
	g := newCallGate(calls)
	close(g.release)
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{g.tool("slow")}}
	r := &toolgate.AssistantMessage{}
	var ds []toolgate.Decision
	for i := range calls {
		id := strconv.Itoa(i)
		r.ToolCalls = append(r.ToolCalls, toolgate.ToolCall{ID: id, Name: "slow"})
		if i%3 == 1 {
			ds = append(ds, toolgate.Deny(id, "no "+id))
		} else {
			ds = append(ds, toolgate.Allow(id))
		}
	}
	m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: 3})
	res, err := m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: r, Decisions: ds, Awaiting: r.CallKeys()})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	for i, got := range res.Message.Results {
		id := strconv.Itoa(i)
		want := toolgate.ToolResult{CallID: id, Name: "slow", Content: "result " + id}
		if i%3 == 1 {
			want.Content, want.Status = "no "+id, toolgate.ResultDenied
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result %d (-want +got):\n%s", i, diff)
		}
	}
	if got, want := len(g.started), calls-3; got != want {
		t.Errorf("%d calls ran, want %d", got, want)
	}
}

func TestSequentialByDefault(t *testing.T) {
	var active, maxSeen atomic.Int32
	tool := toolgate.NewTool(toolgate.ToolDefinition{Name: "t"}, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) {
		if n := active.Add(1); n > maxSeen.Load() {
			maxSeen.Store(n)
		}
		active.Add(-1)
		return "", nil
	})
	r := replyWith(toolgate.ToolCall{Name: "t"}, toolgate.ToolCall{Name: "t"}, toolgate.ToolCall{Name: "t"})
	if _, err := toolgate.NewManager(nil).Run(context.Background(), &toolgate.RunParams{Prompt: &toolgate.Prompt{Tools: []*toolgate.Tool{tool}}, Reply: r}); err != nil {
		t.Fatal(err)
	}
	if got := maxSeen.Load(); got != 1 {
		t.Errorf("%d calls ran at once, want 1", got)
	}
}

func TestToolRequest(t *testing.T) {
	var mu sync.Mutex
	got := map[string]toolgate.ToolRequest{}
	tool := func(name string, meta toolgate.ToolMetadata) *toolgate.Tool {
		return toolgate.NewTool(toolgate.ToolDefinition{Name: name}, meta, func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			r := *req
			r.Arguments = append(json.RawMessage(nil), req.Arguments...)
			got[req.Key] = r
			return "", nil
		})
	}
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{tool("plain", toolgate.ToolMetadata{}), tool("gated", toolgate.ToolMetadata{RequiresConfirmation: true})}}
	principal := &toolgate.Principal{ID: "alice", Roles: []string{"traveller"}}
	calls := []toolgate.ToolCall{
		{ID: "dup", Name: "plain", Arguments: `{"a":1}`},
		{ID: "dup", Name: "plain"},
		{ID: "solo", Name: "plain", Arguments: `{"b":2}`},
		{ID: "", Name: "gated"},
	}
	want := map[string]toolgate.ToolRequest{
		"#0":   {Call: calls[0], Key: "#0", ConversationID: "conv-42", Principal: principal, Arguments: json.RawMessage(`{"a":1}`)},
		"#1":   {Call: calls[1], Key: "#1", ConversationID: "conv-42", Principal: principal, Arguments: json.RawMessage(`{}`)},
		"solo": {Call: calls[2], Key: "solo", ConversationID: "conv-42", Principal: principal, Arguments: json.RawMessage(`{"b":2}`)},
	}
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprintf("run concurrency=%d", conc), func(t *testing.T) {
			clear(got)
			m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: conc})
			if _, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: replyWith(calls[:3]...), ConversationID: "conv-42", Principal: principal}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(toolgate.ToolRequest{})); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if got["solo"].Principal != principal {
				t.Errorf("the tool got another principal value, want the caller's")
			}
		})
	}
	t.Run("resume", func(t *testing.T) {
		clear(got)
		m := toolgate.NewManager(nil)
		r := replyWith(calls...)
		_, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: p, Reply: r})
		pe := mustPause(t, err)
		if diff := cmp.Diff([]string{"#3"}, pe.Awaiting); diff != "" {
			t.Errorf("awaiting (-want +got):\n%s", diff)
		}
		ds := []toolgate.Decision{toolgate.Allow("#0"), toolgate.Deny("#1", ""), toolgate.Allow("solo"), toolgate.Allow("#3")}
		if _, err := m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: r, Decisions: ds, Awaiting: []string{"#1", "#3"}, ConversationID: "conv-7", Principal: principal}); err != nil {
			t.Fatal(err)
		}
		want := map[string]toolgate.ToolRequest{
			"#0":   {Call: calls[0], Key: "#0", ConversationID: "conv-7", Principal: principal, Arguments: json.RawMessage(`{"a":1}`)},
			"solo": {Call: calls[2], Key: "solo", ConversationID: "conv-7", Principal: principal, Arguments: json.RawMessage(`{"b":2}`)},
			"#3":   {Call: calls[3], Key: "#3", ConversationID: "conv-7", Principal: principal, Arguments: json.RawMessage(`{}`)},
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(toolgate.ToolRequest{})); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
}

func TestCanceledContext(t *testing.T) {
	t.Run("before the run", func(t *testing.T) {
		f := newFlightsFixture()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, conc := range []int{1, 4} {
			m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: conc})
			_, err := m.Run(ctx, &toolgate.RunParams{Prompt: f.prompt(), Reply: replyWith(statusCall, statusCall)})
			if err != ctx.Err() {
				t.Errorf("concurrency %d: got error %v, want %v", conc, err, ctx.Err())
			}
			_, err = m.Resume(ctx, &toolgate.ResumeParams{Prompt: f.prompt(), Reply: replyWith(bookCall), Decisions: []toolgate.Decision{toolgate.Allow("call_book")}})
			if err != ctx.Err() {
				t.Errorf("concurrency %d: Resume got error %v, want %v", conc, err, ctx.Err())
			}
		}
		f.checkRuns(t, 0, 0)
	})
	t.Run("between calls", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var second atomic.Int32
		p := &toolgate.Prompt{Tools: []*toolgate.Tool{
			toolgate.NewTool(toolgate.ToolDefinition{Name: "canceler"}, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) {
				cancel()
				return "done", nil
			}),
			countingTool("second", toolgate.ToolMetadata{}, &second),
		}}
		_, err := toolgate.NewManager(nil).Run(ctx, &toolgate.RunParams{Prompt: p, Reply: replyWith(toolgate.ToolCall{Name: "canceler"}, toolgate.ToolCall{Name: "second"})})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got error %v, want context.Canceled", err)
		}
		if n := second.Load(); n != 0 {
			t.Errorf("the second call ran %d times after cancellation, want 0", n)
		}
	})
	t.Run("tool returning the context error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		handled := false
		p := &toolgate.Prompt{Tools: []*toolgate.Tool{
			toolgate.NewTool(toolgate.ToolDefinition{Name: "waiter"}, toolgate.ToolMetadata{}, func(ctx context.Context, _ *toolgate.ToolRequest) (string, error) {
				cancel()
				<-ctx.Done()
				return "", fmt.Errorf("waiting: %w", ctx.Err())
			}),
		}}
		m := toolgate.NewManager(&toolgate.ManagerOptions{ErrorHandler: func(ctx context.Context, call toolgate.ToolCall, err error) (string, error) {
			handled = true
			return err.Error(), nil
		}})
		_, err := m.Run(ctx, &toolgate.RunParams{Prompt: p, Reply: replyWith(toolgate.ToolCall{Name: "waiter"})})
		if err != context.Canceled {
			t.Errorf("got error %v, want context.Canceled", err)
		}
		if handled {
			t.Errorf("the error handler saw a cancellation, want it returned to the caller")
		}
	})
	t.Run("concurrent calls", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := newCallGate(8)
		p := &toolgate.Prompt{Tools: []*toolgate.Tool{g.tool("slow")}}
		r := &toolgate.AssistantMessage{}
		for i := range 8 {
			r.ToolCalls = append(r.ToolCalls, toolgate.ToolCall{ID: strconv.Itoa(i), Name: "slow"})
		}
		done := make(chan error, 1)
		go func() {
			_, err := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: 4}).Run(ctx, &toolgate.RunParams{Prompt: p, Reply: r})
			done <- err
		}()
		g.waitStarted(t, 4)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("got error %v, want context.Canceled", err)
		}
		if n := len(g.started); n != 0 {
			t.Errorf("%d calls started after cancellation, want 0", n)
		}
	})
}

// byName is a policy that asks about the calls of the named tools.
func byName(names ...string) func(toolgate.ToolCall, toolgate.ToolMetadata) bool {
	return func(call toolgate.ToolCall, _ toolgate.ToolMetadata) bool { return slices.Contains(names, call.Name) }
}

// never is a policy that never asks.
func never(toolgate.ToolCall, toolgate.ToolMetadata) bool { return false }
