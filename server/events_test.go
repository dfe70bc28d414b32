package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/internal/sse"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/sqlite"
)

const allowBookBody = `{"decisions":[{"key":"call_book","verdict":"allow"}]}`

func eventsPath(conv string) string { return "/v1/conversations/" + conv + "/events" }

func TestConversationEvents(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	conv := f.create("flights")
	s := open(t, f.h, eventsPath(conv), travellerKey)
	if s.status != 200 || s.header.Get("Content-Type") != "text/event-stream" || s.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("status %d, headers %v", s.status, s.header)
	}
	admin := open(t, f.h, eventsPath(conv), adminKey)
	other := open(t, f.h, eventsPath(f.create("flights")), travellerKey)

	pause := f.post(conv)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBookBody)
	pause2 := f.post(conv)
	for _, st := range []*stream{s, admin} {
		var ids []string
		for _, want := range []struct{ kind, pause string }{
			{"paused", pause}, {"decided", pause}, {"completed", ""}, {"paused", pause2},
		} {
			ids = append(ids, st.expect(want.kind, conv, want.pause).ID)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] == "" || ids[i] == ids[i-1] || !strings.HasPrefix(ids[i], strings.Split(ids[0], "-")[0]+"-") {
				t.Errorf("event ids %q: want distinct ids of one hub", ids)
			}
		}
	}
	// The stream of another conversation saw none of it.
	other.close()
	if ev, err := other.nextRaw(); err == nil {
		t.Errorf("another conversation's stream got %+v", ev)
	}
}

func TestEventsAuthorization(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	conv := f.create("flights")
	for _, tc := range []struct {
		name, path, key string
		status          int
		code            string
	}{
		{"no key", eventsPath(conv), "", 401, "unauthorized"},
		{"unknown key", eventsPath(conv), "nope", 401, "unauthorized"},
		{"guest", eventsPath(conv), guestKey, 404, "not_found"},
		{"approver is not a reader", eventsPath(conv), approverKey, 404, "not_found"},
		{"unknown conversation", eventsPath("conv_NOPE"), travellerKey, 404, "not_found"},
		{"inbox, traveller", "/v1/inbox/events", travellerKey, 403, "forbidden"},
		{"inbox, guest", "/v1/inbox/events", guestKey, 403, "forbidden"},
		{"inbox, admin", "/v1/inbox/events", adminKey, 403, "forbidden"},
		{"inbox, no key", "/v1/inbox/events", "", 401, "unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, f.h, tc.path, tc.key)
			if code := s.errorBody(); s.status != tc.status || code != tc.code {
				t.Errorf("got %d %s, want %d %s", s.status, code, tc.status, tc.code)
			}
		})
	}
	for _, k := range []string{travellerKey, adminKey} {
		if s := open(t, f.h, eventsPath(conv), k); s.status != 200 {
			t.Errorf("%s: status %d, want 200", k, s.status)
		}
	}
	if s := open(t, f.h, "/v1/inbox/events", approverKey); s.status != 200 {
		t.Errorf("approver's inbox events: status %d, want 200", s.status)
	}
	if code, out := f.do("POST", eventsPath(conv), travellerKey, ""); code != 405 {
		t.Errorf("POST to the events: %d %v, want 405", code, out)
	}
}

func TestInboxEvents(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	s := open(t, f.h, "/v1/inbox/events", approverKey)
	trains := f.create("trains")
	f.post(trains) // a pause the approver may not decide: not announced
	conv := f.create("flights")
	pause := f.post(conv)
	s.expect("paused", conv, pause)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBookBody)
	s.expect("decided", conv, pause)
	// The completion is not an inbox event; the next pause is.
	pause2 := f.post(f.create("flights"))
	ev := s.next()
	if ev.Type != "paused" || !strings.Contains(ev.Data, pause2) {
		t.Errorf("event %q %s, want the next pause %s", ev.Type, ev.Data, pause2)
	}
}

func TestEventsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(t, eventsConfig{ttl: ttl})
		conv := f.create("flights")
		s := open(t, f.h, eventsPath(conv), travellerKey)
		inbox := open(t, f.h, "/v1/inbox/events", approverKey)
		pause := f.post(conv)
		s.expect("paused", conv, pause)
		inbox.expect("paused", conv, pause)
		time.Sleep(ttl)
		// The sweeper expires the pause; nobody asked.
		s.expect("expired", conv, pause)
		inbox.expect("expired", conv, pause)
	})
}

func TestEventsHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(t, eventsConfig{})
		s := open(t, f.h, eventsPath(f.create("flights")), travellerKey)
		start := time.Now()
		for i := range 3 {
			ev, err := s.nextRaw()
			if err != nil || ev.Comment != "ping" {
				t.Fatalf("heartbeat %d: %+v %v", i, ev, err)
			}
			if got, want := time.Since(start), time.Duration(i+1)*15*time.Second; got != want {
				t.Errorf("heartbeat %d after %v, want %v", i, got, want)
			}
		}
	})
}

// A client that goes away ends its stream's handler, which leaves nothing
// running: synctest fails a test whose bubble keeps goroutines.
func TestEventsDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(t, eventsConfig{})
		conv := f.create("flights")
		s := open(t, f.h, eventsPath(conv), travellerKey)
		s.close()
		// Events for a gone stream go nowhere, and block nothing.
		pause := f.post(conv)
		f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBookBody)
		s2 := open(t, f.h, eventsPath(conv), travellerKey)
		s2.expect("paused", conv, f.post(conv))
		f.srv.Close()
		synctest.Wait()
	})
}

func TestEventsEndOnClose(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	s := open(t, f.h, eventsPath(f.create("flights")), travellerKey)
	f.srv.Close()
	if ev, err := s.nextRaw(); err != io.EOF {
		t.Errorf("after Close: %+v %v, want the end of the stream", ev, err)
	}
	<-s.done
}

func TestLastEventID(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	conv := f.create("flights")
	s := open(t, f.h, eventsPath(conv), travellerKey)
	pause := f.post(conv)
	first := s.expect("paused", conv, pause).ID
	s.close()

	// Missed while away: the decision and the completion, and another
	// conversation's events, which the stream does not replay.
	f.post(f.create("flights"))
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBookBody)
	s = open(t, f.h, eventsPath(conv), travellerKey, "Last-Event-ID", first)
	decided := s.expect("decided", conv, pause).ID
	completed := s.expect("completed", conv, "").ID
	s.close()

	// Nothing missed: nothing replayed, the next event is new.
	s = open(t, f.h, eventsPath(conv), travellerKey, "Last-Event-ID", completed)
	if got := s.expect("paused", conv, f.post(conv)).ID; got == completed || got == decided {
		t.Errorf("id %q of the new event repeats one seen", got)
	}

	// An id this server cannot resume after: resync first.
	for _, id := range []string{"nope", "abcdefghij-1", strings.Split(first, "-")[0] + "-99999", strings.Split(first, "-")[0] + "-x", "-", strings.Repeat("9", 300)} {
		s := open(t, f.h, eventsPath(conv), travellerKey, "Last-Event-ID", id)
		if ev := s.expect("resync", conv, ""); ev.ID == "" {
			t.Errorf("Last-Event-ID %q: resync without an id", id)
		}
		s.close()
	}
}

// Events older than the hub's history cannot be replayed: resync.
func TestLastEventIDTooOld(t *testing.T) {
	b := server.NewLocalBroker()
	f := newEventsFixture(t, eventsConfig{broker: b})
	conv := f.create("flights")
	s := open(t, f.h, eventsPath(conv), travellerKey)
	pause := f.post(conv)
	first := s.expect("paused", conv, pause).ID
	s.close()
	for i := range 1100 {
		publish(t, b, server.Event{ConversationID: fmt.Sprint("conv_", i), Kind: server.EventCompleted})
	}
	s = open(t, f.h, eventsPath(conv), travellerKey, "Last-Event-ID", first)
	s.expect("resync", conv, "")
}

// Replay picks the right events once the hub's history has wrapped
// around.
func TestLastEventIDAfterWrap(t *testing.T) {
	b := server.NewLocalBroker()
	f := newEventsFixture(t, eventsConfig{broker: b})
	conv := f.create("flights")
	for i := range 1500 {
		publish(t, b, server.Event{ConversationID: fmt.Sprint("conv_", i), Kind: server.EventCompleted})
	}
	s := open(t, f.h, eventsPath(conv), travellerKey)
	publish(t, b, server.Event{ConversationID: conv, Kind: server.EventExpired, PauseID: "pause_A"})
	first := s.expect("expired", conv, "pause_A").ID
	s.close()
	for i := range 500 {
		publish(t, b, server.Event{ConversationID: fmt.Sprint("conv_", i), Kind: server.EventCompleted})
		if i == 100 || i == 400 {
			publish(t, b, server.Event{ConversationID: conv, Kind: server.EventDecided, PauseID: fmt.Sprint("pause_", i)})
		}
	}
	s = open(t, f.h, eventsPath(conv), travellerKey, "Last-Event-ID", first)
	s.expect("decided", conv, "pause_100")
	s.expect("decided", conv, "pause_400")
}

