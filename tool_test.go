package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolgate/toolgate"
)

func TestValidToolName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"flightStatus", true},
		{"mcp.github-create_issue", true},
		{"A9", true},
		{strings.Repeat("x", 64), true},
		{"", false},
		{strings.Repeat("x", 65), false},
		{"has space", false},
		{"slash/name", false},
		{"ünïcode", false},
		{"colon:name", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toolgate.ValidToolName(tt.name); got != tt.want {
				t.Errorf("ValidToolName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestToolConstructorsPanic(t *testing.T) {
	noop := func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil }
	typed := func(context.Context, *toolgate.ToolRequest, flightInput) (string, error) { return "", nil }
	mustPanic(t, "NewTool with an invalid name", func() {
		toolgate.NewTool(toolgate.ToolDefinition{Name: "bad name"}, toolgate.ToolMetadata{}, noop)
	})
	mustPanic(t, "NewTool with a nil function", func() {
		toolgate.NewTool(toolgate.ToolDefinition{Name: "ok"}, toolgate.ToolMetadata{}, nil)
	})
	mustPanic(t, "NewToolFor with an invalid name", func() { toolgate.NewToolFor("", "", typed, nil) })
	mustPanic(t, "NewToolFor with a nil function", func() {
		toolgate.NewToolFor[flightInput, string]("ok", "", nil, nil)
	})
	mustPanic(t, "NewToolFor with an input type without schema", func() {
		toolgate.NewToolFor("ok", "", func(context.Context, *toolgate.ToolRequest, chan int) (string, error) { return "", nil }, nil)
	})
	mustPanic(t, "NewToolFor with a schema that does not resolve", func() {
		toolgate.NewToolFor("ok", "", typed, &toolgate.ToolOptions{InputSchema: &jsonschema.Schema{Pattern: "("}})
	})
}

type bookingInput struct {
	Flight string `json:"flight" jsonschema:"the flight number"`
	Seats  int    `json:"seats,omitempty" jsonschema:"how many seats; 1 when omitted"`
}

type booking struct {
	Reference string `json:"reference"`
	Seats     int    `json:"seats"`
}

func TestNewToolForSchema(t *testing.T) {
	tool := toolgate.NewToolFor("bookFlight", "Books seats.", func(context.Context, *toolgate.ToolRequest, bookingInput) (booking, error) {
		return booking{}, nil
	}, nil)
	def := tool.Definition()
	if def.Name != "bookFlight" || def.Description != "Books seats." {
		t.Errorf("got definition %q %q, want bookFlight and its description", def.Name, def.Description)
	}
	got, err := json.Marshal(def.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"flight":{"type":"string","description":"the flight number"},"seats":{"type":"integer","description":"how many seats; 1 when omitted"}},"required":["flight"],"additionalProperties":false}`
	if string(got) != want {
		t.Errorf("inferred schema:\ngot  %s\nwant %s", got, want)
	}
	if diff := cmp.Diff(toolgate.ToolMetadata{}, tool.Metadata()); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

func TestNewToolForValidation(t *testing.T) {
	var runs atomic.Int32
	var last bookingInput
	errFull := errors.New("the flight is full")
	tool := toolgate.NewToolFor("bookFlight", "", func(_ context.Context, _ *toolgate.ToolRequest, in bookingInput) (booking, error) {
		runs.Add(1)
		last = in
		if in.Flight == "FULL1" {
			return booking{}, errFull
		}
		return booking{Reference: "R-" + in.Flight, Seats: max(in.Seats, 1)}, nil
	}, nil)
	tests := []struct {
		name    string
		args    string
		want    string // output; "" when an error is expected
		wantIn  bookingInput
		wantErr error
	}{
		{"valid", `{"flight":"VX205","seats":2}`, `{"reference":"R-VX205","seats":2}`, bookingInput{"VX205", 2}, nil},
		{"optional omitted", `{"flight":"VX205"}`, `{"reference":"R-VX205","seats":1}`, bookingInput{"VX205", 0}, nil},
		{"surrounding space", " {\"flight\":\"A1\"}\n", `{"reference":"R-A1","seats":1}`, bookingInput{"A1", 0}, nil},
		{"tool error", `{"flight":"FULL1"}`, "", bookingInput{"FULL1", 0}, errFull},
		{"empty is an empty object", "", "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"missing required", `{"seats":2}`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"wrong type", `{"flight":205}`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"wrong nested type", `{"flight":"A1","seats":"two"}`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"fraction for integer", `{"flight":"A1","seats":1.5}`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"unknown field", `{"flight":"A1","class":"first"}`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"not an object", `"A1"`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"null", `null`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"bad JSON", `{"flight":"A1"`, "", bookingInput{}, toolgate.ErrInvalidArguments},
		{"trailing data", `{"flight":"A1"} {}`, "", bookingInput{}, toolgate.ErrInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs.Store(0)
			last = bookingInput{}
			got, err := tool.Call(context.Background(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Name: "bookFlight", Arguments: tt.args}})
			wantRuns := int32(1)
			if errors.Is(tt.wantErr, toolgate.ErrInvalidArguments) {
				wantRuns = 0
			}
			if n := runs.Load(); n != wantRuns {
				t.Errorf("the function ran %d times, want %d", n, wantRuns)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got error %v, want one matching %v", err, tt.wantErr)
				}
				if got != "" {
					t.Errorf("got output %q with an error, want none", got)
				}
			} else if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if got != tt.want {
				t.Errorf("got output %s, want %s", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantIn, last); diff != "" {
				t.Errorf("input the function got (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewToolForOptions(t *testing.T) {
	var runs atomic.Int32
	explicit := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"flight": {Type: "string", Pattern: "^[A-Z]{2}[0-9]+$"}},
		Required:   []string{"flight"},
	}
	tool := toolgate.NewToolFor("bookFlight", "", func(_ context.Context, _ *toolgate.ToolRequest, in flightInput) (string, error) {
		runs.Add(1)
		return in.Flight, nil
	}, &toolgate.ToolOptions{InputSchema: explicit, Metadata: toolgate.ToolMetadata{RequiresConfirmation: true, ReturnDirect: true}})
	if tool.Definition().InputSchema != explicit {
		t.Errorf("the definition does not carry the explicit schema")
	}
	if want := (toolgate.ToolMetadata{RequiresConfirmation: true, ReturnDirect: true}); tool.Metadata() != want {
		t.Errorf("got metadata %+v, want %+v", tool.Metadata(), want)
	}
	call := func(args string) (string, error) {
		return tool.Call(context.Background(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Arguments: args}})
	}
	// The explicit schema wins: its pattern applies, and the extra field the
	// inferred schema would refuse is accepted.
	if _, err := call(`{"flight":"vx205"}`); !errors.Is(err, toolgate.ErrInvalidArguments) {
		t.Errorf("pattern violation: got %v, want ErrInvalidArguments", err)
	}
	if got, err := call(`{"flight":"VX205","note":"aisle"}`); err != nil || got != `"VX205"` {
		t.Errorf("got %q, %v; want \"VX205\" and no error", got, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the function ran %d times, want 1", n)
	}
}

func TestNewToolForPointerInput(t *testing.T) {
	var seen []*flightInput
	tool := toolgate.NewToolFor("status", "", func(_ context.Context, _ *toolgate.ToolRequest, in *flightInput) (*flightInput, error) {
		seen = append(seen, in)
		return in, nil
	}, nil)
	for _, f := range []string{"A1", "B2"} {
		got, err := tool.Call(context.Background(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Arguments: `{"flight":"` + f + `"}`}})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"flight":"` + f + `"}`; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if len(seen) != 2 || seen[0] == seen[1] || seen[0].Flight != "A1" || seen[1].Flight != "B2" {
		t.Errorf("each call must get a fresh value: got %+v", seen)
	}
}

func TestNewToolForOutputError(t *testing.T) {
	tool := toolgate.NewToolFor("weird", "", func(context.Context, *toolgate.ToolRequest, struct{}) (func(), error) {
		return func() {}, nil
	}, nil)
	got, err := tool.Call(context.Background(), &toolgate.ToolRequest{})
	if err == nil || !strings.Contains(err.Error(), "encoding the output of weird") {
		t.Errorf("got %q, %v; want an output encoding error", got, err)
	}
}

func TestRawToolArguments(t *testing.T) {
	var got []string
	tool := toolgate.NewTool(toolgate.ToolDefinition{Name: "raw"}, toolgate.ToolMetadata{}, func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
		got = append(got, string(req.Arguments))
		return "ok", nil
	})
	for _, args := range []string{"", "  \t\r\n", `{"any":"thing"}`, `[1,2]`, `42`} {
		if _, err := tool.Call(context.Background(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Arguments: args}}); err != nil {
			t.Errorf("Call(%q): %v", args, err)
		}
	}
	for _, args := range []string{`{`, `{"a":}`, "\x00", `{} x`} {
		if _, err := tool.Call(context.Background(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Arguments: args}}); !errors.Is(err, toolgate.ErrInvalidArguments) {
			t.Errorf("Call(%q): got %v, want ErrInvalidArguments", args, err)
		}
	}
	want := []string{"{}", "{}", `{"any":"thing"}`, `[1,2]`, `42`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("arguments the raw tool got (-want +got):\n%s", diff)
	}
}

