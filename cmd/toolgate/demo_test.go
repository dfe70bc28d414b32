package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runArgs runs the command in-process and returns its exit code and output.
func runArgs(t *testing.T, stdin string, interactive bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, interactive: interactive})
	return code, out.String(), errb.String()
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"yes", []string{"demo", "--yes"}, 0, "Your seat on VX205 is booked."},
		{"no", []string{"demo", "--no", "User cancelled the booking."}, 0, "[call_book] bookFlight denied: User cancelled the booking."},
		{"no empty message", []string{"demo", "--no", ""}, 0, "bookFlight denied: The user did not allow this tool call."},
		{"yes and no", []string{"demo", "--yes", "--no", "x"}, 2, "exclude each other"},
		{"resume without db", []string{"demo", "--resume"}, 2, "--resume needs --db"},
		{"stray argument", []string{"demo", "now"}, 2, "unexpected argument"},
		{"unknown flag", []string{"demo", "--fast"}, 2, "flag provided but not defined"},
		{"empty conversation", []string{"demo", "--conversation", ""}, 2, "must not be empty"},
		{"help", []string{"demo", "-h"}, 0, "Usage: toolgate demo"},
		{"no command", nil, 2, "Usage:"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"top help", []string{"help"}, 0, "toolgate demo [flags]"},
		{"unknown user", []string{"demo", "--user", "mallory"}, 2, `unknown --user "mallory"`},
		{"policy without user", []string{"demo", "--policy", "x.cedar"}, 2, "--policy needs --user"},
		{"unknown provider", []string{"demo", "--provider", "acme"}, 2, `unknown --provider "acme"`},
		{"model without provider", []string{"demo", "--model", "x"}, 2, "--model needs --provider"},
		{"missing policy file", []string{"demo", "--user", "alice", "--policy", "no/such.cedar", "--yes"}, 1, "no/such.cedar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runArgs(t, "", false, tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			mustContain(t, out+errOut, tc.want)
		})
	}
}

func TestDemoYesRunsEachToolOnce(t *testing.T) {
	code, out, _ := runArgs(t, "", false, "demo", "--yes")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	mustContain(t, out,
		"[call_status] flightStatus {\"flight\":\"VX205\"}  (runs without confirmation)",
		"[call_book] bookFlight {\"flight\":\"VX205\"}  (needs your decision)",
		"[call_status] flightStatus ok: \"Flight VX205 is on time\"",
		"[call_book] bookFlight ok: \"Booked VX205\"",
		"Tool runs in this process: flightStatus 1, bookFlight 1",
	)
}

func TestDemoNoRunsOnlyStatus(t *testing.T) {
	code, out, _ := runArgs(t, "", false, "demo", "--no", "Too expensive.")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	mustContain(t, out, "I did not run bookFlight: Too expensive.", "Tool runs in this process: flightStatus 1, bookFlight 0")
}

func TestDemoInteractive(t *testing.T) {
	t.Run("bad input then yes", func(t *testing.T) {
		code, out, _ := runArgs(t, "maybe\n\ny\n", true, "demo")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if n := strings.Count(out, "Please answer y (allow) or n (deny)."); n != 2 {
			t.Errorf("%d second chances, want 2:\n%s", n, out)
		}
		mustContain(t, out, "bookFlight 1")
	})
	t.Run("deny with a message", func(t *testing.T) {
		code, out, _ := runArgs(t, "n\nBook the later flight instead.\n", true, "demo")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		mustContain(t, out, "bookFlight denied: Book the later flight instead.", "bookFlight 0")
	})
	t.Run("deny at end of input", func(t *testing.T) {
		code, out, _ := runArgs(t, "no", true, "demo")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		mustContain(t, out, "bookFlight denied: The user did not allow this tool call.")
	})
	t.Run("end of input stops at the pause", func(t *testing.T) {
		code, out, _ := runArgs(t, "", true, "demo")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		mustContain(t, out, "Stopped at the pause. Nothing ran")
		if strings.Contains(out, "Tool results") {
			t.Errorf("a tool ran:\n%s", out)
		}
	})
}

func TestDemoPauseKeptInDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	code, out, _ := runArgs(t, "", false, "demo", "--db", db)
	if code != 0 {
		t.Fatalf("first run: exit %d:\n%s", code, out)
	}
	mustContain(t, out, "the pause is kept in "+db, "--resume --yes")
	if strings.Contains(out, "Tool results") {
		t.Fatalf("a tool ran before the decision:\n%s", out)
	}
	// A second turn on the paused conversation is refused.
	code, _, errOut := runArgs(t, "", false, "demo", "--db", db)
	if code != 1 || !strings.Contains(errOut, "already waits for a decision") {
		t.Errorf("second start: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = runArgs(t, "", false, "demo", "--db", db, "--resume", "--no", "Not today.")
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, out)
	}
	mustContain(t, out, "bookFlight denied: Not today.", "flightStatus 1, bookFlight 0")
	code, _, errOut = runArgs(t, "", false, "demo", "--db", db, "--resume", "--yes")
	if code != 1 || !strings.Contains(errOut, "no open pause") {
		t.Errorf("second resume: exit %d, stderr %q", code, errOut)
	}
}

