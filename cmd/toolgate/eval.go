package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/toolgate/toolgate/privacy"
)

const evalUsage = `Usage: toolgate eval pii --data FILE

Scores the built-in PII recognizers on labelled data: a JSON list of
{"full_text", "spans": [{"entity_type", "start_position", "end_position"}]}
records with offsets in Unicode code points (the presidio-research format).
A prediction matches a gold span of the same type when each covers at least
90% of the other. Prints precision, recall and F2 per type and overall, and
the scan throughput.

Flags:
`

// runEval runs "toolgate eval pii".
func runEval(_ context.Context, args []string, e *env) int {
	if len(args) == 0 || args[0] != "pii" {
		fmt.Fprint(e.stderr, evalUsage)
		return 2
	}
	fs := flag.NewFlagSet("eval pii", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, evalUsage)
		fs.PrintDefaults()
	}
	data := fs.String("data", "", "the labelled data `file` (required)")
	minF2 := fs.Float64("min-f2", 0, "exit 1 when the overall F2 is below this `score` (0: never)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *data == "" || fs.NArg() > 0 {
		fmt.Fprintln(e.stderr, "toolgate eval pii: give the data file with --data FILE")
		return 2
	}
	f, err := os.Open(*data)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate eval pii: %v\n", err)
		return 1
	}
	defer f.Close()
	report, err := privacy.Evaluate(f, privacy.NewScanner(nil))
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate eval pii: %s: %v\n", *data, err)
		return 1
	}
	if err := report.WriteText(e.stdout); err != nil {
		return 1
	}
	if *minF2 > 0 && report.Overall.F2 < *minF2 {
		fmt.Fprintf(e.stderr, "toolgate eval pii: overall F2 %.3f is below %.3f\n", report.Overall.F2, *minF2)
		return 1
	}
	return 0
}
