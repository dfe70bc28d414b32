package webhook_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/webhook"
)

// BenchmarkSend is what a decision pays to announce itself: encoding and
// queueing a message for one endpoint (delivery happens in the
// background, here to an in-memory receiver).
func BenchmarkSend(b *testing.B) {
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})
	s, err := webhook.New(&webhook.Options{
		Endpoints: []webhook.Endpoint{{Name: "ops", URL: "https://hooks.example/", Secret: secret}},
		Client:    &http.Client{Transport: rt},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := map[string]string{"conversation_id": "conv_0123456789", "pause_id": "pause_0123456789", "agent": "flights"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Send("pause.paused", data); err != nil {
			b.Fatal(err)
		}
	}
}
