package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
)

// terminating is a PostgreSQL store that, once armed, ends every
// connection of the instances under test (pg_terminate_backend, from a
// connection of its own) right before its next claim or its next append
// of the model's answer, as a database administrator or a failover would.
type terminating struct {
	*postgres.Store
	t       *testing.T
	url     string // of the terminating connection
	app     string // the application_name of the instances' connections
	atClaim bool
	armed   atomic.Bool
}

func (s *terminating) Unwrap() toolgate.ConversationStore { return s.Store }

func (s *terminating) terminate() {
	conn, err := pgx.Connect(context.Background(), s.url)
	if err != nil {
		s.t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, s.app).Scan(&n); err != nil || n == 0 {
		s.t.Errorf("pg_terminate_backend: %d connections, %v; want some", n, err)
	}
}

func (s *terminating) ClaimPause(ctx context.Context, id, pauseID string, c *toolgate.Claim) error {
	if s.atClaim && s.armed.Swap(false) {
		s.terminate()
	}
	return s.Store.ClaimPause(ctx, id, pauseID, c)
}

func (s *terminating) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	last, _ := p.Messages[len(p.Messages)-1].(*toolgate.AssistantMessage)
	if !s.atClaim && last != nil && !last.HasToolCalls() && s.armed.Swap(false) {
		s.terminate()
	}
	return s.Store.Append(ctx, id, p)
}

// TestFaultTerminatedBackendsPostgres runs two instances on one PostgreSQL
// schema and ends every connection of theirs in the middle of decisions
// on the first: before the claim, and before the answer. Each decision's
// retry with its Idempotency-Key on the other instance is answered with
// the outcome the store holds; no pause is lost or decided twice,
// bookFlight runs once per pause, each call has one decided and one
// executed record, and the one audit chain verifies.
func TestFaultTerminatedBackendsPostgres(t *testing.T) {
	for _, atClaim := range []bool{true, false} {
		name := map[bool]string{true: "before the claim", false: "before the answer"}[atClaim]
		t.Run(name, func(t *testing.T) {
			base, schema, app, url := faultSchema(t)
			open := func() *postgres.Store {
				st, err := postgres.Open(t.Context(), url, &postgres.Options{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			ts := &terminating{Store: open(), t: t, url: base, app: app, atClaim: atClaim}
			withAudit := func(st *postgres.Store) func(*server.Config) {
				return func(c *server.Config) { c.Audit = st.AuditLog() }
			}
			a := newFixtureWith(t, ts, flightdemo.Model(), withAudit(ts.Store))
			other := open()
			b := newFixtureWith(t, other, flightdemo.Model(), withAudit(other))

			pauses := map[string]string{}
			for range 2 {
				conv, pause := a.pause(travellerKey)
				pauses[conv] = pause
			}
			var fives int
			for conv, pause := range pauses {
				ts.armed.Store(true)
				first := a.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "decide-"+conv, allowBook)
				if first.Code >= 500 {
					fives++
				}
				// A client retries a 5xx with the same key; the other
				// instance's own connections were ended too, and its
				// first use of one may fail as well.
				var retry *httptest.ResponseRecorder
				for range 4 {
					retry = b.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "decide-"+conv, allowBook)
					if retry.Code < 500 {
						break
					}
				}
				out := decodeBody(t, retry)
				if retry.Code != http.StatusOK {
					t.Fatalf("retry on the other instance: %d %s (the first answered %d %s)", retry.Code, retry.Body, first.Code, first.Body)
				}
				if first.Code == http.StatusOK && retry.Body.String() != first.Body.String() {
					t.Errorf("retry: %s, want the first answer %s", retry.Body, first.Body)
				}
				rec, err := mustRecords(t, other).Decision(t.Context(), conv, pause)
				if d, _ := out["decision"].(map[string]any); err != nil || d["outcome"] != string(rec.Outcome) {
					t.Errorf("retry's decision %v; the store holds %+v, %v", out["decision"], rec, err)
				}
			}
			if atClaim && fives == 0 {
				t.Errorf("no decision failed: the connections were not ended mid-decision")
			}
			outcome := records.OutcomeDecided
			if !atClaim {
				outcome = "" // decided, or failed until the recovery takes it
			}
			checkFaultInvariants(t, []*fixture{a, b}, mustRecords(t, other), other.AuditLog(), pauses, outcome)
		})
	}
}

// TestFaultDeadPooledConnectionPostgres: every connection of an instance's
// pool is ended by pg_terminate_backend while idle. The first requests
// that take one of them are answered either as if nothing happened or 503
// with Retry-After, never 500, and the next ones, on fresh connections,
// proceed: the decision retried with its key is carried out once.
func TestFaultDeadPooledConnectionPostgres(t *testing.T) {
	base, schema, app, url := faultSchema(t)
	st, err := postgres.Open(t.Context(), url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixtureWith(t, st, flightdemo.Model(), func(c *server.Config) { c.Audit = st.AuditLog() })
	ts := &terminating{t: t, url: base, app: app}
	pauses := map[string]string{}
	for range 2 {
		conv, pause := f.pause(travellerKey)
		pauses[conv] = pause
	}
	check := func(what string, rec *httptest.ResponseRecorder) bool {
		t.Helper()
		if rec.Code >= 500 && (rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "") {
			t.Errorf("%s on a dead pooled connection: %d %s, want 503 with Retry-After (or success)", what, rec.Code, rec.Body)
		}
		return rec.Code < 500
	}
	// terminate ends the pool's connections, one of them at least (a
	// ping first takes one into the pool; it fails on a connection ended
	// before, which the pool then drops).
	terminate := func() {
		err := st.Ping(t.Context())
		for i := 0; err != nil && i < 3; i++ {
			err = st.Ping(t.Context())
		}
		if err != nil {
			t.Fatal(err)
		}
		ts.terminate()
	}
	for conv, pause := range pauses {
		terminate()
		check("reading a conversation", f.sendKeyed(t.Context(), "GET", "/v1/conversations/"+conv, travellerKey, "", ""))
		terminate()
		check("the inbox", f.sendKeyed(t.Context(), "GET", "/v1/inbox", approverKey, "", ""))
		terminate()
		rec := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "decide-"+conv, allowBook)
		for i := 0; !check("a decision", rec) && i < 3; i++ {
			rec = f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "decide-"+conv, allowBook)
		}
		if out := decodeBody(t, rec); rec.Code != http.StatusOK || out["status"] != "completed" {
			t.Fatalf("decision and its retries: %d %s, want 200 completed", rec.Code, rec.Body)
		}
	}
	checkFaultInvariants(t, []*fixture{f}, mustRecords(t, st), st.AuditLog(), pauses, records.OutcomeDecided)
}

