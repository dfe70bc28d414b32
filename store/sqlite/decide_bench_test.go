//go:build unix

package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/store/sqlite"
)

// BenchmarkDecideParallel runs, from 64 goroutines at once, what the
// approval service asks of its store for one decision on a paused reply of
// two gated calls: the decision's record, then the resumed turn (its load,
// the claim with the first call's start, the second call's start, the
// results and the answer), then the record's outcome, which also takes the
// pause out of the pending index. The pauses are made before the timer
// starts. Besides the wall time, it reports the CPU time of the process
// per decision (cpu-µs/op), which is what the writes cost when their
// fsyncs overlap.
func BenchmarkDecideParallel(b *testing.B) {
	store, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "conv.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	rs := recs(b, store)
	model, tools, decisions := noopCalls(2)
	client := toolgate.NewClient(model, tools, &toolgate.ClientOptions{Store: store})
	ctx := context.Background()

	// Enough paused conversations for any b.N the benchmark asks for is
	// not known in advance: make them in rounds, outside the timer.
	var made, next atomic.Int64
	pause := func(n int) {
		for range n {
			id := fmt.Sprint("c", made.Add(1))
			res, err := client.Call(ctx, &toolgate.CallParams{ConversationID: id, Input: "go"})
			if err != nil {
				b.Fatal(err)
			}
			if !res.Paused() {
				b.Fatalf("conversation %s did not pause", id)
			}
		}
	}
	pause(b.N)
	b.SetParallelism(32)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("c", next.Add(1))
			c, err := store.Load(ctx, id)
			if err != nil || c.Pause == nil {
				b.Fatalf("load %s: %v (pause %v)", id, err, c.Pause)
			}
			d := &records.Decision{ConversationID: id, PauseID: c.Pause.ID, Source: records.SourcePerson,
				DecidedBy: "bob", DecidedAt: time.Now(), Decisions: decisions, Outcome: records.OutcomeDeciding}
			if prior, err := rs.Begin(ctx, d); err != nil || prior != nil {
				b.Fatalf("begin %s: %v (prior %v)", id, err, prior)
			}
			if _, err := client.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: c.Pause.ID, ConversationID: id, Decisions: decisions}); err != nil {
				b.Fatal(err)
			}
			// The outcome, and the pause out of the index, in one write.
			if err := rs.Finish(ctx, id, c.Pause.ID, records.OutcomeDecided); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
