package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

// argsRecorder is a typed bookFlight tool (requires confirmation) that
// records the requests it ran for.
type argsRecorder struct {
	mu    sync.Mutex
	calls []toolgate.ToolCall // req.Call of every run
	args  []string            // req.Arguments of every run
}

type seatsInput struct {
	Flight string `json:"flight"`
	Seats  int    `json:"seats,omitempty" jsonschema:"how many seats, 1 to 9"`
}

func (r *argsRecorder) tool() *toolgate.Tool {
	return toolgate.NewToolFor("bookFlight", "Books seats on a flight.",
		func(_ context.Context, req *toolgate.ToolRequest, in seatsInput) (string, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls = append(r.calls, req.Call)
			r.args = append(r.args, string(req.Arguments))
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
}

func (r *argsRecorder) ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.args...)
}

func TestAllowWithArguments(t *testing.T) {
	in := json.RawMessage(`{ "flight" : "VX206" }`)
	d := toolgate.AllowWithArguments("k", in)
	want := toolgate.Decision{Key: "k", Verdict: toolgate.VerdictAllow, Arguments: json.RawMessage(`{"flight":"VX206"}`)}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("AllowWithArguments (-want +got):\n%s", diff)
	}
	in[3] = 'X' // the decision owns its copy
	if string(d.Arguments) != `{"flight":"VX206"}` {
		t.Errorf("changing the input changed the decision: %s", d.Arguments)
	}
	for _, empty := range []json.RawMessage{nil, {}} {
		if diff := cmp.Diff(toolgate.Allow("k"), toolgate.AllowWithArguments("k", empty)); diff != "" {
			t.Errorf("AllowWithArguments(%q) is not a plain allow (-want +got):\n%s", empty, diff)
		}
	}
}

func TestDecisionJSONArguments(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    toolgate.Decision
		problem toolgate.DecisionProblem // "" when it decodes
	}{
		{"edited", `{"key":"k","verdict":"allow","arguments":{"seats": 2}}`, toolgate.AllowWithArguments("k", json.RawMessage(`{"seats":2}`)), ""},
		{"nested", `{"key":"k","verdict":"allow","arguments":{"a":[{"b":1},{"b":2}],"c":{"b":3}}}`, toolgate.AllowWithArguments("k", json.RawMessage(`{"a":[{"b":1},{"b":2}],"c":{"b":3}}`)), ""},
		{"null is none", `{"key":"k","verdict":"allow","arguments":null}`, toolgate.Allow("k"), ""},
		{"empty object", `{"key":"k","verdict":"allow","arguments":{}}`, toolgate.AllowWithArguments("k", json.RawMessage(`{}`)), ""},
		{"on deny", `{"key":"k","verdict":"deny","arguments":{"seats":2}}`, toolgate.Decision{}, toolgate.ProblemArgumentsOnDeny},
		{"array", `{"key":"k","verdict":"allow","arguments":[1]}`, toolgate.Decision{}, toolgate.ProblemInvalidArguments},
		{"string", `{"key":"k","verdict":"allow","arguments":"{\"seats\":2}"}`, toolgate.Decision{}, toolgate.ProblemInvalidArguments},
		{"number", `{"key":"k","verdict":"allow","arguments":2}`, toolgate.Decision{}, toolgate.ProblemInvalidArguments},
		{"repeated name", `{"key":"k","verdict":"allow","arguments":{"seats":2,"seats":20}}`, toolgate.Decision{}, toolgate.ProblemInvalidArguments},
		{"repeated escaped name", `{"key":"k","verdict":"allow","arguments":{"seats":2,"\u0073eats":20}}`, toolgate.Decision{}, toolgate.ProblemInvalidArguments},
		{"repeated nested name", `{"key":"k","verdict":"allow","arguments":{"a":[{"b":1,"b":2}]}}`, toolgate.Decision{}, toolgate.ProblemInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got toolgate.Decision
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.problem != "" {
				var de *toolgate.DecisionError
				if !errors.As(err, &de) || de.Problem != tt.problem {
					t.Fatalf("got error %v, want a *DecisionError with problem %s", err, tt.problem)
				}
				if de.Key != "k" {
					t.Errorf("the error names key %q, want k", de.Key)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			var again toolgate.Decision
			if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(got, again) {
				t.Errorf("round trip through %s gave %+v, %v", b, again, err)
			}
		})
	}
	// Arguments a decision was built with directly are checked on Marshal.
	for _, d := range []toolgate.Decision{
		{Key: "k", Verdict: toolgate.VerdictDeny, Message: "no", Arguments: json.RawMessage(`{}`)},
		{Key: "k", Verdict: toolgate.VerdictAllow, Arguments: json.RawMessage(`{"a":`)},
		{Key: "k", Verdict: toolgate.VerdictAllow, Arguments: json.RawMessage("{\"a\":\"\xff\"}")},
	} {
		if b, err := json.Marshal(d); !errors.Is(err, toolgate.ErrInvalidDecisions) {
			t.Errorf("Marshal(%+v) = %s, %v; want an error matching ErrInvalidDecisions", d, b, err)
		}
	}
}

