package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/toolgate/toolgate/audit"
	auditpg "github.com/toolgate/toolgate/audit/postgres"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
)

const auditUsage = `Usage: toolgate audit verify (--db FILE | --postgres URL [--schema NAME]) [--anchor SEQ:HASH]

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
	fmt.Fprintf(e.stdout, "%s: intact, %d records\n", *db, report.Records)
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
