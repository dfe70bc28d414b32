package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/store/postgres"
)

// newChannel returns a channel name no other test uses.
func newChannel() string { return "toolgate_test_" + strings.ToLower(rand.Text()) }

// newBroker returns a broker with a pool of its own, as another process
// would have, closed when the test ends.
func newBroker(t testing.TB, channel string) *postgres.Broker {
	t.Helper()
	b, err := postgres.NewBroker(t.Context(), newPool(t, 4), &postgres.BrokerOptions{Channel: channel})
	if err != nil {
		t.Fatalf("NewBroker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// inbox subscribes to b and returns the channel its deliveries go to.
func inbox(t testing.TB, b *postgres.Broker) chan []byte {
	t.Helper()
	ch := make(chan []byte, 1000)
	t.Cleanup(b.Subscribe(func(p []byte) { ch <- bytes.Clone(p) }))
	return ch
}

// receive returns the next delivery, failing the test when none comes in
// 10 seconds.
func receive(t testing.TB, ch chan []byte) []byte {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery in 10s")
		return nil
	}
}

func publishOK(t testing.TB, b *postgres.Broker, payload string) {
	t.Helper()
	if err := b.Publish(t.Context(), []byte(payload)); err != nil {
		t.Fatalf("Publish(%q): %v", payload, err)
	}
}

func TestBrokerAcrossPools(t *testing.T) {
	channel := newChannel()
	a, b := newBroker(t, channel), newBroker(t, channel)
	other := newBroker(t, newChannel())
	gotA, gotB, gotOther := inbox(t, a), inbox(t, b), inbox(t, other)
	publishOK(t, a, `{"n":1}`)
	publishOK(t, b, `{"n":2}`)
	for name, ch := range map[string]chan []byte{"a": gotA, "b": gotB} {
		for _, want := range []string{`{"n":1}`, `{"n":2}`} {
			if got := receive(t, ch); string(got) != want {
				t.Errorf("broker %s got %q, want %q", name, got, want)
			}
		}
	}
	// A round trip on the other channel shows that nothing else came.
	publishOK(t, other, "mine")
	if got := receive(t, gotOther); string(got) != "mine" {
		t.Errorf("other channel got %q, want only its own", got)
	}
}

func TestBrokerPayloads(t *testing.T) {
	b := newBroker(t, newChannel())
	got := inbox(t, b)
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"too large", bytes.Repeat([]byte("x"), 8000)},
		{"invalid UTF-8", []byte{'a', 0xff}},
		{"NUL", []byte("a\x00b")},
	} {
		if err := b.Publish(t.Context(), tc.payload); !errors.Is(err, postgres.ErrPayload) {
			t.Errorf("%s: %v, want ErrPayload", tc.name, err)
		}
	}
	largest := strings.Repeat("é", 3999) + "x"
	publishOK(t, b, largest)
	publishOK(t, b, "")
	if p := receive(t, got); string(p) != largest {
		t.Errorf("the largest payload came back as %d bytes, want %d", len(p), len(largest))
	}
	if p := receive(t, got); p == nil || len(p) != 0 {
		t.Errorf("the empty payload came back as %q (nil %v)", p, p == nil)
	}
}

