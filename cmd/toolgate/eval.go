package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/privacy"
)

const evalUsage = `Usage: toolgate eval pii --data FILE [--labels L=TYPE,...] [--min-f2 X] [--min-type-f2 TYPE=X,...]

Scores the default PII scanner (the built-in recognizers and the embedded
recognizer of names, places, organisations, addresses and dates) on
labelled data: a JSON list of {"full_text", "spans": [{"entity_type",
"start_position", "end_position"}]} records with offsets in Unicode code
points (the presidio-research format). A prediction matches a labelled span
when each covers at least 90% of the other.

Every type labelled in the file is scored (a type never predicted scores as
misses); predictions of types the file does not label are listed apart as
false positives. Prints precision, recall and F2 per type, overall (types
must agree) and type-agnostic, and the scan throughput. A type without
labelled values prints n/a. A second table scores the same predictions
token by token, as presidio-research does: the text is cut into words and
single punctuation marks, each takes the type of the labelled span and of
the prediction it overlaps, and precision, recall and F2 count tokens. The
thresholds apply to the span scores.

Exit status: 0 when every threshold is met, 1 when one is missed or the
file cannot be read as labelled data, 2 for a usage error.

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
	labels := fs.String("labels", "", "map the file's labels to the scanner's types, `LABEL=TYPE,...` (e.g. GPE=LOCATION,PER=PERSON; LABEL= ignores a label)")
	minF2 := fs.Float64("min-f2", 0, "exit 1 when the type-agnostic F2 is below this `score` (0: never)")
	minType := fs.String("min-type-f2", "", "exit 1 when a type's F2 is below its `TYPE=score,...` (a listed type without labelled values fails too)")
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
	labelMap, err := privacy.ParseLabels(*labels)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate eval pii: --labels: %v\n", err)
		return 2
	}
	thresholds, err := parseThresholds(*minType)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate eval pii: --min-type-f2: %v\n", err)
		return 2
	}
	f, err := os.Open(*data)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate eval pii: %v\n", err)
		return 1
	}
	defer f.Close()
	report, err := privacy.Evaluate(f, privacy.NewScanner(nil), &privacy.EvalOptions{Labels: labelMap})
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate eval pii: %s: %v\n", *data, err)
		return 1
	}
	if err := report.WriteText(e.stdout); err != nil {
		return 1
	}
	code := 0
	if *minF2 > 0 && !(report.Agnostic.F2 >= *minF2) {
		fmt.Fprintf(e.stderr, "toolgate eval pii: type-agnostic F2 %.3f is below %.3f\n", report.Agnostic.F2, *minF2)
		code = 1
	}
	for _, th := range thresholds {
		s := report.Score(th.typ)
		switch {
		case s == nil || s.Support() == 0:
			fmt.Fprintf(e.stderr, "toolgate eval pii: %s has no labelled values in %s\n", th.typ, *data)
			code = 1
		case !(s.F2 >= th.min):
			fmt.Fprintf(e.stderr, "toolgate eval pii: %s F2 %.3f is below %.3f\n", th.typ, s.F2, th.min)
			code = 1
		}
	}
	return code
}

type threshold struct {
	typ privacy.EntityType
	min float64
}

func parseThresholds(s string) ([]threshold, error) {
	var out []threshold
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("entry %q is not TYPE=score", kv)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || x < 0 || x > 1 {
			return nil, fmt.Errorf("entry %q: the score is not a number from 0 to 1", kv)
		}
		out = append(out, threshold{typ: privacy.EntityType(strings.TrimSpace(k)), min: x})
	}
	return out, nil
}
