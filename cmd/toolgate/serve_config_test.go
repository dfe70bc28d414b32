package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleConfig returns examples/serve.yaml written to a new directory,
// its store and policies there too.
func exampleConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"serve.yaml", "flights.cedar"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "serve.yaml")
}

// TestServeConfig starts the service of examples/serve.yaml on a free
// port, calls it with the keys the file's hashes are of, and stops it.
func TestServeConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := exampleConfig(t)
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--config", path}, &env{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var base string
	for base == "" && lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "toolgate serve: listening on "); ok {
			base = strings.Fields(rest)[0]
		}
	}
	if base == "" {
		t.Fatalf("no listening line; stderr: %s", stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	call := func(key string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/conversations", strings.NewReader(`{"agent":"flights"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := call("example-traveller-key"); code != 201 {
		t.Errorf("traveller: %d, want 201", code)
	}
	if code := call("example-approver-key"); code != 403 {
		t.Errorf("approver: %d, want 403", code)
	}
	if code := call("not-a-key"); code != 401 {
		t.Errorf("unknown key: %d, want 401", code)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited with %d; stderr: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), ".toolgate-data", "toolgate.db")); err != nil {
		t.Errorf("no store beside the config: %v", err)
	}
}

// TestServeConfigInvalid checks that serve refuses an invalid file and
// names every problem with its position.
func TestServeConfigInvalid(t *testing.T) {
	path := exampleConfig(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "provider: scripted-demo", "provider: scripted-dmo", 1)
	text = strings.Replace(text, "read_all_roles:", "read_all_rolez:", 1)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	if code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--config", path}, &env{stdout: &out, stderr: &errOut}); code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", code, errOut.String())
	}
	for _, want := range []string{path + ":8:17: agents.flights.model.provider: unknown provider", path + ":33:1: unknown key \"read_all_rolez\"", "2 problems"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q does not say %q", errOut.String(), want)
		}
	}
	if strings.Contains(out.String(), "listening") {
		t.Errorf("stdout %q: the server started", out.String())
	}
	if code := run(context.Background(), []string{"serve", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, &env{stdout: &out, stderr: &errOut}); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