func TestDemoBadDatabase(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(bad, []byte("this is not a database, just text that is long enough to fill a header ..........................................................................."), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing", "dir", "x.db")} {
		code, _, errOut := runArgs(t, "", false, "demo", "--db", path, "--yes")
		if code != 1 || errOut == "" {
			t.Errorf("--db %s: exit %d, stderr %q; want a clear error", path, code, errOut)
		}
	}
}

// TestMain lets the test binary act as the command, so that a test can run
// the demo in separate processes.
func TestMain(m *testing.M) {
	if os.Getenv("TOOLGATE_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestDemoResumeInAnotherProcess(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	runProc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"demo", "--db", db}, args...)...)
		cmd.Env = append(os.Environ(), "TOOLGATE_TEST_MAIN=1")
		cmd.Stdin = strings.NewReader("") // not a terminal
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := runProc()
	mustContain(t, out, "Stopped at the pause")
	out = runProc("--resume", "--yes")
	mustContain(t, out, "[call_book] bookFlight ok", "Tool runs in this process: flightStatus 1, bookFlight 1", "Your seat on VX205 is booked.")
}

func TestDemoUsers(t *testing.T) {
	code, out, _ := runArgs(t, "", false, "demo", "--user", "alice", "--yes")
	if code != 0 {
		t.Fatalf("alice: exit %d:\n%s", code, out)
	}
	mustContain(t, out, "The model was offered: flightStatus, bookFlight", "bookFlight ok", "flightStatus 1, bookFlight 1")

	code, out, _ = runArgs(t, "", false, "demo", "--user", "bob", "--yes")
	if code != 0 {
		t.Fatalf("bob: exit %d:\n%s", code, out)
	}
	mustContain(t, out, "The model was offered: flightStatus\n", "flightStatus 1, bookFlight 0")
	if strings.Contains(out, "paused") {
		t.Errorf("bob's turn paused on a tool he cannot see:\n%s", out)
	}
}

func TestDemoBadPolicyFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.cedar")
	if err := os.WriteFile(bad, []byte("permit (principal, action, resource"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runArgs(t, "", false, "demo", "--user", "alice", "--policy", bad, "--yes")
	if code != 1 || !strings.Contains(errOut, "bad.cedar") {
		t.Errorf("exit %d, stderr %q; want a load error naming the file", code, errOut)
	}
}

func TestDemoPrivacy(t *testing.T) {
	code, out, _ := runArgs(t, "", false, "demo", "--privacy", "--yes")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	mustContain(t, out,
		"The model saw:         Check flight VX205 and book it if it is on time, for [EMAIL_ADDRESS_1], card [CREDIT_CARD_1].",
		`bookFlight received:   {"flight":"VX205","email":"ada.lovelace@example.com","card":"[CREDIT_CARD_1]"}`,
		"The model got back:    bookFlight \"Booked VX205; the ticket goes to [EMAIL_ADDRESS_1]\"",
	)
	if strings.Contains(out, "4111 1111 1111 1111\"") || strings.Count(out, "4111 1111 1111 1111") != 1 {
		t.Errorf("the card number appears beyond the user's own message:\n%s", out)
	}
}

func TestDemoProviderWithoutKey(t *testing.T) {
	for provider, env := range map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"} {
		t.Run(provider, func(t *testing.T) {
			for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
				t.Setenv(v, "")
			}
			code, _, errOut := runArgs(t, "", false, "demo", "--provider", provider, "--yes")
			if code != 1 || !strings.Contains(errOut, env) {
				t.Errorf("exit %d, stderr %q; want 1 and a message naming %s", code, errOut, env)
			}
		})
	}
}

// TestDemoOnOpenAICompatibleServer runs the story on --provider openai
// against a local server speaking the Chat Completions format.
func TestDemoOnOpenAICompatibleServer(t *testing.T) {
	var requests []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		requests = append(requests, body)
		msgs := body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		msg := map[string]any{"role": "assistant", "content": "Checking, then booking."}
		finish := "tool_calls"
		if last["role"] == "tool" {
			msg = map[string]any{"role": "assistant", "content": "VX205 is on time and booked."}
			finish = "stop"
		} else {
			msg["tool_calls"] = []any{
				map[string]any{"id": "call_s", "type": "function", "function": map[string]any{"name": "flightStatus", "arguments": `{"flight":"VX205"}`}},
				map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "bookFlight", "arguments": `{"flight":"VX205"}`}},
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	code, out, errOut := runArgs(t, "", false, "demo", "--provider", "openai", "--model", "local-model", "--yes")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "a flight-booking agent on openai", "[call_b] bookFlight ok", "assistant: VX205 is on time and booked.", "flightStatus 1, bookFlight 1")
	if len(requests) != 2 || requests[0]["model"] != "local-model" {
		t.Fatalf("requests %v", requests)
	}
	tools := requests[0]["tools"].([]any)
	if len(tools) != 2 {
		t.Errorf("the model was offered %d tools, want 2", len(tools))
	}
}
