package toolgate_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
)

// BenchmarkUnmarshalParts decodes the stored form of a reasoning model's
// reply: signed reasoning, text and two calls with signatures.
func BenchmarkUnmarshalParts(b *testing.B) {
	m := &toolgate.AssistantMessage{Text: "Checking both.", ToolCalls: []toolgate.ToolCall{
		{ID: "call_1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
		{ID: "call_2", Name: "weather", Arguments: `{"city":"Lisbon"}`},
	}, Parts: toolgate.Parts{
		toolgate.ReasoningPart{Text: "The user wants the flight's status and the weather.", Provider: "anthropic", Signature: "EqQBCkYIBxgCKkB4c2lnbmF0dXJl"},
		toolgate.TextPart{Text: "Checking both."},
		toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "c2lnbmF0dXJl"},
		toolgate.ToolCallPart{Index: 1, Provider: "gemini", Signature: "c2lnbmF0dXJm"},
	}}
	body, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := toolgate.UnmarshalMessage(body)
		if err != nil || len(got.(*toolgate.AssistantMessage).Parts) != 4 {
			b.Fatalf("%v, %v", got, err)
		}
	}
}
