package pgtest_test

import (
	"context"
	"errors"
	"sync"
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

// TestClusterStopStopsNewBackends: when Stop returns, the postmaster and
// every process of the server are stopped, also the backends it forked
// for connections opened while it was being stopped (kill returns before
// the postmaster stops, and a fork it is in completes first: a backend
// missing from the processes stopped serves a stopped database).
func TestClusterStopStopsNewBackends(t *testing.T) {
	c := pgtest.NewCluster(t, nil)
	for round := range 30 {
		// Connections opened and closed one after another, so that the
		// postmaster forks all the while; each attempt waits out the
		// stop.
		quit := make(chan struct{})
		connected := make(chan struct{}, 64)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					select {
					case <-quit:
						return
					default:
					}
					conn, err := pgx.Connect(context.Background(), c.URL())
					if err != nil {
						t.Error(err)
						return
					}
					conn.Close(context.Background())
					select {
					case connected <- struct{}{}:
					default:
					}
				}
			})
		}
		for range 16 {
			<-connected
		}
		c.Stop()
		for pid, state := range serverProcesses(t, c) {
			if state != 'T' && state != 'Z' {
				t.Errorf("round %d: process %d of the server in state %c after Stop, want T (stopped)", round, pid, state)
			}
		}
		close(quit)
		c.Cont()
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

// serverProcesses returns the states of the postmaster of c and of its
// children, by process id, from /proc.
func serverProcesses(t *testing.T, c *pgtest.Cluster) map[int]byte {
	t.Helper()
	pids, err := c.Pids()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]byte{}
	for _, pid := range pids {
		if state, err := pgtest.ProcState(pid); err == nil { // else: ended
			out[pid] = state
		}
	}
	return out
}
