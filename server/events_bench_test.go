package server_test

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// BenchmarkEventDelivery measures the latency of an event from its
// publication on an in-process broker to its arrival, as server-sent
// event text, at a reader of the conversation's stream.
func BenchmarkEventDelivery(b *testing.B) {
	broker := server.NewLocalBroker()
	f := newEventsFixture(b, eventsConfig{broker: broker})
	conv := f.create("flights")
	s := open(b, f.h, eventsPath(conv), travellerKey)
	payload, err := server.EncodeEvent(server.Event{ConversationID: conv, Kind: server.EventDecided, PauseID: "pause_ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := broker.Publish(ctx, payload); err != nil {
			b.Fatal(err)
		}
		if ev := s.next(); ev.Type != "decided" {
			b.Fatalf("event %q", ev.Type)
		}
	}
}
