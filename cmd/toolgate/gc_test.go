package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	// GOGC set (even empty): the target stays what it is.
	t.Setenv("GOGC", "") // restored after the test
	debug.SetGCPercent(150)
	if got := tuneGC(); got != 150 || debug.SetGCPercent(150) != 150 {
		t.Errorf("with GOGC set, tuneGC = %d; want the target left at 150", got)
	}
	// GOGC unset: gcPercent, and the target replaced is returned.
	os.Unsetenv("GOGC")
	if got := tuneGC(); got != 150 || debug.SetGCPercent(100) != gcPercent {
		t.Errorf("without GOGC, tuneGC = %d; want 150 returned and %d in force", got, gcPercent)
	}
}