func publish(t testing.TB, b server.Broker, e server.Event) {
	t.Helper()
	p, err := server.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// A stream whose reader falls behind drops events and says resync.
func TestEventsSlowReader(t *testing.T) {
	b := server.NewLocalBroker()
	f := newEventsFixture(t, eventsConfig{broker: b})
	conv := f.create("flights")
	s := open(t, f.h, eventsPath(conv), travellerKey)
	const n = 500
	for range n {
		publish(t, b, server.Event{ConversationID: conv, Kind: server.EventAppended})
	}
	got := 0
	for {
		ev := s.next()
		if ev.Type == "resync" {
			break
		}
		got++
	}
	if got >= n {
		t.Fatalf("%d events before the resync, want some dropped", got)
	}
	// The stream goes on: an event published once the reader caught up
	// arrives (one published while the buffer is still full is dropped,
	// and another resync says so).
	publish(t, b, server.Event{ConversationID: conv, Kind: server.EventCompleted})
	for {
		switch s.next().Type {
		case "completed":
			return
		case "resync":
			publish(t, b, server.Event{ConversationID: conv, Kind: server.EventCompleted})
		}
	}
}

// Payloads that are not events are dropped; a nil payload (a broker's gap)
// makes every stream resync.
func TestEventsBrokerPayloads(t *testing.T) {
	b := server.NewLocalBroker()
	f := newEventsFixture(t, eventsConfig{broker: b})
	conv := f.create("flights")
	s := open(t, f.h, eventsPath(conv), travellerKey)
	for _, p := range []string{
		``, `null`, `[]`, `{}`, `not json`,
		`{"conversation_id":"` + conv + `","kind":"nonsense"}`,
		`{"conversation_id":"` + conv + `","kind":"paused"}`,
		`{"conversation_id":"` + conv + `","kind":"resync"}`,
		`{"conversation_id":"` + conv + `","kind":"completed","extra":1}`,
		`{"conversation_id":"` + conv + `","kind":"completed"} {}`,
		`{"conversation_id":"` + conv + `\n","kind":"completed"}`,
		`{"conversation_id":"` + conv + `","kind":"decided","pause_id":"a b"}`,
		`{"conversation_id":"` + conv + `","kind":"completed","pause_id":"` + strings.Repeat("p", 5000) + `"}`,
	} {
		if err := b.Publish(context.Background(), []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Publish(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	s.expect("resync", conv, "")
	publish(t, b, server.Event{ConversationID: conv, Kind: server.EventDecided, PauseID: "pause_X"})
	s.expect("decided", conv, "pause_X")
}

// Two servers sharing a store and a broker: a stream on one sees what a
// request on the other did.
func TestEventsAcrossServers(t *testing.T) {
	path := t.TempDir() + "/shared.db"
	b := server.NewLocalBroker()
	fixtures := make([]*eventsFixture, 2)
	for i := range fixtures {
		st, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fixtures[i] = newEventsFixture(t, eventsConfig{store: st, broker: b})
	}
	a, other := fixtures[0], fixtures[1]
	conv := a.create("flights")
	s := open(t, a.h, eventsPath(conv), travellerKey)
	inbox := open(t, a.h, "/v1/inbox/events", approverKey)
	pause := other.post(conv)
	s.expect("paused", conv, pause)
	inbox.expect("paused", conv, pause)
	other.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBookBody)
	s.expect("decided", conv, pause)
	s.expect("completed", conv, "")
	inbox.expect("decided", conv, pause)
}

// A stream outlives the HTTP server's write timeout (and its read
// timeout).
func TestEventsOutliveTimeouts(t *testing.T) {
	f := newEventsFixture(t, eventsConfig{})
	server.SetHeartbeat(f.srv, 10*time.Millisecond)
	hs := httptest.NewUnstartedServer(f.h)
	hs.Config.ReadTimeout = 50 * time.Millisecond
	hs.Config.WriteTimeout = 50 * time.Millisecond
	hs.Start()
	defer hs.Close()
	conv := f.create("flights")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+eventsPath(conv), nil)
	req.Header.Set("Authorization", "Bearer "+travellerKey)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := sse.NewReader(resp.Body)
	start := time.Now()
	for pings := 0; time.Since(start) < 200*time.Millisecond; pings++ {
		ev, err := r.Next()
		if err != nil || ev.Comment != "ping" {
			t.Fatalf("after %v, %d heartbeats: %+v %v", time.Since(start), pings, ev, err)
		}
	}
	f.post(conv)
	for {
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "paused" {
			break
		}
	}
}

func TestLocalBroker(t *testing.T) {
	b := server.NewLocalBroker()
	var got1, got2 []string
	cancel1 := b.Subscribe(func(p []byte) { got1 = append(got1, string(p)) })
	cancel2 := b.Subscribe(func(p []byte) { got2 = append(got2, string(p)) })
	ctx := context.Background()
	b.Publish(ctx, []byte("a"))
	cancel1()
	cancel1()
	b.Publish(ctx, []byte("b"))
	cancel2()
	b.Publish(ctx, []byte("c"))
	if diff := cmp.Diff([]string{"a"}, got1); diff != "" {
		t.Errorf("first subscriber (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got2); diff != "" {
		t.Errorf("second subscriber (-want +got):\n%s", diff)
	}
	canceled, stop := context.WithCancel(ctx)
	stop()
	if err := b.Publish(canceled, []byte("d")); !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with a canceled context: %v", err)
	}
	var zero server.LocalBroker
	var n atomic.Int32
	defer zero.Subscribe(func([]byte) { n.Add(1) })()
	zero.Publish(ctx, []byte("x"))
	if n.Load() != 1 {
		t.Errorf("the zero LocalBroker delivered %d payloads, want 1", n.Load())
	}
}

func TestEventCodec(t *testing.T) {
	for _, e := range []server.Event{
		{ConversationID: "conv_1", Kind: server.EventPaused, PauseID: "pause_1"},
		{ConversationID: "conv_1", Kind: server.EventCompleted},
	} {
		p, err := server.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := server.DecodeEvent(p)
		if err != nil || got != e {
			t.Errorf("round trip of %+v: %+v %v", e, got, err)
		}
	}
	want := `{"conversation_id":"c","kind":"completed"}`
	if p, _ := server.EncodeEvent(server.Event{ConversationID: "c", Kind: server.EventCompleted}); string(p) != want {
		t.Errorf("encoded %s, want %s", p, want)
	}
	if _, err := server.EncodeEvent(server.Event{ConversationID: strings.Repeat("c", 5000), Kind: server.EventCompleted}); err == nil {
		t.Error("an oversized event was encoded")
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"conversation_id":"conv_1","kind":"paused","pause_id":"pause_1"}`))
	f.Add([]byte(`{"conversation_id":"c","kind":"completed"}`))
	f.Add([]byte(`{"conversation_id":"c\u0000","kind":"expired","pause_id":""}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := server.DecodeEvent(payload)
		if err != nil {
			return
		}
		p, err := server.EncodeEvent(e)
		if err != nil {
			t.Fatalf("an accepted event %+v does not encode: %v", e, err)
		}
		again, err := server.DecodeEvent(p)
		if err != nil || again != e {
			t.Fatalf("re-decoding %s: %+v %v, want %+v", p, again, err, e)
		}
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil || strings.ContainsAny(string(p), "\r\n") {
			t.Fatalf("encoded %q is not one line of JSON", p)
		}
	})
}

