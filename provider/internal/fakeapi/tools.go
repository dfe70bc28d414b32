package fakeapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
)

// WeatherIn is the input of [WeatherTool].
type WeatherIn struct {
	City string `json:"city" jsonschema:"the city"`
}

// WeatherTool returns get_weather, a typed tool answering "sunny in"
// the city it is given. The adapters' golden files hold its definition.
func WeatherTool() *toolgate.Tool {
	return toolgate.NewToolFor("get_weather", "Current weather in a city.",
		func(_ context.Context, _ *toolgate.ToolRequest, in WeatherIn) (string, error) {
			return "sunny in " + in.City, nil
		}, nil)
}

// RawTool returns a raw tool named name, with meta, that answers
// {"done": arguments}.
func RawTool(name string, meta toolgate.ToolMetadata) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: "Runs " + name + "."}, meta,
		func(_ context.Context, req *toolgate.ToolRequest) (string, error) {
			return `{"done":` + string(req.Arguments) + `}`, nil
		})
}

// editedPrompt is a prompt whose last tool result ran with arguments an
// approver edited, and the wire text its note must reach the model as.
func editedPrompt() (*toolgate.Prompt, string) {
	edit := `{"box":3}`
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Ship box 1."},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "ship", Arguments: `{"box":1}`}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "call_1", Name: "ship", Status: toolgate.ResultOK,
			Content: toolgate.EditNote + edit + "\n" + `"shipped"`, EditedArguments: edit}}},
	}}
	wire, _ := json.Marshal(toolgate.EditNote + edit)
	return p, strings.Trim(string(wire), `"`)
}

// CheckEditNote checks that the note of a call whose arguments an
// approver edited reaches the model as part of the tool result: m, a
// model talking to s, sends a prompt holding such a result, and the
// request s receives must carry the note as the API's JSON writes it.
func CheckEditNote(t testing.TB, m toolgate.Model, s *Server) {
	t.Helper()
	p, note := editedPrompt()
	if _, err := m.Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if body := string(s.Body(s.Count() - 1)); !strings.Contains(body, note) {
		t.Errorf("the request does not carry the edit note %q:\n%s", note, body)
	}
}

// numbers is the input schema of the recordings' add and multiply tools.
var numbers = func() *jsonschema.Schema {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"properties":{"a":{"description":"first number","type":"integer"},"b":{"description":"second number","type":"integer"}},"required":["a","b"],"type":"object"}`), &s); err != nil {
		panic(err)
	}
	return &s
}()

// NumberTool returns a raw tool taking two integers a and b, declared as
// the recordings' add and multiply tools declare them, that answers
// result. With confirm, its calls need a person's decision.
func NumberTool(name, description, result string, confirm bool) *toolgate.Tool {
	return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: description, InputSchema: numbers}, toolgate.ToolMetadata{RequiresConfirmation: confirm},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return result, nil })
}

// Arithmetic returns the parallel-call recordings' tools: add, answering
// 5, and multiply, answering 6, whose calls need a person's decision, so
// that a turn calling both pauses.
func Arithmetic() []*toolgate.Tool {
	return []*toolgate.Tool{NumberTool("add", "Add two numbers", "5", false), NumberTool("multiply", "Multiply two numbers", "6", true)}
}

// ConfirmedWeather returns the thinking recordings' weather tool, taking a
// location and answering "40 C"; its calls need a person's decision.
func ConfirmedWeather() []*toolgate.Tool {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"properties":{"location":{"description":"the city","type":"string"}},"required":["location"],"type":"object"}`), &s); err != nil {
		panic(err)
	}
	return []*toolgate.Tool{toolgate.NewTool(toolgate.ToolDefinition{Name: "weather", Description: "Get weather information for a location", InputSchema: &s},
		toolgate.ToolMetadata{RequiresConfirmation: true}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "40 C", nil })}
}
