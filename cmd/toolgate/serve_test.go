package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServe starts the embedded demo service on a free port, takes a turn
// through a pause with the printed demo keys, and stops it.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := filepath.Join(t.TempDir(), "data")
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data}, &env{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr})
		pw.Close()
	}()

	// Read the start-up lines: the address, then the two demo keys.
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
	if base == "" || keys["traveller"] == "" || keys["approver"] == "" {
		t.Fatalf("start-up output: base %q keys %v; stderr: %s", base, keys, stderr.String())
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()

	call := func(method, path, key, body string, want int) map[string]any {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, resp.StatusCode, out, want)
		}
		return out
	}
	call("GET", "/healthz", "", "", 200)
	call("GET", "/v1/inbox", "", "", 401)
	conv := call("POST", "/v1/conversations", keys["traveller"], `{}`, 201)["id"].(string)
	turn := call("POST", "/v1/conversations/"+conv+"/messages", keys["traveller"], `{"input":"Check flight VX205 and book it if it is on time."}`, 200)
	if turn["status"] != "paused" {
		t.Fatalf("turn %v, want paused", turn)
	}
	pause := turn["pause"].(map[string]any)["id"].(string)
	if got := call("GET", "/v1/inbox", keys["approver"], "", 200)["pauses"].([]any); len(got) != 1 {
		t.Fatalf("approver's inbox %v, want one pause", got)
	}
	call("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", keys["traveller"], `{"decisions":[{"key":"call_book","verdict":"allow"}]}`, 403)
	out := call("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", keys["approver"], `{"decisions":[{"key":"call_book","verdict":"allow"}]}`, 200)
	if out["text"] != "VX205 is on time. Your seat on VX205 is booked." {
		t.Errorf("answer %v", out)
	}
	call("GET", "/readyz", "", "", 200)
	// The metrics, unauthenticated, hold the demo agent's tool runs.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `toolgate_tool_runs_total{agent="flights",status="ok",tool="bookFlight"} 1`; err != nil || resp.StatusCode != 200 || !strings.Contains(string(metrics), want) {
		t.Errorf("GET /metrics: %d %v, want a body with %s:\n%s", resp.StatusCode, err, want, metrics)
	}
	// The traveller reads the conversation's audit records.
	if a := call("GET", "/v1/conversations/"+conv+"/audit", keys["traveller"], "", 200); a["verified"] != true || len(a["records"].([]any)) != 4 {
		t.Errorf("audit %v, want 4 verified records", a)
	}

	// An open event stream does not hold up the shutdown: it ends.
	sreq, err := http.NewRequest("GET", base+"/v1/conversations/"+conv+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	sreq.Header.Set("Authorization", "Bearer "+keys["traveller"])
	sresp, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if ct := sresp.Header.Get("Content-Type"); sresp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("event stream: %d %s", sresp.StatusCode, ct)
	}

	// The pages: a demo key signs in, and the session cookie reads the API.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.PostForm(base+"/signin", url.Values{"key": {keys["approver"]}, "next": {"/inbox"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/inbox" || len(resp.Cookies()) != 1 {
		t.Fatalf("sign in: %d to %q with cookies %v, want 303 to /inbox with the session cookie", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/inbox", nil)
	req.AddCookie(resp.Cookies()[0])
	page, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || page.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET /inbox signed in: %d, CSP %q; want 200 with a CSP", page.StatusCode, page.Header.Get("Content-Security-Policy"))
	}

	cancel()
	if b, err := io.ReadAll(sresp.Body); err != nil || len(b) != 0 {
		t.Errorf("event stream at shutdown: %q %v, want its end", b, err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("serve exited with %d; stderr: %s", code, stderr.String())
	}
	if r := <-rest; !strings.Contains(r, "toolgate serve: stopped") {
		t.Errorf("output after the start-up lines: %q, want the stop line", r)
	}
	if _, err := os.Stat(filepath.Join(data, "toolgate.db")); err != nil {
		t.Errorf("no store under --data: %v", err)
	}
	if code, out, errOut := runArgs(t, "", false, "audit", "verify", "--db", filepath.Join(data, "toolgate.db")); code != 0 || !strings.Contains(out, "intact, 4 records") {
		t.Errorf("audit verify of the demo's log: exit %d\n%s%s", code, out, errOut)
	}
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{{"serve", "extra"}, {"serve", "--nope"}} {
		var out, errOut syncBuffer
		if code := run(context.Background(), args, &env{stdout: &out, stderr: &errOut}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	var out, errOut syncBuffer
	if code := run(context.Background(), []string{"serve", "--addr", "256.0.0.1:99999", "--data", t.TempDir()}, &env{stdout: &out, stderr: &errOut}); code != 1 {
		t.Errorf("bad address: exit %d, want 1", code)
	}
}