func FuzzLastEventID(f *testing.F) {
	const n = 700 // 1400 events: the history has wrapped
	id, resume := server.NewTestHub(n)
	f.Add(id + "-1")
	f.Add(id + "-1376")
	f.Add(id + "-1400")
	f.Add(id + "-18446744073709551615")
	f.Add(id + "--1")
	f.Add("-")
	f.Add("")
	f.Fuzz(func(t *testing.T, lastID string) {
		seqs, resync := resume(lastID)
		if resync && len(seqs) > 0 {
			t.Fatalf("%q: resync with %d events replayed", lastID, len(seqs))
		}
		if lastID == "" || resync {
			return
		}
		// A replay is the conversation's events after lastID, in order,
		// up to the last one.
		var after uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(lastID, id+"-"), "%d", &after); err != nil || !strings.HasPrefix(lastID, id+"-") {
			t.Fatalf("%q accepted as an id of hub %s", lastID, id)
		}
		want := []uint64{}
		for seq := after + 1; seq <= 2*n; seq++ {
			if seq%2 == 0 {
				want = append(want, seq)
			}
		}
		if len(seqs) == 0 {
			seqs = []uint64{}
		}
		if diff := cmp.Diff(want, seqs); diff != "" {
			t.Fatalf("replay after %q (-want +got):\n%s", lastID, diff)
		}
	})
}