// TestDecisionCannotRename: a decision names a call by its key and has no
// way to name a tool; arguments that look like another call change only
// the arguments.
func TestDecisionCannotRename(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[toolgate.Decision]().Fields() {
		fields = append(fields, f.Name)
	}
	if diff := cmp.Diff([]string{"Key", "Verdict", "Message", "Arguments"}, fields); diff != "" {
		t.Errorf("Decision's fields changed (-want +got); a new field must not be able to name a tool:\n%s", diff)
	}
	var d toolgate.Decision
	if err := json.Unmarshal([]byte(`{"key":"c1","verdict":"allow","name":"transfer","tool":"transfer"}`), &d); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if diff := cmp.Diff(toolgate.Allow("c1"), d); diff != "" {
		t.Errorf("fields naming a tool were read (-want +got):\n%s", diff)
	}

	var rec argsRecorder
	var transfers atomic.Int32
	transfer := countingTool("transfer", toolgate.ToolMetadata{}, &transfers)
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{rec.tool(), transfer}}
	reply := replyWith(call("c1", "bookFlight", vx))
	res, err := toolgate.NewManager(nil).Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: reply,
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("c1", json.RawMessage(`{"flight":"VX206"}`))}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got := rec.ran(); len(got) != 1 || transfers.Load() != 0 {
		t.Errorf("bookFlight ran %d times and transfer %d times, want 1 and 0", len(got), transfers.Load())
	}
	if r := res.Message.Results[0]; r.Name != "bookFlight" || r.CallID != "c1" {
		t.Errorf("the result answers %s/%s, want c1/bookFlight", r.CallID, r.Name)
	}
}

