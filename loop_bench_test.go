package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
)

// The loop scenario: a turn is one reply of the model asking for three
// typed tools, the tools running, and the model answering. A pause is the
// same turn with the third tool gated: the turn pauses, a person allows
// every call, and the turn is resumed. The model and the tools cost
// nothing, so what is measured is the loop around them. Each benchmark has
// a hand-written counterpart, the floor: a slice of messages, a map of
// tools and json.Unmarshal of each call's arguments, without validation,
// authorization or storage, so that the ratio is read from one run.

type statusArgs struct {
	Flight string `json:"flight"`
}

type weatherArgs struct {
	City string `json:"city"`
	Days int    `json:"days"`
}

type bookArgs struct {
	Flight string `json:"flight"`
	Seats  int    `json:"seats"`
	Class  string `json:"class"`
}

type statusOut struct {
	Status string `json:"status"`
}

func flightStatus(_ context.Context, _ *toolgate.ToolRequest, in statusArgs) (statusOut, error) {
	return statusOut{Status: "on time"}, nil
}

func forecast(_ context.Context, _ *toolgate.ToolRequest, in weatherArgs) (statusOut, error) {
	return statusOut{Status: "sunny"}, nil
}

func bookFlight(_ context.Context, _ *toolgate.ToolRequest, in bookArgs) (statusOut, error) {
	return statusOut{Status: "booked"}, nil
}

// loopCalls are the calls of the scenario's reply.
var loopCalls = []toolgate.ToolCall{
	{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
	{ID: "c2", Name: "forecast", Arguments: `{"city":"Paris","days":3}`},
	{ID: "c3", Name: "bookFlight", Arguments: `{"flight":"VX205","seats":2,"class":"economy"}`},
}

// scenarioModel asks for the three calls when the last message is the
// user's and answers when it is the tools'. Its responses are built once:
// the model costs nothing.
type scenarioModel struct {
	calls, answer *toolgate.Response
}

func newScenarioModel() *scenarioModel {
	return &scenarioModel{
		calls:  &toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{ToolCalls: loopCalls}, FinishReason: toolgate.FinishToolCalls}}},
		answer: &toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "VX205 is on time and booked."}, FinishReason: toolgate.FinishStop}}},
	}
}

func (m *scenarioModel) Generate(_ context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
		return m.answer, nil
	}
	return m.calls, nil
}

func (m *scenarioModel) Stream(context.Context, *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	panic("not used")
}

// scenarioTools are the typed tools of the scenario; gated makes the third
// one require confirmation.
func scenarioTools(gated bool) []*toolgate.Tool {
	return []*toolgate.Tool{
		toolgate.NewToolFor("flightStatus", "Reports whether a flight is on time.", flightStatus, nil),
		toolgate.NewToolFor("forecast", "Forecasts the weather of a city.", forecast, nil),
		toolgate.NewToolFor("bookFlight", "Books seats on a flight.", bookFlight,
			&toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: gated}}),
	}
}

// loopClient is the scenario's client: the scenario's model and tools, the
// in-memory store. Every turn starts a new conversation; the client (and
// its store) is replaced every rotate turns so that the store does not
// grow without bound during a benchmark.
type loopClient struct {
	gated bool
	parts bool // the model's replies hold reasoning parts
	c     *toolgate.Client
	turns int
}

const rotate = 1024

func (l *loopClient) client() *toolgate.Client {
	if l.c == nil || l.turns%rotate == 0 {
		model := newScenarioModel()
		if l.parts {
			model = newPartsScenarioModel()
		}
		l.c = toolgate.NewClient(model, scenarioTools(l.gated), nil)
	}
	l.turns++
	return l.c
}

// turn runs one turn and checks its answer.
func (l *loopClient) turn(ctx context.Context) error {
	resp, err := l.client().Call(ctx, &toolgate.CallParams{Input: "Is VX205 on time? Book 2 seats."})
	if err != nil {
		return err
	}
	if resp.Paused() || resp.Message().Text == "" {
		return errors.New("the turn did not end with the answer")
	}
	return nil
}

// pauseResume runs one turn that pauses, allows every call and resumes it,
// and checks the answer.
func (l *loopClient) pauseResume(ctx context.Context) error {
	c := l.client()
	resp, err := c.Call(ctx, &toolgate.CallParams{Input: "Is VX205 on time? Book 2 seats."})
	if err != nil {
		return err
	}
	if len(resp.Awaiting) != 1 {
		return errors.New("the turn did not pause on the gated call")
	}
	keys := resp.Message().CallKeys()
	ds := make([]toolgate.Decision, len(keys))
	for i, k := range keys {
		ds[i] = toolgate.Allow(k)
	}
	resp, err = c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: resp.ConversationID, Decisions: ds})
	if err != nil {
		return err
	}
	if resp.Paused() || resp.Message().Text == "" {
		return errors.New("the resumed turn did not end with the answer")
	}
	return nil
}

// The floor: a minimal hand-written loop over the same model and tool
// functions.

type floorTool struct {
	run   func(ctx context.Context, args string) (string, error)
	gated bool
}

