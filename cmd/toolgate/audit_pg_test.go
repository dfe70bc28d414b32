package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/audit"
	auditpg "github.com/toolgate/toolgate/audit/postgres"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// TestAuditVerifyPostgres verifies a log in a PostgreSQL schema, intact
// and tampered with. It needs TOOLGATE_POSTGRES_URL (.ci/postgres.sh), and
// fails without it when CI is set.
func TestAuditVerifyPostgres(t *testing.T) {
	url, schema := pgtest.Schema(t, "toolgate_cmd_test_")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	l, err := auditpg.Open(ctx, url, &auditpg.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var r *audit.Record
	for i := range 4 {
		r = &audit.Record{Time: time.Date(2026, 5, 1, 12, 0, i, 0, time.UTC), ConversationID: "trip-42", Kind: audit.KindRequested,
			Actor: audit.Actor{ID: "alice", Source: audit.SourcePerson}}
		if err := l.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	head := r.Anchor()

	code, out, errOut := runArgs(t, "", false, "audit", "verify", "--postgres", url, "--schema", schema, "--anchor", head.String())
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "schema "+schema+": intact, 4 records", "anchor "+head.String()+": held")

	t.Setenv("TOOLGATE_AUDIT_POSTGRES_URL", url)
	if _, err := conn.Exec(ctx, "UPDATE "+pgx.Identifier{schema}.Sanitize()+".audit_records SET body = replace(body, 'alice', 'mallory') WHERE seq = 2"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runArgs(t, "", false, "audit", "verify", "--schema", schema)
	if code != 1 {
		t.Fatalf("exit %d for a tampered log, want 1\n%s%s", code, out, errOut)
	}
	mustContain(t, errOut, "BROKEN at record 2 (hash_mismatch)")

	code, _, errOut = runArgs(t, "", false, "audit", "verify", "--schema", "toolgate_no_such_schema")
	if code != 1 {
		t.Fatalf("exit %d for a schema without a log, want 1", code)
	}
	mustContain(t, errOut, "not an audit log")
	if code, _, _ := runArgs(t, "", false, "audit", "verify", "--db", "x.db", "--postgres", url); code != 2 {
		t.Errorf("exit %d with both --db and --postgres, want 2", code)
	}
}

// TestAuditVerifyPostgresUnsealed verifies a log holding records committed
// but not sealed yet: they are listed as pending and the verification
// writes nothing; with --seal they are sealed first and verified; --seal
// without --postgres is bad usage.
func TestAuditVerifyPostgresUnsealed(t *testing.T) {
	url, schema := pgtest.Schema(t, "toolgate_cmd_test_")
	ctx := context.Background()
	l, err := auditpg.Open(ctx, url, &auditpg.Options{Schema: schema, SealInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(i int) *audit.Record {
		return &audit.Record{Time: time.Date(2026, 5, 1, 12, 0, i, 0, time.UTC), ConversationID: "trip-42", Kind: audit.KindRequested,
			Actor: audit.Actor{ID: "alice", Source: audit.SourcePerson}}
	}
	if err := l.Append(ctx, rec(0), rec(1)); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return l.AppendTx(ctx, tx, rec(2), rec(3), rec(4)) })
	if err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runArgs(t, "", false, "audit", "verify", "--postgres", url, "--schema", schema)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "schema "+schema+": intact, 2 records", "pending: 3 records committed but not sealed yet")
	code, out, errOut = runArgs(t, "", false, "audit", "verify", "--postgres", url, "--schema", schema, "--seal")
	if code != 0 {
		t.Fatalf("exit %d with --seal\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "sealed 3 records", "intact, 5 records")
	if strings.Contains(out, "pending") {
		t.Errorf("pending records after --seal:\n%s", out)
	}
	if code, _, _ := runArgs(t, "", false, "audit", "verify", "--db", "x.db", "--seal"); code != 2 {
		t.Errorf("exit %d for --seal with --db, want 2", code)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