// TestFaultResumeFailedReadsDecisionPostgres: every connection of the
// instance's pool (several, idle) is ended right before the append of the
// model's answer. The append fails on one dead connection; the one read
// of the decision that settles the failed resumption must not fail on
// another, leaving the record "deciding" until the claim's lease ends and
// a retry answered 409 meanwhile.
func TestFaultResumeFailedReadsDecisionPostgres(t *testing.T) {
	base, schema, app, url := faultSchema(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	const conns = 4
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := postgres.New(t.Context(), pool, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := &terminating{Store: st, t: t, url: base, app: app}
	// The test reads the records on connections of its own.
	check, err := postgres.Open(t.Context(), base, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check.Close() })
	// No recovery of claims: a record left "deciding" stays so.
	f := newFixtureWith(t, ts, flightdemo.Model(), func(c *server.Config) { c.Audit = st.AuditLog(); c.ClaimLease = -1 })
	for range 3 {
		conv, pause := f.pause(travellerKey)
		// Every connection of the pool open and idle, so that the
		// writes and reads after the termination each take a dead one.
		held := make([]*pgxpool.Conn, 0, conns)
		for range conns {
			c, err := pool.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Release()
		}
		ts.armed.Store(true)
		first := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "", allowBook)
		if first.Code < 500 {
			t.Fatalf("decision with its connections ended before the answer: %d %s, want a failure", first.Code, first.Body)
		}
		rec, err := mustRecords(t, check).Decision(t.Context(), conv, pause)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Outcome == records.OutcomeDeciding {
			t.Fatalf("after the failed resumption (%d %s) the decision is still %q", first.Code, first.Body, rec.Outcome)
		}
		retry := f.sendKeyed(t.Context(), "POST", decisionsPath(conv, pause), approverKey, "", allowBook)
		if retry.Code == http.StatusConflict && strings.Contains(retry.Body.String(), string(records.OutcomeDeciding)) {
			t.Errorf("retry: %d %s: the decision is still being decided", retry.Code, retry.Body)
		}
	}
}

// faultSchema gives a test a schema of its own on the test server: the
// server's URL, the schema, the application_name that marks the test's
// connections (so that they can be ended) and the URL that sets it.
func faultSchema(t *testing.T) (base, schema, app, url string) {
	t.Helper()
	base, schema = pgtest.Schema(t, "toolgate_fault_test_")
	app = "toolgate_fault_" + strings.TrimPrefix(schema, "toolgate_fault_test_")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base, schema, app, base + sep + "application_name=" + app
}
