package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/toolgate/toolgate/audit"
	auditpg "github.com/toolgate/toolgate/audit/postgres"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
)

const auditUsage = `Usage: toolgate audit verify (--db FILE | --postgres URL [--schema NAME]) [--anchor SEQ:HASH] [--state FILE]

Verifies the audit log in the SQLite database FILE, or in a schema of the
PostgreSQL database at URL (the one chain every instance of a service
sharing that schema writes; the URL may also come from the environment
variable TOOLGATE_AUDIT_POSTGRES_URL, to keep its password off the command
line), without changing it:
recomputes the hash of every record and checks that each links to the one
before it, numbered 1, 2, 3, … without gaps. Any altered, deleted,
inserted or reordered record is reported, except the deletion of records
at the end of the log (or a rewrite of every hash after a change): for
those, give an anchor, the sequence number and hash of a record published
or kept elsewhere earlier; the log must still hold that record.

With --state FILE the verification is incremental: FILE holds the head a
previous run found intact (SEQ:HASH); the log must still hold that record,
and only the records after it are checked. After a successful run FILE
holds the new head (it is created when missing, and then the whole log is
checked).

Exit status: 0 when the log is intact, 1 at the first broken record or when
the log cannot be read, 2 on bad usage.

Flags:
`

// runAudit runs "toolgate audit verify".
func runAudit(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprint(e.stderr, auditUsage)
		return 2
	}
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, auditUsage)
		fs.PrintDefaults()
	}
	db := fs.String("db", "", "the SQLite database `file` holding the log")
	pgURL := fs.String("postgres", "", "the `URL` of the PostgreSQL database holding the log")
	schema := fs.String("schema", "", "the PostgreSQL `schema` holding the log (default public)")
	anchorText := fs.String("anchor", "", "a record the log must hold, as `SEQ:HASH` (optional)")
	statePath := fs.String("state", "", "a `file` keeping the head of the last verification, to verify from it (optional)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *pgURL == "" && *db == "" {
		*pgURL = os.Getenv("TOOLGATE_AUDIT_POSTGRES_URL")
	}
	if (*db == "") == (*pgURL == "") || fs.NArg() > 0 || (*schema != "" && *pgURL == "") {
		fmt.Fprintln(e.stderr, "toolgate audit verify: give the database with --db FILE or --postgres URL (with --schema NAME)")
		return 2
	}
	var opts audit.VerifyOptions
	if *anchorText != "" {
		a, err := audit.ParseAnchor(*anchorText)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate audit verify: --anchor: %v\n", err)
			return 2
		}
		opts.Anchor = &a
	}
	if *statePath != "" {
		b, err := os.ReadFile(*statePath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			fmt.Fprintf(e.stderr, "toolgate audit verify: --state: %v\n", err)
			return 1
		default:
			a, err := audit.ParseAnchor(strings.TrimSpace(string(b)))
			if err != nil {
				fmt.Fprintf(e.stderr, "toolgate audit verify: --state %s: %v\n", *statePath, err)
				return 1
			}
			opts.From = &a
		}
	}
	var l interface {
		audit.Reader
		Close() error
	}
	var err error
	if *pgURL != "" {
		l, err = auditpg.Open(ctx, *pgURL, &auditpg.Options{Schema: *schema, ReadOnly: true})
		*db = "schema " + cmp.Or(*schema, "public")
	} else {
		l, err = auditsqlite.Open(ctx, *db, &auditsqlite.Options{ReadOnly: true})
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate audit verify: %v\n", err)
		return 1
	}
	defer l.Close()
	report, err := audit.Verify(ctx, l, &opts)
	if err != nil {
		var re *audit.RecordError
		if errors.As(err, &re) {
			fmt.Fprintf(e.stderr, "toolgate audit verify: %s: BROKEN at record %d (%s)\n", *db, re.Seq, re.Problem)
			fmt.Fprintf(e.stderr, "  %v\n", err)
			fmt.Fprintf(e.stderr, "  intact records before it: %d\n", report.Records)
		} else {
			fmt.Fprintf(e.stderr, "toolgate audit verify: %s: %v\n", *db, err)
		}
		return 1
	}
	if opts.From != nil {
		fmt.Fprintf(e.stdout, "%s: intact from record %s, %d records\n", *db, opts.From, report.Records)
	} else {
		fmt.Fprintf(e.stdout, "%s: intact, %d records\n", *db, report.Records)
	}
	if *statePath != "" && report.Records > 0 {
		tmp := *statePath + ".tmp"
		if err := os.WriteFile(tmp, []byte(report.Head.String()+"\n"), 0o600); err != nil || os.Rename(tmp, *statePath) != nil {
			fmt.Fprintf(e.stderr, "toolgate audit verify: --state: cannot write %s\n", *statePath)
			return 1
		}
	}
	if report.Records > 0 {
		fmt.Fprintf(e.stdout, "head: %s\n", report.Head)
	}
	if report.Anchored {
		fmt.Fprintf(e.stdout, "anchor %s: held\n", opts.Anchor)
	} else {
		fmt.Fprintln(e.stdout, "no anchor given: deletions at the end of the log cannot be detected; keep the head elsewhere and pass it with --anchor")
	}
	return 0
}
