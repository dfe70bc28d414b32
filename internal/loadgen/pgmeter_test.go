package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/loadgen"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// TestPostgresMeter counts the transactions of a connection of its own:
// ten writing commits and five read-only ones. The connection is closed
// before the second reading, as a backend that ends sends its statistics
// (an idle one may wait ten seconds, which DefaultSettle allows for).
func TestPostgresMeter(t *testing.T) {
	url, schema := pgtest.Schema(t, "toolgate_meter_")
	ctx := context.Background()
	m, err := loadgen.NewPostgresMeter(ctx, url, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) // closing twice is harmless
	table := pgx.Identifier{schema, "t"}.Sanitize()
	for _, q := range []string{"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize(), "CREATE TABLE " + table + " (n int)"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before, err := m.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := conn.Exec(ctx, "SELECT count(*) FROM "+table); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	after, err := m.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Database || after.DatabaseCPU < before.DatabaseCPU || after.DatabaseCPU == 0 {
		t.Errorf("database CPU %v before, %v after", before.DatabaseCPU, after.DatabaseCPU)
	}
	// Other tests may share the server: at least what this one did.
	if d := after.WriteTransactions - before.WriteTransactions; d < 10 {
		t.Errorf("%d write transactions, want at least 10", d)
	}
	if d := after.Commits - before.Commits; d < 15 {
		t.Errorf("%d commits, want at least 15", d)
	}
	if after.WALSyncs < before.WALSyncs || after.WALWrites < before.WALWrites {
		t.Errorf("WAL counters went back: %+v, then %+v", before, after)
	}
}
