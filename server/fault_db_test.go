package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
)

// faultStatementTimeout is the statement deadline of the stores of the
// PostgreSQL fault tests: a stalled database answers within it.
const faultStatementTimeout = time.Second

// pgDeployment opens two instances of the service on one schema of the
// database at url, the first on a faultingStore injecting fault at step
// at, with their audit log in the store and a short claim lease (so that
// resumptions abandoned by the fault are recovered within the test), and
// returns the load that drives them.
func pgDeployment(t *testing.T, url string, at faultStep, fault func()) (*faultLoad, *faultingStore) {
	open := func() *postgres.Store {
		st, err := postgres.Open(t.Context(), url, &postgres.Options{Schema: "toolgate", StatementTimeout: faultStatementTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	configure := func(st *postgres.Store) func(*server.Config) {
		return func(c *server.Config) {
			c.Audit = st.AuditLog()
			c.ClaimLease = 2 * time.Second
			c.TurnTimeout = 5 * time.Second
		}
	}
	first, second := open(), open()
	fs := &faultingStore{txStore: first, at: at, fault: fault}
	a := newFixtureWith(t, fs, flightdemo.Model(), configure(first))
	b := newFixtureWith(t, second, flightdemo.Model(), configure(second))
	return &faultLoad{t: t, instances: []*fixture{a, b}, rs: mustRecords(t, second), log: second.AuditLog()}, fs
}

// fastUnavailable checks that a request sent while the database stalls
// was answered 503 with Retry-After within a few statement deadlines (a
// request that meets the stall at its first statement answers after one;
// /readyz probes the store and the audit log, one deadline each).
func fastUnavailable(t *testing.T, what string, code int, retryAfter string, took time.Duration) {
	t.Helper()
	if code != http.StatusServiceUnavailable || retryAfter == "" {
		t.Errorf("%s while the database is stopped: %d (Retry-After %q), want 503 with Retry-After", what, code, retryAfter)
	}
	if took > 4*faultStatementTimeout {
		t.Errorf("%s while the database is stopped took %v, want at most a few statement deadlines (%v)", what, took, faultStatementTimeout)
	}
}

// TestFaultStoppedPostgres stops a PostgreSQL server of the test's own
// (SIGSTOP of the postmaster and every backend) in the middle of a load
// of messages and decisions on two instances, at the claim of a decision
// or the append of a paused reply. Meanwhile every request fails fast:
// 503 with Retry-After within a few statement deadlines, decisions and
// messages alike, and /readyz fails on both instances. Once the server
// continues (SIGCONT), every request retried with its key gets its first
// outcome or is carried out now, and the invariants hold.
func TestFaultStoppedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	t.Parallel()
	for _, at := range []faultStep{atClaim, atPause} {
		t.Run(string(at), func(t *testing.T) {
			t.Parallel()
			cl := pgtest.NewCluster(t, nil)
			stopped := make(chan struct{})
			l, fs := pgDeployment(t, cl.URL(), at, func() { cl.Stop(); close(stopped) })
			convs := l.conversations(8)
			pre, mid, load := convs[0], convs[1], convs[2:]
			if _, pause := l.message(pre, 0); pause == "" {
				t.Fatalf("no pause before the fault: %+v", l.sent)
			} else {
				fs.armed.Store(true)
				done := make(chan struct{})
				go func() {
					defer close(done)
					l.run(load, 3)
				}()
				<-stopped
				r := l.decide(pre, pause, 1)
				fastUnavailable(t, "a decision", r.code, "1", r.took)
				m, _ := l.message(mid, 1)
				fastUnavailable(t, "a message", m.code, "1", m.took)
				for i, f := range l.instances {
					start := time.Now()
					rec := httptest.NewRecorder()
					f.h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
					fastUnavailable(t, "/readyz of instance "+string(rune('a'+i)), rec.Code, "-", time.Since(start))
				}
				<-done
			}
			var fives int
			for _, r := range l.sent {
				// A request in flight when the database stalls meets the
				// stall at each statement it still makes: the failing
				// write, reading what the failure left, releasing its
				// key; each waits one deadline.
				if r.took > 6*faultStatementTimeout {
					t.Errorf("a request of the load took %v while the database was stopped, want it to fail within a few statement deadlines", r.took)
				}
				if r.code >= 500 {
					fives++
				}
			}
			if fives < 3 {
				t.Errorf("%d requests failed, want the fault to meet some of the load's", fives)
			}
			cl.Cont()
			l.check(convs, resolvedOutcome)
		})
	}
}

// TestFaultRestartedPostgres restarts a PostgreSQL server of the test's
// own (pg_ctl restart -m fast, and -m immediate, which is a crash of the
// database) in the middle of a load on two instances, at the claim of a
// decision or the append of a resumed turn's answer. The instances are not
// restarted: their pools' connections to the old server are dead, and the
// requests that meet them are answered 503, not 500; every request
// retried with its key gets its first outcome or is carried out now, and
// the invariants hold.
func TestFaultRestartedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	t.Parallel()
	for _, mode := range []string{"fast", "immediate"} {
		for _, at := range []faultStep{atClaim, atAnswer} {
			t.Run(mode+"/"+string(at), func(t *testing.T) {
				t.Parallel()
				cl := pgtest.NewCluster(t, nil)
				restarted := make(chan struct{})
				l, fs := pgDeployment(t, cl.URL(), at, func() { cl.Restart(mode); close(restarted) })
				convs := l.conversations(8)
				fs.armed.Store(true)
				l.run(convs, 3)
				select {
				case <-restarted:
				default:
					t.Fatal("the load ended without meeting the restart")
				}
				for _, r := range l.sent {
					if r.code >= 500 && r.code != http.StatusServiceUnavailable {
						t.Errorf("a request of the load: %d %s, want 503 for a database that restarted", r.code, r.body)
					}
				}
				l.check(convs, resolvedOutcome)
			})
		}
	}
}
