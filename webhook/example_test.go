package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toolgate/toolgate/webhook"
)

// A receiver checks each message's signature with a Standard Webhooks
// library before it trusts the message.
func Example() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Println("verified", r.Header.Get("webhook-id") != "")
	}))
	defer receiver.Close()

	sender, err := webhook.New(&webhook.Options{Endpoints: []webhook.Endpoint{{Name: "relay", URL: receiver.URL, Secret: secret}}})
	if err != nil {
		panic(err)
	}
	defer sender.Close()
	if _, err := sender.Send("pause.paused", map[string]string{"pause_id": "pause_P"}); err != nil {
		panic(err)
	}
	<-done
	// Output:
	// verified true
}
