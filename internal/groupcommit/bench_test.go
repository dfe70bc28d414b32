//go:build unix

package groupcommit

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkParallelInserts inserts one row per operation from 64
// goroutines at once, so that the operations share transactions, each in
// a savepoint of its own. Besides the wall time it reports the CPU time of
// the process per operation (cpu-µs/op), most of it the committer's.
func BenchmarkParallelInserts(b *testing.B) {
	s := openRaw(b)
	var n atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.inTx(context.Background(), insert(strconv.FormatInt(n.Add(1), 10))); err != nil {
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