// Concurrent publications, which share statements, are each delivered
// once to every listening broker, repeats of a payload included, and one
// publisher's payloads keep their order.
func TestBrokerConcurrentPublishes(t *testing.T) {
	channel := newChannel()
	pub, sub := newBroker(t, channel), newBroker(t, channel)
	gotPub, gotSub := inbox(t, pub), inbox(t, sub)
	const publishers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, publishers*each)
	for g := range publishers {
		wg.Go(func() {
			for i := range each {
				// Publishers g and g+1 (g even) publish the same payloads.
				if err := pub.Publish(t.Context(), fmt.Appendf(nil, "%d-%d", g/2, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Publish: %v", err)
	}
	for name, ch := range map[string]chan []byte{"publisher": gotPub, "subscriber": gotSub} {
		count := map[string]int{}
		last := map[int]int{} // per pair of publishers: the last i delivered twice
		for range publishers * each {
			p := string(receive(t, ch))
			count[p]++
			var pair, i int
			if _, err := fmt.Sscanf(p, "%d-%d", &pair, &i); err != nil {
				t.Fatalf("%s got %q", name, p)
			}
			if count[p] == 2 {
				if i < last[pair] {
					t.Errorf("%s: %q delivered after a later payload of the same publishers", name, p)
				}
				last[pair] = i
			}
		}
		for g := 0; g < publishers; g += 2 {
			for i := range each {
				if p := fmt.Sprintf("%d-%d", g/2, i); count[p] != 2 {
					t.Errorf("%s got %q %d times, want 2", name, p, count[p])
				}
			}
		}
	}
}

func TestBrokerClose(t *testing.T) {
	b := newBroker(t, newChannel())
	got := inbox(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := b.Publish(t.Context(), []byte("x")); !errors.Is(err, postgres.ErrBrokerClosed) {
		t.Errorf("Publish after Close: %v, want ErrBrokerClosed", err)
	}
	select {
	case p := <-got:
		t.Errorf("delivery %q after Close", p)
	default:
	}
}

func TestBrokerOptions(t *testing.T) {
	pool := newPool(t, 2)
	if _, err := postgres.NewBroker(t.Context(), pool, &postgres.BrokerOptions{Channel: strings.Repeat("c", 64)}); err == nil {
		t.Error("NewBroker accepted a 64-byte channel")
	}
	b, err := postgres.NewBroker(t.Context(), pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Channel() != postgres.DefaultChannel {
		t.Errorf("default channel %q", b.Channel())
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := postgres.NewBroker(canceled, pool, &postgres.BrokerOptions{Channel: newChannel()}); err == nil {
		t.Error("NewBroker with a canceled context succeeded")
	}
}

// Stores of one schema share a channel; stores of different schemas do
// not.
func TestStoreBroker(t *testing.T) {
	s1, schema := open(t)
	s2 := openIn(t, schema)
	s3, _ := open(t)
	var brokers []*postgres.Broker
	for _, s := range []*postgres.Store{s1, s2, s3} {
		b, err := s.NewBroker(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		brokers = append(brokers, b)
	}
	if brokers[0].Channel() != brokers[1].Channel() || brokers[0].Channel() == brokers[2].Channel() {
		t.Fatalf("channels %q %q %q: want the first two equal, the third apart", brokers[0].Channel(), brokers[1].Channel(), brokers[2].Channel())
	}
	got2, got3 := inbox(t, brokers[1]), inbox(t, brokers[2])
	publishOK(t, brokers[0], "one")
	publishOK(t, brokers[2], "three")
	if p := receive(t, got2); string(p) != "one" {
		t.Errorf("same schema got %q", p)
	}
	if p := receive(t, got3); string(p) != "three" {
		t.Errorf("other schema got %q, want only its own", p)
	}
	long := newChannel() + strings.Repeat("s", 20) // 60 bytes
	conn := raw(t, "public")
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{long}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", long, err)
		}
	})
	b4, err := openIn(t, long).NewBroker(t.Context(), nil)
	if err != nil {
		t.Fatalf("a broker for a long schema name: %v", err)
	}
	if c := b4.Channel(); len(c) > 63 || c == brokers[0].Channel() {
		t.Errorf("channel %q for a long schema name", c)
	}
	b4.Close()
}

// A broker whose listening connection is killed reconnects, tells its
// subscribers that payloads may have been lost, and delivers again.
func TestBrokerReconnects(t *testing.T) {
	channel := newChannel()
	b := newBroker(t, channel)
	got := inbox(t, b)
	publishOK(t, b, "before")
	if p := receive(t, got); string(p) != "before" {
		t.Fatalf("got %q", p)
	}
	conn := raw(t, "public")
	for range 2 {
		var killed int
		err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = 'toolgate broker' AND query = $1`, "LISTEN "+pgx.Identifier{channel}.Sanitize()).Scan(&killed)
		if err != nil || killed != 1 {
			t.Fatalf("terminating the listening connection: %d killed, %v", killed, err)
		}
		if p := receive(t, got); p != nil {
			t.Fatalf("after the loss got %q, want the nil that says payloads may be lost", p)
		}
		publishOK(t, b, "after")
		if p := receive(t, got); string(p) != "after" {
			t.Fatalf("after reconnecting got %q", p)
		}
	}
}

// BenchmarkBrokerRoundTrip measures the latency from Publish to delivery
// through PostgreSQL, between two brokers with pools of their own.
func BenchmarkBrokerRoundTrip(b *testing.B) {
	channel := newChannel()
	pub, sub := newBroker(b, channel), newBroker(b, channel)
	got := inbox(b, sub)
	payload := []byte(`{"conversation_id":"conv_ABCDEFGHIJKLMNOPQRSTUVWXYZ","kind":"decided","pause_id":"pause_ABCDEFGHIJKLMNOPQRSTUVWXYZ"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := pub.Publish(b.Context(), payload); err != nil {
			b.Fatal(err)
		}
		receive(b, got)
	}
}
