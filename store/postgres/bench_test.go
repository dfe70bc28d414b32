package postgres_test

import (
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetest"
)

func BenchmarkStore(b *testing.B) {
	s, _ := open(b)
	toolgatetest.BenchmarkStore(b, s)
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
		if err := s.ClaimPause(ctx, "conv-"+strconv.Itoa(claimed), "p1", &toolgate.Claim{Token: "claim"}); err != nil {
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
	if err := s.ClaimPause(ctx, "conv", "p1", &toolgate.Claim{Token: "first"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ClaimPause(ctx, "conv", "p1", &toolgate.Claim{Token: "again"}); err == nil {
			b.Fatal("a second claim succeeded")
		}
	}
}
