// Command toolgate runs toolgate's approval service, its terminal demo and
// the tools around them.
//
// Usage:
//
//	toolgate serve [flags]    the approval service
//	toolgate demo [flags]     the flight-booking story in a terminal, offline
//	toolgate eval pii --data FILE
//	                          score the PII recognizers on labelled data
//	toolgate audit verify --db FILE [--anchor SEQ:HASH]
//	                          check the audit log's hash chain
//	toolgate load --url URL   measure a running service's decisions per second
//	toolgate help             this text
//
// Run "toolgate serve -h" or "toolgate demo -h" for their flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, interactive: isTerminal(os.Stdin), program: programName(os.Args[0])}
	os.Exit(run(ctx, os.Args[1:], env))
}

// env is what a command reads and writes; tests replace it.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// interactive is true when stdin is a terminal a person types at.
	interactive bool
	// program is how the person runs this command, for the commands it
	// prints: "toolgate", "go run ./cmd/toolgate" or a path. "":
	// "toolgate".
	program string
}

// programName returns how to run this command again from the shell it
// was started in: "go run ./cmd/toolgate" for a binary that go run built
// in a temporary directory, the name alone when the shell finds this very
// binary by it, the path given otherwise.
func programName(arg0 string) string {
	if strings.Contains(arg0, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/toolgate"
	}
	base := filepath.Base(arg0)
	if found, err := exec.LookPath(base); err == nil {
		a, errA := filepath.Abs(found)
		b, errB := filepath.Abs(arg0)
		if errA == nil && errB == nil && (a == b || base == arg0) {
			return base
		}
	}
	return shellQuote(arg0)
}

// shellQuote returns s as one word of a POSIX shell command line.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-=:@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

const usage = `toolgate: tool calls that wait for a person's decision

Usage:
  toolgate serve [flags]  run the approval service (see toolgate serve -h)
  toolgate demo [flags]   run the flight-booking story in a terminal, offline (see toolgate demo -h)
  toolgate eval pii --data FILE
                          score the PII recognizers on labelled data
  toolgate audit verify --db FILE [--anchor SEQ:HASH]
                          check the audit log's hash chain
  toolgate load --url URL measure a running service's decisions per second
  toolgate help           show this text
`

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return runDemo(ctx, args[1:], e)
	case "serve":
		return runServe(ctx, args[1:], e)
	case "eval":
		return runEval(ctx, args[1:], e)
	case "audit":
		return runAudit(ctx, args[1:], e)
	case "load":
		return runLoad(ctx, args[1:], e)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(e.stdout, usage)
		return 0
	default:
		fmt.Fprintf(e.stderr, "toolgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
