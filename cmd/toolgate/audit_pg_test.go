package main

import (
	"context"
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
