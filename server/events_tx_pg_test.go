package server_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/postgres"
)

// countingBroker counts the payloads published through it, by kind.
type countingBroker struct {
	*postgres.Broker
	mu    sync.Mutex
	kinds map[string]int
}

func (b *countingBroker) Publish(ctx context.Context, payload []byte) error {
	var e server.Event
	_ = json.Unmarshal(payload, &e)
	b.mu.Lock()
	b.kinds[string(e.Kind)]++
	b.mu.Unlock()
	return b.Broker.Publish(ctx, payload)
}

func (b *countingBroker) published(kind string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kinds[kind]
}

// TestEventsInTransactionsPostgres: with a PostgreSQL broker on the
// store's pool, the paused, decided and completed events are notified
// inside the transactions of the writes they tell of — none goes through
// the broker's Publish — and reach a listener on another connection; the
// events of an answer whose transaction rolled back are never heard.
func TestEventsInTransactionsPostgres(t *testing.T) {
	url, schema := pgtest.Schema(t, "toolgate_txevents_test_")
	ctx := t.Context()
	st, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pb, err := st.NewBroker(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pb.Close() })
	broker := &countingBroker{Broker: pb, kinds: map[string]int{}}
	rs := mustRecords(t, st)
	if _, ok := pb.ChannelFor(rs); !ok {
		t.Fatal("ChannelFor the broker's own store: false")
	}
	fs := &faultyAppends{txStore: st}
	f := newFixtureWith(t, fs, flightdemo.Model(), func(cfg *server.Config) { cfg.Broker = broker })

	// A listener of its own, as another instance has.
	other, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	listener, err := other.NewBroker(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	if _, ok := listener.ChannelFor(rs); ok {
		t.Error("ChannelFor a store on another pool: true")
	}
	heard := make(chan server.Event, 64)
	cancel := listener.Subscribe(func(p []byte) {
		var e server.Event
		if p != nil && json.Unmarshal(p, &e) == nil {
			heard <- e
		}
	})
	t.Cleanup(cancel)
	next := func() server.Event {
		t.Helper()
		select {
		case e := <-heard:
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no event heard in 30s")
			return server.Event{}
		}
	}

	conv, pause := f.pause(travellerKey)
	if e := next(); e.Kind != server.EventPaused || e.ConversationID != conv || e.PauseID != pause {
		t.Fatalf("heard %+v, want paused %s", e, pause)
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	var kinds []server.EventKind
	for len(kinds) < 2 {
		kinds = append(kinds, next().Kind)
	}
	if kinds[0] != server.EventDecided || kinds[1] != server.EventCompleted {
		t.Errorf("heard %v, want decided, completed", kinds)
	}
	for _, k := range []string{"paused", "decided", "completed"} {
		if n := broker.published(k); n != 0 {
			t.Errorf("%d %s events went through Publish, want 0: all in their transactions", n, k)
		}
	}

	// An answer whose write fails before it commits: nothing of it is heard.
	conv2, pause2 := f.pause(travellerKey)
	if e := next(); e.Kind != server.EventPaused || e.PauseID != pause2 {
		t.Fatalf("heard %+v, want paused %s", e, pause2)
	}
	fs.armed.Store(true)
	f.must(500, "POST", decisionsPath(conv2, pause2), approverKey, allowBook)
	// A marker published after the failure arrives after anything the
	// failed request had notified (NOTIFY delivers in commit order).
	marker, _ := json.Marshal(server.Event{ConversationID: "marker", Kind: server.EventAppended})
	if err := pb.Publish(ctx, marker); err != nil {
		t.Fatal(err)
	}
	for {
		e := next()
		if e.ConversationID == "marker" {
			break
		}
		if e.Kind == server.EventCompleted {
			t.Errorf("heard %+v of an answer that rolled back", e)
		}
	}
	if rec, err := rs.Decision(ctx, conv2, pause2); err != nil || rec.Outcome != records.OutcomeFailed {
		t.Errorf("decision record %+v, %v; want failed", rec, err)
	}

}
