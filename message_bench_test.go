package toolgate_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate"
)

// BenchmarkUnmarshalMessage decodes the stored forms of the messages of a
// paused and resumed turn: what a store does for every message it loads.
func BenchmarkUnmarshalMessage(b *testing.B) {
	msgs := []toolgate.Message{
		&toolgate.UserMessage{Text: "Book VX205 for Ada and check the weather in Lisbon."},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
			{ID: "call_1", Name: "bookFlight", Arguments: `{"flight":"VX205","passenger":"Ada Lovelace","seat":"12A"}`},
			{ID: "call_2", Name: "weather", Arguments: `{"city":"Lisbon"}`},
		}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "call_1", Name: "bookFlight", Content: `{"booking":"B-7731","flight":"VX205","seat":"12A","status":"confirmed"}`},
			{CallID: "call_2", Name: "weather", Content: `{"city":"Lisbon","forecast":"sunny","high_c":24,"low_c":16}`},
		}},
		&toolgate.AssistantMessage{Text: "Your seat 12A on VX205 is booked (B-7731); Lisbon will be sunny, 24 °C."},
	}
	bodies := make([][]byte, len(msgs))
	size := 0
	for i, m := range msgs {
		var err error
		if bodies[i], err = json.Marshal(m); err != nil {
			b.Fatal(err)
		}
		size += len(bodies[i])
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for i, body := range bodies {
			m, err := toolgate.UnmarshalMessage(body)
			if err != nil || m.Role() != msgs[i].Role() {
				b.Fatalf("message %d: %v, %v", i, m, err)
			}
		}
	}
}
