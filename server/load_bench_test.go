package server_test

import (
	"context"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/loadgen"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// loadConfig is the service the load benchmarks measure: the flight agent
// on the scripted model, bookFlight gated, STORE replaced by the store.
const loadConfig = `agents:
	flights:
		model:
			provider: scripted-demo
		tools: [flightStatus, bookFlight]
CONCURRENCY		confirmation:
			tools: [bookFlight]
		approvals:
			- tools: [bookFlight]
				roles: [approver]
store:
STORE
authentication:
	api_keys:
		- sha256: 84f71c9ac07c9c3ab0d2c54334bcf5cab957f375e87468b71092eacc65ffed75
			principal: {id: alice, roles: [traveller]}
		- sha256: 99c6533d0bfe6cb4465751fec0b04fe9e546a05f63485547b7dec32799a5f5c1
			principal: {id: bob, roles: [approver]}
`

// loadInstance builds the service of loadConfig with store and serves it
// over loopback; it returns its URL. The audit log is the store's (in its
// database, written in the transactions of the changes it records), as
// toolgate serve keeps it unless told otherwise.
func loadInstance(b *testing.B, store string) string {
	return loadInstanceCalls(b, store, 0)
}

// loadInstanceCalls is loadInstance with the agent's concurrency set to
// calls (0: the default, one call at a time).
func loadInstanceCalls(b *testing.B, store string, calls int) string {
	b.Helper()
	text := strings.Replace(loadConfig, "STORE\n", store, 1)
	conc := ""
	if calls > 0 {
		conc = "\t\tconcurrency: " + strconv.Itoa(calls) + "\n"
	}
	text = strings.Replace(text, "CONCURRENCY", conc, 1)
	fc, err := serve.LoadConfig(writeConfig(b, text))
	if err != nil {
		b.Fatal(err)
	}
	cfg, closeStore, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(func() {
		hs.Close()
		srv.Close()
		if err := closeStore(); err != nil {
			b.Error(err)
		}
	})
	return hs.URL
}

// benchmarkDecisions runs the load generator against urls: each round
// opens 3,000 pauses, then decides them with 256 requests in flight
// (TOOLGATE_BENCH_CONCURRENCY changes it). It
// reports the decisions resolved per second and the latencies of posting
// a message (a turn that pauses) and of deciding (the resumed turn runs
// to its end), over all rounds; and what a pause cost in each phase (see
// reportCost), read by meter.
func benchmarkDecisions(b *testing.B, urls []string, meter loadgen.Meter) {
	// The garbage collector's target of toolgate serve (unless GOGC is
	// set), for the figures to be those of the service.
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // the target toolgate serve sets
	o := loadgen.Options{URLs: urls, RequesterKey: exampleTravellerKey, ApproverKey: exampleApproverKey,
		Input: flightdemo.Input, Pauses: benchPauses, Concurrency: benchConcurrency, Meter: meter}
	var rate float64
	var last *loadgen.Report
	var open, decided loadgen.Cost
	for b.Loop() {
		rep, err := loadgen.Run(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		rate += rep.DecisionsPerSecond
		last = rep
		addCost(&open, rep.Open)
		addCost(&decided, rep.Decided)
	}
	b.ReportMetric(rate/float64(b.N), "decisions/s")
	reportCost(b, "open-", &open)
	reportCost(b, "decide-", &decided)
	b.ReportMetric(float64(last.Decide.P50.Microseconds())/1000, "decide-p50-ms")
	b.ReportMetric(float64(last.Decide.P99.Microseconds())/1000, "decide-p99-ms")
	b.ReportMetric(float64(last.PostMessage.P50.Microseconds())/1000, "post-p50-ms")
	b.ReportMetric(float64(last.PostMessage.P99.Microseconds())/1000, "post-p99-ms")
}

// BenchmarkDecisionsSQLite measures one service on a SQLite file.
func BenchmarkDecisionsSQLite(b *testing.B) {
	benchmarkDecisions(b, []string{loadInstance(b, "\tsqlite: "+b.TempDir()+"/toolgate.db\n")}, &loadgen.ProcMeter{})
}

// BenchmarkDecisionsPostgresTwoInstances measures two services on one
// PostgreSQL database (TOOLGATE_POSTGRES_URL): each pause is opened on one
// instance and decided on the other.
func BenchmarkDecisionsPostgresTwoInstances(b *testing.B) {
	benchmarkPostgresTwoInstances(b, 0)
}

// BenchmarkDecisionsPostgresTwoInstancesConcurrentCalls is
// BenchmarkDecisionsPostgresTwoInstances with the agent's concurrency at 2:
// the reply's two calls run side by side, and their starts are recorded
// with the claim, in one write.
func BenchmarkDecisionsPostgresTwoInstancesConcurrentCalls(b *testing.B) {
	benchmarkPostgresTwoInstances(b, 2)
}

// benchmarkPostgresTwoInstances measures two services on one PostgreSQL
// database whose agent runs calls calls of a reply at once (0: one).
func benchmarkPostgresTwoInstances(b *testing.B, calls int) {
	url, schema := pgtest.Schema(b, "toolgate_load_")
	// Each instance's pool holds up to benchPoolConns connections, unless
	// the URL says otherwise.
	if !strings.Contains(url, "pool_max_conns") {
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		b.Setenv("TOOLGATE_POSTGRES_URL", url+sep+"pool_max_conns="+strconv.Itoa(benchPoolConns))
	}
	store := "\tpostgres_url_env: TOOLGATE_POSTGRES_URL\n\tpostgres_schema: " + schema + "\n"
	pg, err := loadgen.NewPostgresMeter(context.Background(), url, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close(context.Background()) })
	benchmarkDecisions(b, []string{loadInstanceCalls(b, store, calls), loadInstanceCalls(b, store, calls)}, &loadgen.ProcMeter{Database: pg})
}

// addCost adds c to sum.
func addCost(sum, c *loadgen.Cost) {
	sum.ServiceCPU += c.ServiceCPU
	sum.DatabaseCPU += c.DatabaseCPU
	sum.Database = c.Database
	sum.Commits += c.Commits
	sum.WriteTransactions += c.WriteTransactions
	sum.WALSyncs += c.WALSyncs
	sum.WALWrites += c.WALWrites
}

// reportCost reports the cost per pause of a phase, summed over b.N
// rounds: the CPU of this process (the services and the load generator,
// from /proc/self/stat) and of the PostgreSQL server (the postmaster and
// its children), in µs; and with PostgreSQL its commits, write
// transactions and WAL flushes.
func reportCost(b *testing.B, prefix string, c *loadgen.Cost) {
	n := float64(b.N)
	b.ReportMetric(float64(c.ServiceCPU.Nanoseconds())/1000/n, prefix+"go-cpu-us")
	if !c.Database {
		return
	}
	b.ReportMetric(float64(c.DatabaseCPU.Nanoseconds())/1000/n, prefix+"pg-cpu-us")
	b.ReportMetric(c.Commits/n, prefix+"commits")
	b.ReportMetric(c.WriteTransactions/n, prefix+"write-tx")
	b.ReportMetric(c.WALSyncs/n, prefix+"wal-flushes")
}

// benchPoolConns is the size of each instance's connection pool in
// BenchmarkDecisionsPostgresTwoInstances. Fewer connections than requests
// in flight is faster on the 2-vCPU machine of docs/BENCHMARKS.md: with
// 64 per instance, PostgreSQL spent about 5.5 ms of CPU per decision, in
// backends waking one another around each WAL flush; with 8, about 3.5 ms.
const benchPoolConns = 8

// benchPauses is how many pauses each round opens and decides
// (TOOLGATE_BENCH_PAUSES changes it).
var benchPauses = func() int {
	if n, err := strconv.Atoi(os.Getenv("TOOLGATE_BENCH_PAUSES")); err == nil && n > 0 {
		return n
	}
	return 3000
}()

// benchConcurrency is how many requests the load generator keeps in
// flight.
var benchConcurrency = func() int {
	if n, err := strconv.Atoi(os.Getenv("TOOLGATE_BENCH_CONCURRENCY")); err == nil && n > 0 {
		return n
	}
	return 256
}()
