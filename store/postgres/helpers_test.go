package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store/postgres"
)

// testURL returns the connection string of the database the tests use,
// from TOOLGATE_POSTGRES_URL. Without it the test is skipped, or fails
// when CI is set: CI must run these tests (.ci/postgres.sh starts a
// server for them).
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.URL(t)
}

// newSchema returns the name of a schema no other test uses, and drops the
// schema, whatever it holds, when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	_, schema := pgtest.Schema(t, "toolgate_test_")
	return schema
}

// open opens a store in a new schema and closes it when the test ends.
func open(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	schema := newSchema(t)
	return openIn(t, schema), schema
}

// openIn opens a store, with a pool of its own, in the given schema.
func openIn(t testing.TB, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), testURL(t), &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newPool opens a connection pool of up to maxConns connections, as a
// server instance would, and closes it when the test ends.
func newPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatalf("parsing TOOLGATE_POSTGRES_URL: %v", err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("pgxpool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// raw returns a connection whose search_path is the schema, bypassing the
// store, closed when the test ends.
func raw(t testing.TB, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(testURL(t))
	if err != nil {
		t.Fatalf("parsing TOOLGATE_POSTGRES_URL: %v", err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("raw connection: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t testing.TB, conn *pgx.Conn, query string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
