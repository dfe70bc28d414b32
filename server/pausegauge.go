package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// pausesReadTimeout bounds the reading of the index at a scrape.
const pausesReadTimeout = 5 * time.Second

// pausesGauge is toolgate_pauses_open: the open pauses by agent, counted
// in the index of the record stores of the servers that report it (the
// servers sharing one [telemetry.Telemetry]). Pauses opened by any
// instance on a shared database count, and are no longer counted once any
// instance resolves them, so every instance on the database reports the
// same values. A record store two servers share is counted once. Each
// scrape reads the index (one query per 1,000 open pauses), one scrape at
// a time. It is safe for concurrent use.
type pausesGauge struct {
	desc *prometheus.Desc

	readMu sync.Mutex // held while the index is read, by one scrape at a time

	mu      sync.Mutex
	servers []*Server         // guarded by mu
	counts  map[string]uint64 // guarded by mu: as last read
}

func newPausesGauge() *pausesGauge {
	return &pausesGauge{desc: prometheus.NewDesc("toolgate_pauses_open",
		"Pauses waiting to be resolved (in the inbox, or claimed and not yet resolved), by agent, as the store's index of open pauses holds them: every instance on one database reports the same values.",
		[]string{"agent"}, nil)}
}

// add makes s report its agents' pauses through g.
func (g *pausesGauge) add(s *Server) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.servers = append(g.servers, s)
}

// remove stops s reporting through g.
func (g *pausesGauge) remove(s *Server) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.servers = slices.DeleteFunc(g.servers, func(x *Server) bool { return x == s })
}

// Describe implements [prometheus.Collector].
func (g *pausesGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements [prometheus.Collector].
func (g *pausesGauge) Collect(ch chan<- prometheus.Metric) {
	g.readMu.Lock()
	g.mu.Lock()
	servers := slices.Clone(g.servers)
	g.mu.Unlock()
	// On a failure the counts last read are reported.
	counts, ok := read(servers)
	g.readMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if ok {
		g.counts = counts
	}
	agents := map[string]bool{}
	for _, s := range g.servers {
		for name := range s.cfg.Agents {
			agents[name] = true
		}
	}
	for name := range agents {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.counts[name]), name)
	}
}

// read counts the index entries of the agents of servers, each record
// store once. On a failure it logs and reports false.
func read(servers []*Server) (map[string]uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), pausesReadTimeout)
	defer cancel()
	counts := map[string]uint64{}
	var seen []records.Store
	for _, s := range servers {
		if slices.Contains(seen, s.cfg.Records) {
			continue
		}
		seen = append(seen, s.cfg.Records)
		for p := (&records.ListParams{Limit: records.MaxLimit}); ; {
			page, err := s.cfg.Records.ListPending(ctx, p)
			if err != nil {
				s.logger.ErrorContext(ctx, "server: counting open pauses failed", "err", logcap.Error(err))
				return nil, false
			}
			for _, e := range page.Pending {
				if s.cfg.Agents[e.Agent] != nil {
					counts[e.Agent]++
				}
			}
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
	}
	return counts, true
}
