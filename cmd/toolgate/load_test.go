package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// demoServe starts "toolgate serve" with its embedded demo on a free port
// and returns its base URL and the demo keys by user; the service stops
// at the end of the test.
func demoServe(t *testing.T) (string, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data")}, &env{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr})
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited with %d; stderr: %s", code, stderr.String())
		}
	})
	lines := bufio.NewScanner(pr)
	var base string
	keys := map[string]string{}
	for len(keys) < 2 && lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "toolgate serve: listening on "); ok {
			base = strings.Fields(rest)[0]
		}
		if f := strings.Fields(line); len(f) > 3 && f[0] == "DEMO" && f[1] == "user" {
			keys[f[2]] = f[len(f)-1]
		}
	}
	go io.Copy(io.Discard, pr) // the service's later output
	if base == "" || len(keys) < 2 {
		t.Fatalf("start-up output: base %q keys %v; stderr: %s", base, keys, stderr.String())
	}
	return base, keys
}

func TestLoad(t *testing.T) {
	base, keys := demoServe(t)
	t.Setenv("TG_TEST_REQ", keys["traveller"])
	t.Setenv("TG_TEST_APPR", keys["approver"])
	var out, errOut syncBuffer
	code := run(context.Background(), []string{"load", "--url", base + "," + base, "--requester-env", "TG_TEST_REQ", "--approver-env", "TG_TEST_APPR",
		"--pauses", "30", "--concurrency", "4", "--json", "--pid", strconv.Itoa(os.Getpid())}, &env{stdout: &out, stderr: &errOut})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep struct {
		Decide struct {
			Count int   `json:"count"`
			P99   int64 `json:"p99"`
		} `json:"decide"`
		Rate    float64 `json:"decisions_per_second"`
		Decided *struct {
			ServiceCPU int64 `json:"service_cpu"`
			Database   bool  `json:"database"`
		} `json:"decided"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.Decide.Count != 30 || rep.Decide.P99 <= 0 || rep.Rate <= 0 {
		t.Errorf("report %+v", rep)
	}
	// The service runs in this process: --pid measured it (to 10 ms, so
	// a short run may round to nothing), without a database.
	if rep.Decided == nil || rep.Decided.ServiceCPU < 0 || rep.Decided.Database {
		t.Errorf("cost per decision %+v; report %s", rep.Decided, out.String())
	}

	// The keys are swapped: the traveller may not decide.
	t.Setenv("TG_TEST_APPR", keys["traveller"])
	errOut = syncBuffer{}
	code = run(context.Background(), []string{"load", "--url", base, "--requester-env", "TG_TEST_REQ", "--approver-env", "TG_TEST_APPR", "--pauses", "3"}, &env{stdout: io.Discard, stderr: &errOut})
	if code != 1 || !strings.Contains(errOut.String(), "status 403") {
		t.Errorf("exit %d, stderr %q; want 1 and the 403", code, errOut.String())
	}
}

func TestLoadUsage(t *testing.T) {
	t.Setenv("TG_TEST_REQ", "r")
	t.Setenv("TG_TEST_APPR", "a")
	t.Setenv("TG_TEST_EMPTY", "")
	closed := httptest.NewServer(nil)
	closed.Close()
	keys := []string{"--requester-env", "TG_TEST_REQ", "--approver-env", "TG_TEST_APPR"}
	for _, tt := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no url", keys, 2, "--url"},
		{"stray argument", append([]string{"--url", "http://x", "extra"}, keys...), 2, "--url"},
		{"key unset", []string{"--url", "http://x", "--requester-env", "TG_TEST_EMPTY"}, 2, "TG_TEST_EMPTY"},
		{"no pauses", append([]string{"--url", "http://x", "--pauses", "0"}, keys...), 2, "positive"},
		{"bad verdict", append([]string{"--url", "http://x", "--verdict", "maybe"}, keys...), 2, "maybe"},
		{"not http", append([]string{"--url", "ftp://x"}, keys...), 2, "not http"},
		{"unreachable", append([]string{"--url", closed.URL, "--pauses", "2"}, keys...), 1, "loadgen: create"},
		{"unknown flag", []string{"--urls", "x"}, 2, "flag provided but not defined"},
		{"bad pid", append([]string{"--url", "http://x", "--pid", "1,x"}, keys...), 2, `"x" is not a process ID`},
		{"postgres without pid", append([]string{"--url", "http://x", "--postgres-env", "TG_TEST_REQ"}, keys...), 2, "needs --pid"},
		{"postgres unset", append([]string{"--url", "http://x", "--pid", "1", "--postgres-env", "TG_TEST_EMPTY"}, keys...), 2, "TG_TEST_EMPTY is not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var errOut syncBuffer
			code := run(context.Background(), append([]string{"load"}, tt.args...), &env{stdout: io.Discard, stderr: &errOut})
			if code != tt.code || !strings.Contains(errOut.String(), tt.says) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errOut.String(), tt.code, tt.says)
			}
		})
	}
}