func floorToolFor[In, Out any](fn func(context.Context, *toolgate.ToolRequest, In) (Out, error), gated bool) floorTool {
	return floorTool{gated: gated, run: func(ctx context.Context, args string) (string, error) {
		var in In
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			return "", err
		}
		out, err := fn(ctx, nil, in)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(out)
		return string(b), err
	}}
}

type floorLoop struct {
	model  toolgate.Model
	tools  map[string]floorTool
	paused map[string][]toolgate.Message // conversation id -> messages up to the paused reply
	next   int
}

func newFloorLoop(gated bool) *floorLoop {
	return &floorLoop{
		model: newScenarioModel(),
		tools: map[string]floorTool{
			"flightStatus": floorToolFor(flightStatus, false),
			"forecast":     floorToolFor(forecast, false),
			"bookFlight":   floorToolFor(bookFlight, gated),
		},
		paused: map[string][]toolgate.Message{},
	}
}

// run calls the model until it answers, running the calls of each reply;
// it stops before running a reply with a gated call and returns the
// conversation's id.
func (f *floorLoop) run(ctx context.Context, msgs []toolgate.Message) (*toolgate.AssistantMessage, string, error) {
	for {
		resp, err := f.model.Generate(ctx, &toolgate.Prompt{Messages: msgs})
		if err != nil {
			return nil, "", err
		}
		reply := resp.Message()
		msgs = append(msgs, reply)
		if len(reply.ToolCalls) == 0 {
			return reply, "", nil
		}
		for _, c := range reply.ToolCalls {
			if f.tools[c.Name].gated {
				f.next++
				id := strconv.Itoa(f.next)
				f.paused[id] = msgs
				return reply, id, nil
			}
		}
		msgs = append(msgs, f.runCalls(ctx, reply))
	}
}

func (f *floorLoop) runCalls(ctx context.Context, reply *toolgate.AssistantMessage) *toolgate.ToolMessage {
	msg := &toolgate.ToolMessage{Results: make([]toolgate.ToolResult, len(reply.ToolCalls))}
	for i, c := range reply.ToolCalls {
		out, err := f.tools[c.Name].run(ctx, c.Arguments)
		if err != nil {
			out = err.Error()
		}
		msg.Results[i] = toolgate.ToolResult{CallID: c.ID, Name: c.Name, Content: out}
	}
	return msg
}

func (f *floorLoop) turn(ctx context.Context) error {
	answer, _, err := f.run(ctx, []toolgate.Message{&toolgate.UserMessage{Text: "Is VX205 on time? Book 2 seats."}})
	if err != nil {
		return err
	}
	if answer.Text == "" {
		return errors.New("no answer")
	}
	return nil
}

func (f *floorLoop) pauseResume(ctx context.Context) error {
	_, id, err := f.run(ctx, []toolgate.Message{&toolgate.UserMessage{Text: "Is VX205 on time? Book 2 seats."}})
	if err != nil {
		return err
	}
	if id == "" {
		return errors.New("no pause")
	}
	// Every call allowed: run the paused reply, forget the pause, go on.
	msgs := f.paused[id]
	delete(f.paused, id)
	msgs = append(msgs, f.runCalls(ctx, msgs[len(msgs)-1].(*toolgate.AssistantMessage)))
	answer, _, err := f.run(ctx, msgs)
	if err != nil {
		return err
	}
	if answer.Text == "" {
		return errors.New("no answer")
	}
	return nil
}

// BenchmarkLoop compares the scenario's turn and pause+resume through the
// Client with the hand-written floor.
func BenchmarkLoop(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"turn/toolgate", (&loopClient{}).turn},
		{"turn/floor", newFloorLoop(false).turn},
		{"pause-resume/toolgate", (&loopClient{gated: true}).pauseResume},
		{"pause-resume/floor", newFloorLoop(true).pauseResume},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScenarioCall measures one typed call of each of the scenario's
// argument shapes: validation, decoding, the function and the encoding of
// its output.
func BenchmarkScenarioCall(b *testing.B) {
	ctx := context.Background()
	tools := scenarioTools(false)
	for i, call := range loopCalls {
		b.Run(call.Name, func(b *testing.B) {
			req := &toolgate.ToolRequest{}
			b.ReportAllocs()
			for b.Loop() {
				*req = toolgate.ToolRequest{Call: call}
				if _, err := tools[i].Call(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLoopAllocs pins the allocations of the scenario's turn and of its
// pause and resumption, so that a change that makes the loop allocate more
// is noticed. Each run also checks the turn's answer.
func TestLoopAllocs(t *testing.T) {
	if toolgate.RaceDetector {
		t.Skip("allocation counts differ under the race detector")
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		max  float64
		run  func(context.Context) error
	}{
		{"turn", 30, (&loopClient{}).turn},
		{"pause-resume", 72, (&loopClient{gated: true}).pauseResume},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := testing.AllocsPerRun(200, func() {
				if e := tt.run(ctx); e != nil {
					err = e
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v allocations", got)
			if got > tt.max {
				t.Errorf("got %v allocations, want at most %v", got, tt.max)
			}
		})
	}
}
