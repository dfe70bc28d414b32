package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/audit"
	auditpg "github.com/toolgate/toolgate/audit/postgres"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
)

const auditUsage = `Usage: toolgate audit verify (--db FILE | --postgres URL [--schema NAME] [--seal]) [--anchor SEQ:HASH] [--state FILE]
       [--checkpoint FILE (--key PRIVATE.pem | --public-key PUBLIC.pem)]

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

On PostgreSQL, records are sealed into the chain (numbered and hashed)
moments after the transaction that wrote them commits, by any running
instance. Records committed but not sealed yet are listed as pending:
their fields are checked, but no hash covers them until they are sealed,
and checkpoints and --state cover the sealed records only. A service that
runs seals them; --seal seals them before verifying (it needs a connection
that may write the schema; without it the verification writes nothing).

With --state FILE the verification is incremental: FILE holds the head a
previous run found intact (SEQ:HASH); the log must still hold that record,
and only the records after it are checked. After a successful run FILE
holds the new head (it is created when missing, and then the whole log is
checked).

With --checkpoint FILE, FILE holds a signed checkpoint of an earlier head
(JSON: seq, hash, time, an ed25519 signature): its signature must verify
with the public key (--public-key, or the public half of --key), and the log
must hold the record it names, so that a deletion at the end of the log is
detected without keeping an anchor elsewhere. With --key (an ed25519 private
key in PEM, PKCS #8, as "openssl genpkey -algorithm ed25519" writes), a
successful run then writes a new checkpoint of the head to FILE.

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
	checkpointPath := fs.String("checkpoint", "", "a `file` holding a signed checkpoint the log must hold, rewritten with --key (optional)")
	keyPath := fs.String("key", "", "the ed25519 private key (PEM `file`) that signs checkpoints")
	pubPath := fs.String("public-key", "", "the ed25519 public key (PEM `file`) that checks checkpoints")
	seal := fs.Bool("seal", false, "with --postgres: seal the records committed but not sealed yet, then verify")
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
	if *seal && *pgURL == "" {
		fmt.Fprintln(e.stderr, "toolgate audit verify: --seal is for --postgres (a SQLite log seals as it appends)")
		return 2
	}
	if *checkpointPath != "" && (*keyPath == "") == (*pubPath == "") || *checkpointPath == "" && (*keyPath != "" || *pubPath != "") {
		fmt.Fprintln(e.stderr, "toolgate audit verify: --checkpoint FILE needs --key or --public-key, and they need it")
		return 2
	}
	var opts audit.VerifyOptions
	var (
		signKey ed25519.PrivateKey
		pub     ed25519.PublicKey
	)
	if *checkpointPath != "" {
		var err error
		if signKey, pub, err = readKey(*keyPath, *pubPath); err != nil {
			fmt.Fprintf(e.stderr, "toolgate audit verify: %v\n", err)
			return 1
		}
		b, err := os.ReadFile(*checkpointPath)
		switch {
		case errors.Is(err, os.ErrNotExist) && signKey != nil:
			// The first checkpoint is being made.
		case err != nil:
			fmt.Fprintf(e.stderr, "toolgate audit verify: --checkpoint: %v\n", err)
			return 1
		default:
			c, err := audit.ParseCheckpoint(b)
			if err == nil {
				err = c.Verify(pub)
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "toolgate audit verify: --checkpoint %s: %v\n", *checkpointPath, err)
				return 1
			}
			if c.Anchor.Seq > 0 {
				opts.Anchor = &c.Anchor
			}
			fmt.Fprintf(e.stdout, "checkpoint of %s made %s: signature valid\n", c.Anchor, c.Time.Format(time.RFC3339))
		}
	}
	if *anchorText != "" && opts.Anchor != nil {
		fmt.Fprintln(e.stderr, "toolgate audit verify: give --anchor or --checkpoint, not both")
		return 2
	}
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
		*db = "schema " + cmp.Or(*schema, "public")
		if *seal {
			var pl *auditpg.Log
			pl, err = auditpg.Open(ctx, *pgURL, &auditpg.Options{Schema: *schema, SealInterval: -1})
			if err == nil {
				var n uint64
				if n, err = pl.SealPending(ctx); err != nil {
					pl.Close()
				} else {
					fmt.Fprintf(e.stdout, "%s: sealed %d records\n", *db, n)
					l = pl
				}
			}
		} else {
			l, err = auditpg.Open(ctx, *pgURL, &auditpg.Options{Schema: *schema, ReadOnly: true})
		}
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
	if report.Unsealed > 0 {
		fmt.Fprintf(e.stdout, "pending: %d records committed but not sealed yet, after the head (a running service seals them; --seal seals them now)\n", report.Unsealed)
	}
	if signKey != nil {
		b, err := audit.NewCheckpoint(signKey, report.Head, time.Time{}).MarshalJSON()
		tmp := *checkpointPath + ".tmp"
		if err != nil || os.WriteFile(tmp, append(b, '\n'), 0o644) != nil || os.Rename(tmp, *checkpointPath) != nil {
			fmt.Fprintf(e.stderr, "toolgate audit verify: --checkpoint: cannot write %s\n", *checkpointPath)
			return 1
		}
		fmt.Fprintf(e.stdout, "new checkpoint of %s written to %s\n", report.Head, *checkpointPath)
	}
	if report.Anchored {
		fmt.Fprintf(e.stdout, "anchor %s: held\n", opts.Anchor)
	} else if *checkpointPath != "" {
		fmt.Fprintln(e.stdout, "no checkpoint yet: this run made the first")
	} else {
		fmt.Fprintln(e.stdout, "no anchor given: deletions at the end of the log cannot be detected; keep the head elsewhere and pass it with --anchor")
	}
	return 0
}

// readKey reads the ed25519 private key at keyPath (PEM, PKCS #8) or the
// public key at pubPath (PEM, PKIX); one of them is "". The public key is
// the private key's when keyPath is given.
func readKey(keyPath, pubPath string) (ed25519.PrivateKey, ed25519.PublicKey, error) {
	path := cmp.Or(keyPath, pubPath)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, nil, fmt.Errorf("%s: no PEM block", path)
	}
	if keyPath != "" {
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		priv, ok := k.(ed25519.PrivateKey)
		if err != nil || !ok {
			return nil, nil, fmt.Errorf("%s: not an ed25519 private key in PKCS #8", path)
		}
		return priv, priv.Public().(ed25519.PublicKey), nil
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	pub, ok := k.(ed25519.PublicKey)
	if err != nil || !ok {
		return nil, nil, fmt.Errorf("%s: not an ed25519 public key in PKIX", path)
	}
	return nil, pub, nil
}
