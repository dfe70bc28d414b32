package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/loadgen"
)

const loadUsage = `Usage: toolgate load --url URL[,URL...] [flags]

Measures a running service: opens --pauses conversations whose turns pause,
then decides them all with --concurrency requests in flight, and prints the
decisions resolved per second and the latency percentiles of posting a
message and of deciding. Requests go round-robin over the URLs; each pause
is decided through another URL than the one that opened it when several are
given. The keys come from the environment variables named by --requester-env
and --approver-env, never from the command line.

Against "toolgate serve" with no flags, export the two demo keys it prints:

  export TOOLGATE_REQUESTER_KEY=tg_demo_... TOOLGATE_APPROVER_KEY=tg_demo_...
  toolgate load --url http://127.0.0.1:8080

With --pid, the report also gives what one pause cost in each phase: the
CPU time of those processes (the service's instances, from /proc), and,
with --postgres-env naming a variable that holds the URL of the service's
PostgreSQL database (a server on this machine), the CPU time of the
PostgreSQL server's processes, its commits, write transactions and WAL
flushes. Reading PostgreSQL's statistics waits --settle before each phase
and after the last one, until the backends have reported their counts.

Exit status: 0 after a complete run, 1 when a request fails, 2 on bad usage.

Flags:
`

// runLoad runs "toolgate load".
func runLoad(ctx context.Context, args []string, e *env) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, loadUsage)
		fs.PrintDefaults()
	}
	urls := fs.String("url", "", "the service's base `URLs`, comma-separated (required)")
	reqEnv := fs.String("requester-env", "TOOLGATE_REQUESTER_KEY", "the environment `variable` holding a requester's API key")
	apprEnv := fs.String("approver-env", "TOOLGATE_APPROVER_KEY", "the environment `variable` holding an approver's API key")
	agent := fs.String("agent", "", "the agent `name` of the conversations (default: the service's only agent)")
	input := fs.String("input", flightdemo.Input, "the `message` posted; its turn must pause")
	pauses := fs.Int("pauses", 1000, "how many pauses to open and decide")
	conc := fs.Int("concurrency", 32, "requests in flight at once")
	verdict := fs.String("verdict", "allow", "the decision of every awaiting call: allow or deny")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pids := fs.String("pid", "", "the service's process `IDs`, comma-separated: measure their CPU per pause")
	pgEnv := fs.String("postgres-env", "", "the environment `variable` holding the URL of the service's PostgreSQL database, to measure it too (needs --pid)")
	settle := fs.Duration("settle", loadgen.DefaultSettle, "how long to wait for PostgreSQL's statistics before reading them")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *urls == "" || fs.NArg() > 0 {
		fmt.Fprintln(e.stderr, "toolgate load: give the service with --url URL")
		return 2
	}
	o := loadgen.Options{
		URLs: strings.Split(*urls, ","), RequesterKey: os.Getenv(*reqEnv), ApproverKey: os.Getenv(*apprEnv),
		Agent: *agent, Input: *input, Pauses: *pauses, Concurrency: *conc, Verdict: *verdict,
	}
	if o.RequesterKey == "" || o.ApproverKey == "" {
		fmt.Fprintf(e.stderr, "toolgate load: set %s and %s to the API keys of a requester and an approver\n", *reqEnv, *apprEnv)
		return 2
	}
	if *pauses <= 0 || *conc <= 0 {
		fmt.Fprintln(e.stderr, "toolgate load: --pauses and --concurrency must be positive")
		return 2
	}
	if *pids != "" {
		m := &loadgen.ProcMeter{}
		for _, f := range strings.Split(*pids, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				fmt.Fprintf(e.stderr, "toolgate load: --pid: %q is not a process ID\n", f)
				return 2
			}
			m.PIDs = append(m.PIDs, pid)
		}
		if *pgEnv != "" {
			url := os.Getenv(*pgEnv)
			if url == "" {
				fmt.Fprintf(e.stderr, "toolgate load: --postgres-env: %s is not set\n", *pgEnv)
				return 2
			}
			pg, err := loadgen.NewPostgresMeter(ctx, url, *settle)
			if err != nil {
				fmt.Fprintf(e.stderr, "toolgate load: %v\n", err)
				return 1
			}
			defer pg.Close(context.WithoutCancel(ctx))
			m.Database = pg
		}
		o.Meter = m
	} else if *pgEnv != "" {
		fmt.Fprintln(e.stderr, "toolgate load: --postgres-env needs --pid, the service's processes")
		return 2
	}
	rep, err := loadgen.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate load: %v\n", err)
		if strings.Contains(err.Error(), "invalid options") {
			return 2
		}
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return 0
	}
	fmt.Fprintln(e.stdout, rep)
	return 0
}
