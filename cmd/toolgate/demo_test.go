package main

import (
	"bytes"
	"context"
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
