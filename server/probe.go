package server

import (
	"context"
	"sync"
	"time"
)

// writeProber is a store or audit log that can check that it can write
// now, as those of packages store/sqlite, store/postgres, audit/sqlite and
// audit/postgres do (ProbeWrite: a durable write that changes nothing,
// under the lock every writer takes, reading the audit log's last
// record).
type writeProber interface {
	ProbeWrite(ctx context.Context) error
}

// probeTTL is how long a successful write probe answers for its store:
// readiness checks of a busy load balancer cost one durable write per
// store and interval, not one per check (meanwhile a check only pings). A
// failure is not kept: the next check probes again.
const probeTTL = time.Second

// probes keeps the times of the last successful write probes, by store.
// It is safe for concurrent use.
type probes struct {
	mu sync.Mutex
	ok map[writeProber]time.Time // guarded by mu
}

// check probes w, or calls ping (when not nil) when a probe of w
// succeeded less than probeTTL ago.
func (p *probes) check(ctx context.Context, w writeProber, ping func(context.Context) error) error {
	p.mu.Lock()
	at, ok := p.ok[w]
	p.mu.Unlock()
	if ok && time.Since(at) < probeTTL {
		if ping != nil {
			return ping(ctx)
		}
		return nil
	}
	if err := w.ProbeWrite(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	if p.ok == nil {
		p.ok = make(map[writeProber]time.Time)
	}
	p.ok[w] = time.Now()
	p.mu.Unlock()
	return nil
}
