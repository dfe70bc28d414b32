package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/server"
)

// Servers in one process can share a LocalBroker, as instances on one
// database share a postgres.Broker: each server publishes its events to
// it and hands what it delivers to its event streams.
func ExampleLocalBroker() {
	broker := server.NewLocalBroker()
	cancel := broker.Subscribe(func(p []byte) { fmt.Printf("%s\n", p) })
	defer cancel()
	payload, _ := json.Marshal(server.Event{ConversationID: "conv_1", Kind: server.EventDecided, PauseID: "pause_1"})
	broker.Publish(context.Background(), payload)
	// Output:
	// {"conversation_id":"conv_1","kind":"decided","pause_id":"pause_1"}
}
