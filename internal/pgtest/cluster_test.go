package pgtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// TestCluster: a cluster of its own answers, stalls while stopped (a
// connection attempt meets its deadline), answers again when continued,
// and after restarts.
func TestCluster(t *testing.T) {
	c := pgtest.NewCluster(t, nil)
	ping := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		return conn.Ping(ctx)
	}
	if err := ping(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if err := ping(300 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a connection to the stopped server: %v, want its deadline exceeded", err)
	}
	c.Cont()
	if err := ping(10 * time.Second); err != nil {
		t.Errorf("after SIGCONT: %v", err)
	}
	for _, mode := range []string{"fast", "immediate"} {
		c.Restart(mode)
		if err := ping(10 * time.Second); err != nil {
			t.Errorf("after a restart -m %s: %v", mode, err)
		}
	}
	c.Stop() // the cleanup stops a stopped server too
}
