package privacy

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkNewScanner is the memory of one more default scanner once the
// word lists are loaded (B/op).
func BenchmarkNewScanner(b *testing.B) {
	NewScanner(nil) // load the word lists first
	b.ReportAllocs()
	for b.Loop() {
		NewScanner(nil)
	}
}

// lexiconHeapEnv makes TestLexiconHeapChild measure: it runs in a process
// of its own, started by BenchmarkLexiconHeap, so that the word lists are
// not loaded yet.
const lexiconHeapEnv = "TOOLGATE_LEXICON_HEAP_CHILD"

// BenchmarkLexiconHeap reports the heap that the embedded word lists hold
// once per process (heap-B): the growth of the live heap across the first
// NewScanner(nil), measured in a new process each time.
func BenchmarkLexiconHeap(b *testing.B) {
	var heap int64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLexiconHeapChild$", "-test.v")
		cmd.Env = append(os.Environ(), lexiconHeapEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		_, after, ok := strings.Cut(string(out), "lexicon heap: ")
		if !ok {
			b.Fatalf("no measurement in %s", out)
		}
		n, _, _ := strings.Cut(after, " ")
		if heap, err = strconv.ParseInt(n, 10, 64); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(heap), "heap-B")
}

// TestLexiconHeapChild is the measurement of BenchmarkLexiconHeap; run by
// the test suite it only checks that the measurement works.
func TestLexiconHeapChild(t *testing.T) {
	if os.Getenv(lexiconHeapEnv) == "" {
		t.Skip("run in a process of its own by BenchmarkLexiconHeap")
	}
	if lex != nil {
		t.Fatal("the word lists were loaded before the measurement")
	}
	before := liveHeap()
	s := NewScanner(nil)
	after := liveHeap()
	runtime.KeepAlive(s)
	if after <= before {
		t.Fatalf("the heap did not grow (%d to %d bytes)", before, after)
	}
	fmt.Printf("lexicon heap: %d bytes\n", after-before)
}

func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
