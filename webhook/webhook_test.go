package webhook_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toolgate/toolgate/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a scripted endpoint: it answers each request with the next
// status of its script (200 once the script is spent) or, for status 0,
// fails the connection.
type receiver struct {
	mu     sync.Mutex
	script []int
	got    []received
}

func (r *receiver) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, received{req.Header.Clone(), body, time.Now()})
	status := 200
	if len(r.script) > 0 {
		status, r.script = r.script[0], r.script[1:]
	}
	if status == 0 {
		return nil, errors.New("connection refused")
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: req}, nil
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func newSender(t *testing.T, rt http.RoundTripper, o webhook.Options) *webhook.Sender {
	t.Helper()
	if o.Endpoints == nil {
		o.Endpoints = []webhook.Endpoint{{Name: "ops", URL: "https://hooks.example/T/secret-path", Secret: secret}}
	}
	o.Client = &http.Client{Transport: rt}
	s, err := webhook.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSignature has a receiver verify the signature of a delivered
// message with the Standard Webhooks library, over real HTTP.
func TestSignature(t *testing.T) {
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var msg webhook.Message
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := verifier.Verify(body, r.Header)
		if err == nil {
			err = json.Unmarshal(body, &msg)
		}
		got <- err
	}))
	t.Cleanup(srv.Close)
	s, err := webhook.New(&webhook.Options{Endpoints: []webhook.Endpoint{{Name: "ops", URL: srv.URL, Secret: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	id, err := s.Send("pause.paused", map[string]string{"pause_id": "pause_1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the receiver refused the message: %v", err)
	}
	if msg.Type != "pause.paused" || string(msg.Data) != `{"pause_id":"pause_1"}` {
		t.Errorf("message %+v", msg)
	}
	// A tampered body, or another secret, does not verify.
	other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 32))
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", "1")
	if other.VerifyIgnoringTimestamp([]byte(`{}`), h) == nil {
		t.Error("a message without a valid signature verified")
	}
}

// TestRetries: a receiver that is down for a while gets the message once
// it is back, within the retry budget, after waits that double; the
// message id stays the same and each attempt is signed anew.
func TestRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rcv := &receiver{script: []int{0, 503, 500}}
		s := newSender(t, rcv, webhook.Options{MinBackoff: time.Second, MaxBackoff: 3 * time.Second, MaxAttempts: 5})
		start := time.Now()
		id, err := s.Send("pause.decided", map[string]string{"pause_id": "p"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if d := s.Deliveries()[0]; d.Status != webhook.StatusPending || d.Attempts != 1 || d.LastError != "connection refused" {
			t.Fatalf("after one attempt: %+v", d)
		}
		time.Sleep(time.Minute) // advances the bubble's clock
		synctest.Wait()
		got := rcv.requests()
		if len(got) != 4 {
			t.Fatalf("%d attempts, want 4", len(got))
		}
		wantAt := []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second} // waits 1s, 2s, 3s (capped)
		verifier, _ := standardwebhooks.NewWebhook(secret)
		for i, r := range got {
			if at := r.at.Sub(start); at != wantAt[i] {
				t.Errorf("attempt %d at %v, want %v", i+1, at, wantAt[i])
			}
			if r.header.Get("webhook-id") != id {
				t.Errorf("attempt %d has id %q, want %q", i+1, r.header.Get("webhook-id"), id)
			}
			if err := verifier.VerifyIgnoringTimestamp(r.body, r.header); err != nil {
				t.Errorf("attempt %d: %v", i+1, err)
			}
		}
		d := s.Deliveries()[0]
		if d.Status != webhook.StatusDelivered || d.Attempts != 4 || d.LastStatusCode != 200 || d.DeliveredAt == nil || d.LastError != "" {
			t.Errorf("delivery %+v, want delivered after 4 attempts", d)
		}
	})
}

// TestReceiverDown: a receiver down for longer than the retry budget gets
// the message logged as failed; the sender goes on with the next one.
func TestReceiverDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rcv := &receiver{script: []int{0, 0, 0}}
		s := newSender(t, rcv, webhook.Options{MinBackoff: time.Second, MaxAttempts: 3})
		first, _ := s.Send("pause.paused", 1)
		second, _ := s.Send("pause.expired", 2)
		time.Sleep(time.Hour)
		synctest.Wait()
		ds := s.Deliveries()
		if len(ds) != 2 {
			t.Fatalf("deliveries %+v", ds)
		}
		if d := ds[1]; d.MessageID != first || d.Status != webhook.StatusFailed || d.Attempts != 3 || d.LastError != "connection refused" {
			t.Errorf("first message %+v, want failed after 3 attempts", d)
		}
		if d := ds[0]; d.MessageID != second || d.Status != webhook.StatusDelivered || d.Attempts != 1 {
			t.Errorf("second message %+v, want delivered", d)
		}
	})
}

