package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target percentage that
// [tuneGC] sets: a collection starts when the heap has grown by four times
// the live heap since the last one, instead of Go's default of once.
// The service allocates mostly short-lived request data over a small live
// heap, so collecting less often costs little memory (a live heap of
// 50 MiB peaks near 250 MiB) and gives back much of the CPU a busy
// instance spends collecting: about a quarter more decisions per second
// in BenchmarkDecisionsSQLite (docs/BENCHMARKS.md). Set GOMEMLIMIT to
// bound the memory in a container.
const gcPercent = 400

// tuneGC sets the garbage collector's target to [gcPercent] unless the
// GOGC environment variable chose one, and returns the target it replaced
// (or left), for a caller that restores it. toolgate serve calls it at
// start-up; an application embedding the service decides for itself.
func tuneGC() (previous int) {
	if _, set := os.LookupEnv("GOGC"); set {
		previous = debug.SetGCPercent(-1)
		debug.SetGCPercent(previous)
		return previous
	}
	return debug.SetGCPercent(gcPercent)
}
