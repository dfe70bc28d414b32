package mcptool_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcptool"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/toolgatetest"
)

// These tests run real MCP servers from npm, installed by .ci/run into
// .cache/mcp-servers (or the directory TOOLGATE_MCP_SERVERS names):
//
//	npm install --prefix .cache/mcp-servers @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31
//
// Without them (or without node) the tests fail under CI=true and are
// skipped otherwise.

// npmServer returns the command line that starts the npm package pkg.
func npmServer(t *testing.T, pkg string, args ...string) mcptool.Dialer {
	t.Helper()
	missing := func(format string, a ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, a...)
		}
		t.Skipf(format+" (run .ci/run, or the npm install line in npm_test.go)", a...)
	}
	dir := os.Getenv("TOOLGATE_MCP_SERVERS")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "mcp-servers")
	}
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		missing("MCP server %s is not installed: %v", pkg, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: %v", err)
	}
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	return mcptool.Command(node, &mcptool.CommandOptions{Args: append([]string{abs}, args...)})
}

func TestFilesystemServer(t *testing.T) {
	root := t.TempDir()
	dial := npmServer(t, "server-filesystem", root)

	t.Run("annotations", func(t *testing.T) {
		srv, err := mcptool.Connect(t.Context(), dial, &mcptool.Options{Prefix: "fs_"})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		for name, want := range map[string]bool{"fs_write_file": true, "fs_edit_file": true, "fs_read_text_file": false, "fs_create_directory": false} {
			if got := toolNamed(t, srv.Tools(), name).Metadata().RequiresConfirmation; got != want {
				t.Errorf("%s: RequiresConfirmation %v, want %v (destructiveHint rule)", name, got, want)
			}
		}
		if issues := srv.Issues(); len(issues) > 0 {
			t.Errorf("skipped tools: %v", issues)
		}
	})

	// write_file gated by name alone (annotations ignored): the turn pauses,
	// and the person's decision decides whether the file is written.
	srv, err := mcptool.Connect(t.Context(), dial, &mcptool.Options{
		Prefix: "fs_", Hints: mcptool.HintNone, ConfirmTools: []string{"fs_write_file"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if toolNamed(t, srv.Tools(), "fs_edit_file").Metadata().RequiresConfirmation {
		t.Error("fs_edit_file needs confirmation with hints off")
	}
	for _, allow := range []bool{true, false} {
		name := "denied.txt"
		if allow {
			name = "allowed.txt"
		}
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(root, name)
			args := `{"path":` + quote(file) + `,"content":"hello from toolgate"}`
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "w1", Name: "fs_write_file", Arguments: args}}},
				scripted.Reply{Text: "done"},
			)
			client := toolgate.NewClient(model, srv.Tools(), nil)
			resp, err := client.Call(t.Context(), &toolgate.CallParams{ConversationID: name, Input: "write the file"})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Paused() || len(resp.Awaiting) != 1 || resp.Awaiting[0] != "w1" {
				t.Fatalf("paused %v awaiting %v, want a pause on w1", resp.Paused(), resp.Awaiting)
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the file exists before any decision: %v", err)
			}
			d := toolgate.Deny("w1", "")
			if allow {
				d = toolgate.Allow("w1")
			}
			if _, err := client.Resume(t.Context(), &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, client, name), ConversationID: name, Decisions: []toolgate.Decision{d}}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(file)
			switch {
			case allow && (err != nil || string(b) != "hello from toolgate"):
				t.Errorf("allowed: got %q, %v; want the content written", b, err)
			case !allow && !errors.Is(err, os.ErrNotExist):
				t.Errorf("denied: the file exists (%q, %v)", b, err)
			}
		})
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestEverythingServer(t *testing.T) {
	dial := npmServer(t, "server-everything", "stdio")
	srv, err := mcptool.Connect(t.Context(), dial, &mcptool.Options{Prefix: "ev_", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tools := srv.Tools()
	t.Logf("%d tools exposed, %d skipped: %v", len(tools), len(srv.Issues()), srv.Issues())
	if len(tools) < 5 {
		t.Fatalf("tools: %v", names(tools))
	}

	t.Run("text", func(t *testing.T) {
		got, err := call(t.Context(), toolNamed(t, tools, "ev_echo"), `{"message":"hi"}`)
		if err != nil || !strings.Contains(got, "hi") {
			t.Errorf("got %q, %v", got, err)
		}
	})
	t.Run("structured", func(t *testing.T) {
		got, err := call(t.Context(), toolNamed(t, tools, "ev_get-structured-content"), `{"location":"Chicago"}`)
		if err != nil {
			t.Fatal(err)
		}
		// The server repeats the structured result as text: it appears once.
		if strings.Count(got, `"temperature"`) != 1 || !strings.Contains(got, `"conditions"`) {
			t.Errorf("got %q, want the weather as JSON, once", got)
		}
	})
	t.Run("error result", func(t *testing.T) {
		_, err := call(t.Context(), toolNamed(t, tools, "ev_get-sum"), `{"a":"one","b":2}`)
		var te *mcptool.ToolError
		if !errors.As(err, &te) || te.Content == "" {
			t.Errorf("got %v, want a *ToolError with the server's message", err)
		}
	})
	t.Run("image", func(t *testing.T) {
		got, err := call(t.Context(), toolNamed(t, tools, "ev_get-tiny-image"), `{}`)
		if err != nil || !strings.Contains(got, "[image: image/png") {
			t.Errorf("got %q, %v; want the image described", got, err)
		}
	})
	t.Run("cancel slow tool", func(t *testing.T) {
		slow := toolNamed(t, tools, "ev_trigger-long-running-operation")
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := call(ctx, slow, `{"duration":60,"steps":60}`)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("the call returned after %v, not when cancelled", el)
		}
		// The connection is still usable.
		if got, err := call(t.Context(), toolNamed(t, tools, "ev_echo"), `{"message":"still here"}`); err != nil || !strings.Contains(got, "still here") {
			t.Errorf("after the cancellation: got %q, %v", got, err)
		}
	})
}
