package toolgatetest

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
)

// Conversation50 returns a 50-message conversation: a system prompt, then
// rounds of question, tool call, result and answer. Stores use it to
// measure themselves on the same data.
func Conversation50() []toolgate.Message {
	msgs := []toolgate.Message{&toolgate.SystemMessage{Text: "You are a travel assistant. Answer briefly."}}
	for i := 0; len(msgs) < 50; i++ {
		id := fmt.Sprintf("call_%d", i)
		round := []toolgate.Message{
			&toolgate.UserMessage{Text: fmt.Sprintf("What is the status of flight VX%d?", 200+i)},
			&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: id, Name: "flightStatus", Arguments: fmt.Sprintf(`{"flight":"VX%d"}`, 200+i)}}},
			&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: id, Name: "flightStatus", Content: `{"status":"on time","gate":"B12"}`}}},
			&toolgate.AssistantMessage{Text: fmt.Sprintf("VX%d is on time, gate B12.", 200+i)},
		}
		msgs = append(msgs, round[:min(len(round), 50-len(msgs))]...)
	}
	return msgs
}

// BenchmarkStore measures a store the way every store is measured:
// AppendLoad50 appends a 50-message conversation and loads it back; Load50
// loads one. s must be empty of conversations named "conv" and "conv-N".
func BenchmarkStore(b *testing.B, s toolgate.ConversationStore) {
	msgs := Conversation50()
	load := func(b *testing.B, id string) {
		c, err := s.Load(b.Context(), id)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Messages) != len(msgs) {
			b.Fatalf("loaded %d messages, want %d", len(c.Messages), len(msgs))
		}
	}
	b.Run("AppendLoad50", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			id := "conv-" + strconv.Itoa(i)
			i++
			if err := s.Append(b.Context(), id, &toolgate.AppendParams{Messages: msgs}); err != nil {
				b.Fatal(err)
			}
			load(b, id)
		}
	})
	b.Run("Load50", func(b *testing.B) {
		if err := s.Append(b.Context(), "conv", &toolgate.AppendParams{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			load(b, "conv")
		}
	})
}