// TestOrder: messages reach an endpoint in the order they were sent, a
// retried one holding back the next.
func TestOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rcv := &receiver{script: []int{500, 500}}
		s := newSender(t, rcv, webhook.Options{MinBackoff: time.Second})
		for _, typ := range []string{"pause.paused", "pause.decided", "pause.expired"} {
			s.Send(typ, nil)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		var types []string
		for _, r := range rcv.requests() {
			var m webhook.Message
			json.Unmarshal(r.body, &m)
			types = append(types, m.Type)
		}
		if want := "pause.paused pause.paused pause.paused pause.decided pause.expired"; strings.Join(types, " ") != want {
			t.Errorf("the receiver got %v, want %s", types, want)
		}
	})
}

// TestSendNeverBlocks: with a receiver that never answers, Send returns at
// once; messages beyond the queue are dropped and logged so.
func TestSendNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
			return nil, r.Context().Err()
		})
		s := newSender(t, rt, webhook.Options{QueueSize: 2, Timeout: time.Hour})
		for range 5 {
			if _, err := s.Send("pause.paused", nil); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the worker takes the first message
		}
		var dropped int
		for _, d := range s.Deliveries() {
			if d.Status == webhook.StatusDropped {
				dropped++
			}
		}
		if dropped != 2 { // one in flight, two queued
			t.Errorf("%d dropped, want 2", dropped)
		}
		close(block)
		s.Close()
		for _, d := range s.Deliveries() {
			if d.Status == webhook.StatusPending {
				t.Errorf("after Close, %+v is still pending", d)
			}
		}
		if _, err := s.Send("pause.paused", nil); !errors.Is(err, webhook.ErrClosed) {
			t.Errorf("Send after Close = %v, want ErrClosed", err)
		}
	})
}

func TestTypesAndLogSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rcv := &receiver{}
		s := newSender(t, rcv, webhook.Options{LogSize: 3, Endpoints: []webhook.Endpoint{
			{Name: "all", URL: "https://a.example/", Secret: secret},
			{Name: "decided", URL: "https://b.example/", Secret: secret, Types: []string{"pause.decided"}},
		}})
		s.Send("pause.paused", nil)
		s.Send("pause.decided", nil)
		synctest.Wait()
		ds := s.Deliveries()
		if len(ds) != 3 || ds[0].Endpoint != "decided" || ds[1].Endpoint != "all" || ds[1].Type != "pause.decided" || ds[2].Type != "pause.paused" {
			t.Fatalf("deliveries %+v", ds)
		}
		s.Send("pause.expired", nil)
		synctest.Wait()
		if ds := s.Deliveries(); len(ds) != 3 || ds[0].Type != "pause.expired" || ds[2].Type != "pause.decided" {
			t.Errorf("after the log is full: %+v", ds)
		}
	})
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  *webhook.Options
		field string
	}{
		{"nil", nil, "endpoints"},
		{"no name", &webhook.Options{Endpoints: []webhook.Endpoint{{URL: "https://a.example", Secret: secret}}}, "endpoints[0].name"},
		{"twice", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: secret}, {Name: "a", URL: "https://a.example", Secret: secret}}}, "endpoints[1].name"},
		{"url", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "ftp://a.example", Secret: secret}}}, "endpoints[0].url"},
		{"secret prefix", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: "hunter2"}}}, "endpoints[0].secret"},
		{"secret base64", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: "whsec_!!!"}}}, "endpoints[0].secret"},
		{"short secret", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: "whsec_c2hvcnQ="}}}, "endpoints[0].secret"},
		{"long secret", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: "whsec_" + strings.Repeat("QUFB", 27)}}}, "endpoints[0].secret"},
		{"type", &webhook.Options{Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: secret, Types: []string{"Pause Paused"}}}}, "endpoints[0].types[0]"},
		{"attempts", &webhook.Options{MaxAttempts: -1, Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: secret}}}, "max_attempts"},
		{"backoff", &webhook.Options{MinBackoff: time.Minute, MaxBackoff: time.Second, Endpoints: []webhook.Endpoint{{Name: "a", URL: "https://a.example", Secret: secret}}}, "max_backoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := webhook.New(tc.opts)
			var oe *webhook.OptionsError
			if s != nil || !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("New = %v, %v; want an error naming %s", s, err, tc.field)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestErrorsHideTheURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) { return nil, errors.New("dial failed") })
		s := newSender(t, rt, webhook.Options{MaxAttempts: 1})
		s.Send("pause.paused", nil)
		synctest.Wait()
		if d := s.Deliveries()[0]; strings.Contains(d.LastError, "secret-path") || d.Status != webhook.StatusFailed {
			t.Errorf("delivery %+v", d)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
