package postgres_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
)

// conversation50 returns a 50-message conversation: a system prompt, then
// rounds of question, tool call, result and answer.
func conversation50() []toolgate.Message {
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

func BenchmarkAppendLoad50(b *testing.B) {
	s, _ := open(b)
	msgs := conversation50()
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := "conv-" + strconv.Itoa(i)
		i++
		if err := s.Append(ctx, id, &toolgate.AppendParams{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		c, err := s.Load(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Messages) != 50 {
			b.Fatalf("loaded %d messages, want 50", len(c.Messages))
		}
	}
}

func BenchmarkLoad50(b *testing.B) {
	s, _ := open(b)
	ctx := b.Context()
	if err := s.Append(ctx, "conv", &toolgate.AppendParams{Messages: conversation50()}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := s.Load(ctx, "conv")
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Messages) != 50 {
			b.Fatalf("loaded %d messages, want 50", len(c.Messages))
		}
	}
}

// BenchmarkClaimPause measures successful claims, one per iteration; the
// pauses they claim are opened with the timer stopped.
func BenchmarkClaimPause(b *testing.B) {
	s, _ := open(b)
	ctx := b.Context()
	msgs := []toolgate.Message{&toolgate.UserMessage{Text: "Book VX205"}, pausedReply}
	const chunk = 256
	opened, claimed := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		if claimed == opened {
			b.StopTimer()
			for range chunk {
				err := s.Append(ctx, "conv-"+strconv.Itoa(opened), &toolgate.AppendParams{Messages: msgs, Pause: &toolgate.PauseRecord{ID: "p1"}})
				if err != nil {
					b.Fatal(err)
				}
				opened++
			}
			b.StartTimer()
		}
		if err := s.ClaimPause(ctx, "conv-"+strconv.Itoa(claimed), "p1"); err != nil {
			b.Fatal(err)
		}
		claimed++
	}
}

// BenchmarkClaimPauseTaken measures the claims that lose: duplicate
// requests for a pause already claimed.
func BenchmarkClaimPauseTaken(b *testing.B) {
	s, _ := open(b)
	ctx := b.Context()
	err := s.Append(ctx, "conv", &toolgate.AppendParams{
		Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Book VX205"}, pausedReply},
		Pause:    &toolgate.PauseRecord{ID: "p1"},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.ClaimPause(ctx, "conv", "p1"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ClaimPause(ctx, "conv", "p1"); err == nil {
			b.Fatal("a second claim succeeded")
		}
	}
}