func TestWithMetadata(t *testing.T) {
	base := countingTool("t", toolgate.ToolMetadata{}, nil)
	gated := base.WithMetadata(toolgate.ToolMetadata{RequiresConfirmation: true})
	if base.Metadata().RequiresConfirmation {
		t.Errorf("WithMetadata changed the original tool")
	}
	if !gated.Metadata().RequiresConfirmation || gated.Name() != "t" {
		t.Errorf("got %s %+v, want t with the new metadata", gated.Name(), gated.Metadata())
	}
	if out, err := gated.Call(context.Background(), &toolgate.ToolRequest{Key: "k"}); err != nil || out != "t:k" {
		t.Errorf("the copy runs the same function: got %q, %v", out, err)
	}
}

func TestToolJSON(t *testing.T) {
	f := newFlightsFixture()
	tests := []struct {
		name string
		tool *toolgate.Tool
		want string
	}{
		{"raw without metadata", countingTool("plain", toolgate.ToolMetadata{}, nil), `{"name":"plain"}`},
		{"typed with metadata", f.book, `{"name":"bookFlight","description":"Books a seat on a flight.","input_schema":{"type":"object","properties":{"flight":{"type":"string","description":"the flight number, such as VX205"}},"required":["flight"],"additionalProperties":false},"metadata":{"requires_confirmation":true}}`},
		{"return direct", countingTool("answer", toolgate.ToolMetadata{ReturnDirect: true}, nil), `{"name":"answer","metadata":{"return_direct":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.tool)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			var back toolgate.Tool
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if back.Name() != tt.tool.Name() || back.Metadata() != tt.tool.Metadata() {
				t.Errorf("decoded %s %+v, want %s %+v", back.Name(), back.Metadata(), tt.tool.Name(), tt.tool.Metadata())
			}
			again, _ := json.Marshal(&back)
			if string(again) != tt.want {
				t.Errorf("re-encoded:\ngot  %s\nwant %s", again, tt.want)
			}
			if _, err := back.Call(context.Background(), &toolgate.ToolRequest{}); !errors.Is(err, toolgate.ErrNoImplementation) {
				t.Errorf("calling a decoded tool: got %v, want ErrNoImplementation", err)
			}
		})
	}
	for _, bad := range []string{`{"name":"bad name"}`, `{}`, `{"name":3}`, `[]`, `{"name":"x","metadata":{"return_direct":"yes"}}`, `{"name":"x","input_schema":7}`} {
		var tool toolgate.Tool
		if err := json.Unmarshal([]byte(bad), &tool); err == nil {
			t.Errorf("Unmarshal(%s): no error, want one", bad)
		}
	}
}

// TestDecodedToolsDoNotRun checks that a prompt read back from JSON cannot
// run anything: its tools have no implementation.
func TestDecodedToolsDoNotRun(t *testing.T) {
	f := newFlightsFixture()
	b, err := json.Marshal(f.prompt(userSays("Is VX205 on time?")))
	if err != nil {
		t.Fatal(err)
	}
	var p toolgate.Prompt
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	var handled error
	m := toolgate.NewManager(&toolgate.ManagerOptions{ErrorHandler: func(ctx context.Context, call toolgate.ToolCall, err error) (string, error) {
		handled = err
		return toolgate.DefaultErrorHandler(ctx, call, err)
	}})
	res, err := m.Run(context.Background(), &toolgate.RunParams{Prompt: &p, Reply: replyWith(statusCall)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(handled, toolgate.ErrNoImplementation) || res.Message.Results[0].Status != toolgate.ResultError {
		t.Errorf("got result %+v, handler error %v; want an error result for ErrNoImplementation", res.Message.Results[0], handled)
	}
	// The decoded metadata still gates the call.
	_, err = m.Run(context.Background(), &toolgate.RunParams{Prompt: &p, Reply: replyWith(bookCall)})
	mustPause(t, err)
	f.checkRuns(t, 0, 0)
}
