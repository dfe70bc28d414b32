package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
)

// auditLog writes a log of n records to a new file and returns its path
// and head.
func auditLog(t *testing.T, n int) (string, audit.Anchor) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	l, err := auditsqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var r *audit.Record
	for i := range n {
		r = &audit.Record{
			Time: time.Date(2026, 5, 1, 12, 0, i, 0, time.UTC), ConversationID: "trip-42", CallKey: "c1", Tool: "bookFlight",
			Kind: audit.Kinds()[i%len(audit.Kinds())], Actor: audit.Actor{ID: "alice", Source: audit.SourcePerson},
			ArgsDigest: audit.Digest([]byte(`{"flight":"VX205"}`)),
		}
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return path, r.Anchor()
}

// tamper runs a statement on the database file at path.
func tamper(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}

func TestAuditVerify(t *testing.T) {
	intact, head := auditLog(t, 5)
	altered, _ := auditLog(t, 5)
	tamper(t, altered, `UPDATE audit_records SET body = json_set(body, '$.actor.id', 'mallory') WHERE seq = 3`)
	truncated, truncHead := auditLog(t, 5)
	tamper(t, truncated, `DELETE FROM audit_records WHERE seq = 5`)
	notLog := filepath.Join(t.TempDir(), "other.db")
	tamper(t, notLog, `CREATE TABLE t (x)`)
	missing := filepath.Join(t.TempDir(), "none.db")
	empty := filepath.Join(t.TempDir(), "empty.db")
	if l, err := auditsqlite.Open(context.Background(), empty, nil); err != nil {
		t.Fatal(err)
	} else {
		l.Close()
	}

	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"intact", []string{"audit", "verify", "--db", intact}, 0, []string{"intact, 5 records", "head: " + head.String(), "no anchor given"}},
		{"intact with anchor", []string{"audit", "verify", "--db", intact, "--anchor", head.String()}, 0, []string{"intact, 5 records", "anchor " + head.String() + ": held"}},
		{"empty", []string{"audit", "verify", "--db", empty}, 0, []string{"intact, 0 records"}},
		{"altered", []string{"audit", "verify", "--db", altered}, 1, []string{"BROKEN at record 3 (hash_mismatch)", "intact records before it: 2"}},
		{"last deleted, no anchor", []string{"audit", "verify", "--db", truncated}, 0, []string{"intact, 4 records"}},
		{"last deleted, anchor", []string{"audit", "verify", "--db", truncated, "--anchor", truncHead.String()}, 1, []string{"BROKEN at record 5 (anchor_mismatch)", "ends at record 4"}},
		{"wrong anchor", []string{"audit", "verify", "--db", intact, "--anchor", "2:" + head.Hash}, 1, []string{"BROKEN at record 2 (anchor_mismatch)"}},
		{"missing file", []string{"audit", "verify", "--db", missing}, 1, []string{"no such file"}},
		{"not a log", []string{"audit", "verify", "--db", notLog}, 1, []string{"not an audit log"}},
		{"no subcommand", []string{"audit"}, 2, []string{"Usage: toolgate audit verify"}},
		{"unknown subcommand", []string{"audit", "repair"}, 2, []string{"Usage: toolgate audit verify"}},
		{"no db", []string{"audit", "verify"}, 2, []string{"--db FILE"}},
		{"extra argument", []string{"audit", "verify", "--db", intact, "more"}, 2, []string{"--db FILE"}},
		{"bad anchor", []string{"audit", "verify", "--db", intact, "--anchor", "5"}, 2, []string{"--anchor", "SEQ:HASH"}},
		{"unknown flag", []string{"audit", "verify", "--fix"}, 2, []string{"flag provided but not defined"}},
		{"help", []string{"audit", "verify", "-h"}, 0, []string{"Exit status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runArgs(t, "", false, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			mustContain(t, out+errOut, tc.wants...)
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("verify created a database file")
	}
	// Incremental runs keep the head in a state file.
	grow, _ := auditLog(t, 3)
	state := filepath.Join(t.TempDir(), "head")
	code, out, errOut := runArgs(t, "", false, "audit", "verify", "--db", grow, "--state", state)
	if code != 0 {
		t.Fatalf("first run with a state file: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "intact, 3 records")
	first, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	l, err := auditsqlite.Open(context.Background(), grow, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := l.Append(context.Background(), &audit.Record{Kind: audit.KindExpired, Actor: audit.Actor{Source: audit.SourceSystem}}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// A record before the stored head is not read again: even a broken
	// one goes unseen, which is the point of verifying incrementally.
	tamper(t, grow, `UPDATE audit_records SET body = json_set(body, '$.actor.id', 'mallory') WHERE seq = 1`)
	code, out, errOut = runArgs(t, "", false, "audit", "verify", "--db", grow, "--state", state)
	if code != 0 {
		t.Fatalf("incremental run: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "intact from record "+strings.TrimSpace(string(first))+", 3 records", "head: 5:")
	tamper(t, grow, `DELETE FROM audit_records WHERE seq = 5`)
	code, _, errOut = runArgs(t, "", false, "audit", "verify", "--db", grow, "--state", state)
	if code != 1 {
		t.Fatalf("incremental run after the stored head was deleted: exit %d, want 1", code)
	}
	mustContain(t, errOut, "BROKEN at record 5 (anchor_mismatch)")

	code, out, _ = runArgs(t, "", false, "help")
	if code != 0 || !strings.Contains(out, "toolgate audit verify") {
		t.Errorf("help (exit %d) does not list audit verify:\n%s", code, out)
	}
}
