package server

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
	if got := TuneGC(); got != 150 || debug.SetGCPercent(150) != 150 {
		t.Errorf("with GOGC set, TuneGC = %d; want the target left at 150", got)
	}
	// GOGC unset: GCPercent, and the target replaced is returned.
	os.Unsetenv("GOGC")
	if got := TuneGC(); got != 150 || debug.SetGCPercent(100) != GCPercent {
		t.Errorf("without GOGC, TuneGC = %d; want 150 returned and %d in force", got, GCPercent)
	}
}
