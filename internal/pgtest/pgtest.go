// Package pgtest gives the PostgreSQL tests of toolgate's packages their
// database: the connection string from TOOLGATE_POSTGRES_URL (.ci/postgres.sh
// starts a throwaway server and sets it) and a schema of their own for
// each test, dropped when the test ends.
//
// Without TOOLGATE_POSTGRES_URL a test is skipped, except when CI is set:
// CI must run the PostgreSQL tests, so there it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// URL returns TOOLGATE_POSTGRES_URL. Without it tb is skipped, or fails
// when CI is set.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("TOOLGATE_POSTGRES_URL")
	if u == "" {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			tb.Fatal("TOOLGATE_POSTGRES_URL is not set, and CI is: the PostgreSQL tests must run in CI (.ci/postgres.sh starts a server and sets it)")
		}
		tb.Skip("TOOLGATE_POSTGRES_URL is not set: skipping the PostgreSQL tests (set it to the URL of a scratch database, or run .ci/postgres.sh)")
	}
	return u
}

// Schema returns URL and the name of a schema no other test uses, prefix
// followed by random letters and digits; the schema is dropped, whatever it
// holds, when tb ends.
func Schema(tb testing.TB, prefix string) (url, schema string) {
	tb.Helper()
	url = URL(tb)
	schema = prefix + strings.ToLower(rand.Text()[:16])
	tb.Cleanup(func() { Drop(tb, url, schema) })
	return url, schema
}

// Drop drops schema and everything in it, reporting a failure on tb.
func Drop(tb testing.TB, url, schema string) {
	tb.Helper()
	ctx := context.Background()
	// The pool's settings of the URL (pool_max_conns) are not a connection's.
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
		return
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
	}
}