func TestResumeEditedArguments(t *testing.T) {
	for _, concurrency := range []int{1, 3} {
		t.Run("concurrency "+string(rune('0'+concurrency)), func(t *testing.T) {
			var rec argsRecorder
			var statusRuns atomic.Int32
			status := countingTool("flightStatus", toolgate.ToolMetadata{}, &statusRuns)
			p := &toolgate.Prompt{Messages: []toolgate.Message{userSays("Book VX205.")}, Tools: []*toolgate.Tool{status, rec.tool()}}
			reply := replyWith(call("s", "flightStatus", vx), call("b", "bookFlight", `{"flight":"VX205","seats":4}`))
			before := cloneReply(reply)
			edit := `{"flight":"VX205","seats":2}`
			m := toolgate.NewManager(&toolgate.ManagerOptions{Concurrency: concurrency})
			res, err := m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: reply, Decisions: []toolgate.Decision{
				toolgate.Allow("s"), toolgate.AllowWithArguments("b", json.RawMessage(`{"flight": "VX205", "seats": 2}`)),
			}})
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if diff := cmp.Diff([]string{edit}, rec.ran()); diff != "" {
				t.Errorf("bookFlight received (-want +got):\n%s", diff)
			}
			if want := (toolgate.ToolCall{ID: "b", Name: "bookFlight", Arguments: edit}); rec.calls[0] != want {
				t.Errorf("req.Call = %+v, want %+v", rec.calls[0], want)
			}
			if statusRuns.Load() != 1 {
				t.Errorf("flightStatus ran %d times, want 1", statusRuns.Load())
			}
			want := []toolgate.ToolResult{
				{CallID: "s", Name: "flightStatus", Content: "flightStatus:s", Status: toolgate.ResultOK},
				{CallID: "b", Name: "bookFlight", Content: toolgate.EditNote + edit + "\n" + `"Booked VX205"`, Status: toolgate.ResultOK, EditedArguments: edit},
			}
			if diff := cmp.Diff(want, res.Message.Results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			// The reply, in the history too, keeps what the model asked.
			if diff := cmp.Diff(before, reply); diff != "" {
				t.Errorf("the reply changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(before, res.History[1]); diff != "" {
				t.Errorf("the history's reply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResumeInvalidEdits(t *testing.T) {
	raw := func(name string, runs *atomic.Int32) *toolgate.Tool {
		return countingTool(name, toolgate.ToolMetadata{RequiresConfirmation: true}, runs)
	}
	tests := []struct {
		name    string
		d       toolgate.Decision
		problem toolgate.DecisionProblem
		tool    string // the DecisionError's Tool
		detail  string // in the DecisionError's Detail
	}{
		{"edit on deny", toolgate.Decision{Key: "b", Verdict: toolgate.VerdictDeny, Message: "no", Arguments: json.RawMessage(`{"flight":"VX206"}`)}, toolgate.ProblemArgumentsOnDeny, "", ""},
		{"not JSON", toolgate.AllowWithArguments("b", json.RawMessage(`{"flight":`)), toolgate.ProblemInvalidArguments, "", "not valid JSON"},
		{"not an object", toolgate.AllowWithArguments("b", json.RawMessage(`["VX206"]`)), toolgate.ProblemInvalidArguments, "", "not a JSON object"},
		{"two values", toolgate.AllowWithArguments("b", json.RawMessage(`{} {}`)), toolgate.ProblemInvalidArguments, "", "not valid JSON"},
		{"repeated name", toolgate.AllowWithArguments("b", json.RawMessage(`{"flight":"VX205","flight":"VX206"}`)), toolgate.ProblemInvalidArguments, "", `"flight" appears twice`},
		{"wrong type", toolgate.AllowWithArguments("b", json.RawMessage(`{"flight":205}`)), toolgate.ProblemInvalidArguments, "bookFlight", "flight"},
		{"missing required", toolgate.AllowWithArguments("b", json.RawMessage(`{"seats":2}`)), toolgate.ProblemInvalidArguments, "bookFlight", "flight"},
		{"unknown property", toolgate.AllowWithArguments("b", json.RawMessage(`{"flight":"VX205","price":0}`)), toolgate.ProblemInvalidArguments, "bookFlight", "price"},
		{"raw tool: not an object", toolgate.AllowWithArguments("r", json.RawMessage(`true`)), toolgate.ProblemInvalidArguments, "", "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec argsRecorder
			var rawRuns atomic.Int32
			p := &toolgate.Prompt{Tools: []*toolgate.Tool{rec.tool(), raw("notes", &rawRuns)}}
			reply := replyWith(call("b", "bookFlight", vx), call("r", "notes", `{}`))
			ds := []toolgate.Decision{toolgate.Allow("b"), toolgate.Allow("r")}
			if tt.d.Key == "b" {
				ds[0] = tt.d
			} else {
				ds[1] = tt.d
			}
			checkErr := toolgate.CheckDecisions(p, reply, ds)
			m := toolgate.NewManager(nil)
			resumeErr := m.CheckResume(&toolgate.ResumeParams{Prompt: p, Reply: reply, Decisions: ds})
			res, err := m.Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: reply, Decisions: ds})
			for _, e := range []error{checkErr, resumeErr, err} {
				var de *toolgate.DecisionError
				if !errors.As(e, &de) || !errors.Is(e, toolgate.ErrInvalidDecisions) {
					t.Fatalf("got %v, want a *DecisionError", e)
				}
				if de.Problem != tt.problem || de.Key != tt.d.Key || de.Tool != tt.tool || !strings.Contains(de.Detail, tt.detail) {
					t.Errorf("got %+v, want problem %s, key %s, tool %q, detail containing %q", *de, tt.problem, tt.d.Key, tt.tool, tt.detail)
				}
				if !strings.Contains(e.Error(), tt.d.Key) || !strings.Contains(e.Error(), tt.detail) {
					t.Errorf("the message %q does not name the key and the problem", e)
				}
			}
			if res != nil || len(rec.ran()) != 0 || rawRuns.Load() != 0 {
				t.Errorf("invalid decisions, but bookFlight ran %d and notes %d times", len(rec.ran()), rawRuns.Load())
			}
		})
	}
}

// TestResumeRawToolEdit: a raw tool's edit is checked to be a well-formed
// object only; its schema is not enforced.
func TestResumeRawToolEdit(t *testing.T) {
	var got string
	notes := toolgate.NewTool(toolgate.ToolDefinition{Name: "notes"}, toolgate.ToolMetadata{},
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			got = string(req.Arguments)
			return "ok", nil
		})
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{notes}}
	res, err := toolgate.NewManager(nil).Resume(context.Background(), &toolgate.ResumeParams{Prompt: p, Reply: replyWith(call("n", "notes", `{"text":"a"}`)),
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("n", json.RawMessage(`{"anything":[1,2]}`))}, Awaiting: []string{"n"}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got != `{"anything":[1,2]}` || res.Message.Results[0].EditedArguments != got {
		t.Errorf("notes received %s, result %+v", got, res.Message.Results[0])
	}
}

// TestResumeEditAsksPolicyAgain: the policy is asked about the edited
// call. When it asks a decision for the edited arguments, the edit is
// refused (the person decided about other arguments) and nothing runs; a
// policy that fails on the edit refuses the decisions too (without
// repeating what it panicked with).
func TestResumeEditAsksPolicyAgain(t *testing.T) {
	var seen []string
	asks := func(c toolgate.ToolCall, _ toolgate.ToolMetadata) bool {
		seen = append(seen, c.Arguments)
		return true
	}
	var rec argsRecorder
	// Without the metadata flag, so that the policy decides.
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{rec.tool().WithMetadata(toolgate.ToolMetadata{})}}
	reply := replyWith(call("b", "bookFlight", vx))
	edit := `{"flight":"VX206"}`
	params := &toolgate.ResumeParams{Prompt: p, Reply: reply, Decisions: []toolgate.Decision{toolgate.AllowWithArguments("b", json.RawMessage(edit))}, Awaiting: []string{"b"}}
	_, err := toolgate.NewManager(&toolgate.ManagerOptions{Policy: asks}).Resume(context.Background(), params)
	if de := (*toolgate.DecisionError)(nil); !errors.As(err, &de) || de.Problem != toolgate.ProblemEditNeedsConfirmation || de.Key != "b" {
		t.Fatalf("Resume: got %v, want a DecisionError with problem edit_needs_confirmation for b", err)
	}
	if diff := cmp.Diff([]string{edit}, seen); diff != "" {
		t.Errorf("the policy was asked about (-want +got):\n%s", diff)
	}
	if len(rec.ran()) != 0 {
		t.Fatalf("bookFlight ran %d times, want 0", len(rec.ran()))
	}

	fragile := func(c toolgate.ToolCall, _ toolgate.ToolMetadata) bool {
		var v struct{ Flight string }
		if err := json.Unmarshal([]byte(c.Arguments), &v); err != nil || v.Flight == "VX206" {
			panic("unexpected flight")
		}
		return false
	}
	m := toolgate.NewManager(&toolgate.ManagerOptions{Policy: fragile, Logger: discardLogger()})
	for _, run := range []func() error{
		func() error { return m.CheckResume(params) },
		func() error { _, err := m.Resume(context.Background(), params); return err },
	} {
		var de *toolgate.DecisionError
		if err := run(); !errors.As(err, &de) || de.Problem != toolgate.ProblemInvalidArguments || !strings.Contains(de.Detail, "policy") || strings.Contains(err.Error(), "unexpected flight") {
			t.Errorf("got %v, want a DecisionError with problem invalid_arguments naming the policy's failure", err)
		}
	}
	if len(rec.ran()) != 0 {
		t.Errorf("bookFlight ran %d times after the policy failed, want 0", len(rec.ran()))
	}
}

