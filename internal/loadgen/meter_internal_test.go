package loadgen

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       statFields
		bad        bool
	}{
		{name: "plain", text: "4242 (postgres) S 17 4242 4242 0 -1 4194560 1 0 0 0 120 35 7 3 20 0 1 0 5 0 0",
			want: statFields{ppid: 17, utime: 120, stime: 35, cutime: 7, cstime: 3}},
		// A command name may hold spaces and parentheses.
		{name: "odd command", text: "9 (a) b (c)) R 1 9 9 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0",
			want: statFields{ppid: 1, utime: 5, stime: 6}},
		{name: "no command", text: "9 a R 1", bad: true},
		{name: "short", text: "9 (a) R 1 9 9", bad: true},
		{name: "not a number", text: "9 (a) R 1 9 9 0 -1 0 0 0 0 0 x 6 0 0 20", bad: true},
		{name: "empty", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.text))
			if tc.bad {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestProcCPUOfThisProcess reads this process's /proc entry: the CPU time
// only grows as the process works, and its parent is the one the OS says.
func TestProcCPUOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	before, err := ProcCPU(os.Getpid(), false)
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 200_000_000 {
		x ^= i * i
	}
	after, err := ProcCPU(os.Getpid(), false)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU %v after work, %v before (x=%d)", after, before, x)
	}
	ppid, err := ParentPID(os.Getpid())
	if err != nil || ppid != os.Getppid() {
		t.Errorf("ParentPID = %d, %v; want %d", ppid, err, os.Getppid())
	}
	tree, err := TreeCPU(os.Getpid())
	if err != nil || tree < after {
		t.Errorf("TreeCPU = %v, %v; want at least %v", tree, err, after)
	}
}
