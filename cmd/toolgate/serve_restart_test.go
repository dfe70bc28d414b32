package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// demoServer is a running "toolgate serve" on a data directory.
type demoServer struct {
	t    *testing.T
	base string
	keys map[string]string // demo API keys by user
	stop func()
}

// startDemo runs "toolgate serve --data data" until stop is called.
func startDemo(t *testing.T, data string) *demoServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data}, &env{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr})
		pw.Close()
	}()
	d := &demoServer{t: t, keys: map[string]string{}}
	lines := bufio.NewScanner(pr)
	for len(d.keys) < 2 && lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "toolgate serve: listening on "); ok {
			d.base = strings.Fields(rest)[0]
		}
		if f := strings.Fields(line); len(f) > 3 && f[0] == "DEMO" && f[1] == "user" {
			d.keys[f[2]] = f[len(f)-1]
		}
	}
	if d.base == "" || len(d.keys) < 2 {
		cancel()
		t.Fatalf("start-up output: base %q keys %v; stderr: %s", d.base, d.keys, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	d.stop = func() {
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("serve exited with %d; stderr: %s", code, stderr.String())
		}
	}
	return d
}

func (d *demoServer) call(method, path, user, body string, want int) map[string]any {
	d.t.Helper()
	req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.keys[user])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != want {
		d.t.Fatalf("%s %s: %d %v, want %d", method, path, resp.StatusCode, out, want)
	}
	return out
}

// TestServeRestart restarts the demo service on its data directory: the
// demo users get new keys, but their conversations, the open pause and
// the decision records are still there.
func TestServeRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d := startDemo(t, data)
	conv := d.call("POST", "/v1/conversations", "traveller", `{}`, 201)["id"].(string)
	pause := d.call("POST", "/v1/conversations/"+conv+"/messages", "traveller", `{"input":"Check flight VX205 and book it if it is on time."}`, 200)["pause"].(map[string]any)["id"].(string)
	d.stop()

	d = startDemo(t, data)
	if got := d.call("GET", "/v1/inbox", "approver", "", 200)["pauses"].([]any); len(got) != 1 || got[0].(map[string]any)["pause_id"] != pause {
		t.Fatalf("inbox after a restart: %v, want the pause", got)
	}
	d.call("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", "approver", `{"decisions":[{"key":"call_book","verdict":"allow"}]}`, 200)
	d.stop()

	d = startDemo(t, data)
	defer d.stop()
	recs := d.call("GET", "/v1/conversations/"+conv, "traveller", "", 200)["decisions"].([]any)
	if len(recs) != 1 || recs[0].(map[string]any)["decided_by"] != "approver" || recs[0].(map[string]any)["source"] != "person" {
		t.Errorf("decision records after restarts: %v", recs)
	}
}