// TestClientResumeEdited: through the client, the edited call runs once,
// the model reads the note, and the stored conversation keeps the model's
// reply and records the edit.
func TestClientResumeEdited(t *testing.T) {
	ctx := context.Background()
	var rec argsRecorder
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b", "bookFlight", `{"flight":"VX205","seats":4}`)}},
		scripted.Reply{Text: "Booked two seats."},
	)
	store := memory.New()
	client := toolgate.NewClient(model, []*toolgate.Tool{rec.tool()}, &toolgate.ClientOptions{Store: store})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "e", Input: "Book four seats on VX205."})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v, paused %v", err, resp != nil && resp.Paused())
	}
	edit := `{"flight":"VX205","seats":2}`
	bad := []toolgate.Decision{toolgate.AllowWithArguments("b", json.RawMessage(`{"flight":"VX205","seats":"two"}`))}
	var de *toolgate.DecisionError
	if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "e"), ConversationID: "e", Decisions: bad}); !errors.As(err, &de) || de.Problem != toolgate.ProblemInvalidArguments {
		t.Fatalf("Resume with a bad edit: got %v, want a DecisionError with problem invalid_arguments", err)
	}
	if len(rec.ran()) != 0 {
		t.Fatalf("a bad edit ran bookFlight")
	}
	// The pause is still open and can be decided.
	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "e", Decisions: []toolgate.Decision{toolgate.AllowWithArguments("b", json.RawMessage(edit))}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if resp.Text() != "Booked two seats." {
		t.Errorf("answer %q", resp.Text())
	}
	if diff := cmp.Diff([]string{edit}, rec.ran()); diff != "" {
		t.Errorf("bookFlight received (-want +got):\n%s", diff)
	}
	prompts := model.Prompts()
	last := prompts[len(prompts)-1].Messages
	tm, ok := last[len(last)-1].(*toolgate.ToolMessage)
	if !ok {
		t.Fatalf("the model's last prompt ends with %T, want the tool message", last[len(last)-1])
	}
	if got, want := tm.Results[0].Content, toolgate.EditNote+edit+"\n"+`"Booked VX205"`; got != want {
		t.Errorf("the model read %q, want %q", got, want)
	}
	if got := last[len(last)-2].(*toolgate.AssistantMessage).ToolCalls[0].Arguments; got != `{"flight":"VX205","seats":4}` {
		t.Errorf("the model's reply shows arguments %s, want its own", got)
	}
	conv := load(t, store, "e")
	b, err := json.Marshal(conv.Messages)
	if err != nil {
		t.Fatal(err)
	}
	back, err := toolgate.UnmarshalMessages(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(conv.Messages, back); diff != "" {
		t.Errorf("the stored conversation does not survive a JSON round trip (-stored +decoded):\n%s", diff)
	}
	if r := back[2].(*toolgate.ToolMessage).Results[0]; r.EditedArguments != edit {
		t.Errorf("the stored result records the edit as %q, want %q", r.EditedArguments, edit)
	}
}

// TestClientResumeStreamEdited: a streamed resumption yields the edited
// call's result with the edit recorded.
func TestClientResumeStreamEdited(t *testing.T) {
	ctx := context.Background()
	var rec argsRecorder
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b", "bookFlight", vx)}},
		scripted.Reply{Text: "Booked."},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{rec.tool()}, nil)
	if resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "s", Input: "Book VX205."}); err != nil || !resp.Paused() {
		t.Fatalf("Call: %v", err)
	}
	edit := `{"flight":"VX206"}`
	var results []toolgate.ToolResult
	for ch, err := range client.ResumeStream(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, "s"), ConversationID: "s",
		Decisions: []toolgate.Decision{toolgate.AllowWithArguments("b", json.RawMessage(edit))}}) {
		if err != nil {
			t.Fatalf("ResumeStream: %v", err)
		}
		results = append(results, ch.Results...)
	}
	want := []toolgate.ToolResult{{CallID: "b", Name: "bookFlight", Status: toolgate.ResultOK, EditedArguments: edit,
		Content: toolgate.EditNote + edit + "\n" + `"Booked VX206"`}}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("streamed results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{edit}, rec.ran()); diff != "" {
		t.Errorf("bookFlight received (-want +got):\n%s", diff)
	}
}
