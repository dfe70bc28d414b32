package loadgen

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresMeter is a [Meter] of a PostgreSQL server on this machine: the
// statistics of the database it is connected to, and the CPU of the
// server's processes (the postmaster and all its children, from /proc).
// Its ServiceCPU is zero; [ProcMeter] adds the service's.
//
// PostgreSQL 15 counts the commits and WAL flushes of each backend
// locally and adds them to the statistics that other sessions see when the
// backend is idle, at most once a second, or at the latest about ten
// seconds later: Read waits Settle first, so that the counts of the
// phase just ended are in.
//
// A PostgresMeter is not safe for concurrent use.
type PostgresMeter struct {
	conn     *pgx.Conn
	settle   time.Duration
	postmast int
}

// DefaultSettle is how long [PostgresMeter.Read] waits for the statistics
// of idle backends to arrive, unless told otherwise: PostgreSQL 15 flushes
// them at the latest 10 s after a backend went idle.
const DefaultSettle = 11 * time.Second

// NewPostgresMeter connects to the database at url (a PostgreSQL
// connection string; pool settings such as pool_max_conns are ignored).
// settle is how long each Read first waits; 0: [DefaultSettle]. The
// server must run on this machine, its processes readable in /proc.
func NewPostgresMeter(ctx context.Context, url string, settle time.Duration) (*PostgresMeter, error) {
	cfg, err := pgx.ParseConfig(stripPoolParams(url))
	if err != nil {
		return nil, fmt.Errorf("loadgen: postgres URL: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("loadgen: connecting to postgres: %w", err)
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("loadgen: postgres: %w", err)
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(backend) + "/comm")
	if err != nil || !strings.HasPrefix(string(comm), "postgres") {
		conn.Close(ctx)
		return nil, fmt.Errorf("loadgen: the PostgreSQL server does not run on this machine (its backend %d is not in /proc): its CPU cannot be measured", backend)
	}
	pm, err := ParentPID(backend)
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("loadgen: postgres postmaster: %w", err)
	}
	if settle == 0 {
		settle = DefaultSettle
	}
	return &PostgresMeter{conn: conn, settle: settle, postmast: pm}, nil
}

// stripPoolParams removes the pgxpool settings of a URL, which pgx.Conn
// would send to the server as run-time parameters.
func stripPoolParams(url string) string {
	base, query, ok := strings.Cut(url, "?")
	if !ok {
		return url
	}
	var keep []string
	for _, kv := range strings.Split(query, "&") {
		if !strings.HasPrefix(kv, "pool_") {
			keep = append(keep, kv)
		}
	}
	if len(keep) == 0 {
		return base
	}
	return base + "?" + strings.Join(keep, "&")
}

// Read waits for the statistics to settle, then reads them and the
// server's CPU.
func (m *PostgresMeter) Read(ctx context.Context) (Counters, error) {
	select {
	case <-time.After(m.settle):
	case <-ctx.Done():
		return Counters{}, ctx.Err()
	}
	c := Counters{Database: true}
	// pg_current_snapshot's xmax is the next transaction id to be
	// assigned; unlike pg_current_xact_id it assigns none itself.
	err := m.conn.QueryRow(ctx, `SELECT
		(SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		wal_sync, wal_write,
		pg_snapshot_xmax(pg_current_snapshot())::text::bigint
		FROM pg_stat_wal`).Scan(&c.Commits, &c.WALSyncs, &c.WALWrites, &c.WriteTransactions)
	if err != nil {
		return Counters{}, fmt.Errorf("loadgen: reading postgres statistics: %w", err)
	}
	if c.DatabaseCPU, err = TreeCPU(m.postmast); err != nil {
		return Counters{}, fmt.Errorf("loadgen: postgres CPU: %w", err)
	}
	return c, nil
}

// Close closes the connection.
func (m *PostgresMeter) Close(ctx context.Context) error { return m.conn.Close(ctx) }
