package server_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/webhook"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// hookReceiver is an endpoint that verifies each message's signature and
// keeps the verified ones; while down it fails every connection.
type hookReceiver struct {
	t        testing.TB
	verifier *standardwebhooks.Webhook

	mu   sync.Mutex
	down bool
	got  []webhook.Message
	ids  []string
}

func (r *hookReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return nil, errors.New("connection refused")
	}
	if err := r.verifier.Verify(body, req.Header); err != nil {
		r.t.Errorf("a webhook does not verify: %v", err)
		return &http.Response{StatusCode: 401, Body: http.NoBody, Request: req}, nil
	}
	var m webhook.Message
	if err := json.Unmarshal(body, &m); err != nil {
		r.t.Errorf("a webhook is not a message: %v", err)
	}
	r.got = append(r.got, m)
	r.ids = append(r.ids, req.Header.Get("webhook-id"))
	return &http.Response{StatusCode: 204, Body: http.NoBody, Request: req}, nil
}

func (r *hookReceiver) setDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

// messages returns the verified messages, decoding their data.
func (r *hookReceiver) messages() ([]string, []server.WebhookData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var types []string
	var data []server.WebhookData
	for _, m := range r.got {
		var d server.WebhookData
		if err := json.Unmarshal(m.Data, &d); err != nil {
			r.t.Errorf("data %s: %v", m.Data, err)
		}
		types = append(types, m.Type)
		data = append(data, d)
	}
	return types, data
}

// hookFixture is the flight agent with webhooks to a receiver.
func hookFixture(t *testing.T, configure func(*server.Config)) (*fixture, *hookReceiver, *webhook.Sender) {
	t.Helper()
	verifier, err := standardwebhooks.NewWebhook(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	rcv := &hookReceiver{t: t, verifier: verifier}
	sender, err := webhook.New(&webhook.Options{
		Endpoints:  []webhook.Endpoint{{Name: "approvals", URL: "https://hooks.example/approvals", Secret: hookSecret}},
		Client:     &http.Client{Transport: rcv},
		MinBackoff: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sender.Close() })
	f := newFixtureWith(t, memory.New(), flightdemo.Model(), func(c *server.Config) {
		c.Webhooks = sender
		c.PublicURL = "https://toolgate.example.com/"
		c.WebhookRoles = []string{"admin"}
		if configure != nil {
			configure(c)
		}
	})
	return f, rcv, sender
}

// TestWebhooksPausedDecided: a pause and its decision each reach the
// receiver as a signed webhook with a link to the pause's page, naming
// the tools and the principals but not what was said.
func TestWebhooksPausedDecided(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rcv, _ := hookFixture(t, nil)
		conv, pause := f.paused()
		synctest.Wait()
		f.must(200, "POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
		synctest.Wait()

		types, data := rcv.messages()
		if strings.Join(types, " ") != "pause.paused pause.decided" {
			t.Fatalf("webhooks %v, want pause.paused then pause.decided", types)
		}
		link := "https://toolgate.example.com/conversations/" + conv + "/pauses/" + pause
		p := data[0]
		if p.ConversationID != conv || p.PauseID != pause || p.Agent != "flights" || p.Requester != "ada" || p.Link != link || p.CreatedAt == nil {
			t.Errorf("pause.paused data %+v", p)
		}
		var tools []string
		for _, c := range p.Calls {
			tools = append(tools, c.Tool)
			if c.Arguments != "" {
				t.Errorf("call %s carries arguments %q for an agent without privacy", c.Key, c.Arguments)
			}
			if c.Awaiting != (c.Key == "call_book") {
				t.Errorf("call %s awaiting %v", c.Key, c.Awaiting)
			}
		}
		if strings.Join(tools, ",") != "flightStatus,bookFlight" {
			t.Errorf("tools %v", tools)
		}
		d := data[1]
		if d.Link != link || d.Decision == nil || d.Decision.DecidedBy != "bob" || d.Decision.Source != "person" || d.Decision.Verdicts["call_book"] != toolgate.VerdictAllow {
			t.Errorf("pause.decided data %+v, decision %+v", d, d.Decision)
		}
		for _, said := range []string{flightdemo.Input, "I will check the flight", "VX205"} {
			if text := jsonText(t, data); strings.Contains(text, said) {
				t.Errorf("a webhook holds what was said (%q): %s", said, text)
			}
		}
	})
}

// TestWebhooksExpired: an expired pause is announced.
func TestWebhooksExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rcv, _ := hookFixture(t, func(c *server.Config) { c.PauseTTL = time.Minute })
		_, pause := f.paused()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		types, data := rcv.messages()
		if strings.Join(types, " ") != "pause.paused pause.expired" {
			t.Fatalf("webhooks %v, want pause.paused then pause.expired", types)
		}
		if data[0].ExpiresAt == nil {
			t.Error("pause.paused has no expires_at under a time-to-live")
		}
		if d := data[1]; d.PauseID != pause || d.Decision == nil || d.Decision.Outcome != "expired" || d.Decision.Source != "expiry" {
			t.Errorf("pause.expired data %+v", d)
		}
	})
}

// TestWebhooksReceiverDown: decisions go through while the receiver is
// down, and the receiver gets every webhook, in order, once it is back
// within the retry budget; the delivery log shows the attempts.
func TestWebhooksReceiverDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rcv, _ := hookFixture(t, nil)
		rcv.setDown(true)
		conv, pause := f.paused()
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
		if out["status"] != "completed" {
			t.Fatalf("decision %v, want completed while the receiver is down", out)
		}
		synctest.Wait()
		if types, _ := rcv.messages(); len(types) != 0 {
			t.Fatalf("a down receiver got %v", types)
		}
		log := f.must(200, "GET", "/v1/webhooks/deliveries", adminKey, "")["deliveries"].([]any)
		if len(log) != 2 || log[1].(map[string]any)["status"] != "pending" || log[1].(map[string]any)["last_error"] != "connection refused" {
			t.Fatalf("delivery log %v, want two pending deliveries", log)
		}
		rcv.setDown(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		types, _ := rcv.messages()
		if strings.Join(types, " ") != "pause.paused pause.decided" {
			t.Fatalf("after the receiver is back: %v", types)
		}
		log = f.must(200, "GET", "/v1/webhooks/deliveries", adminKey, "")["deliveries"].([]any)
		// The decided message waited for the paused one, retried first.
		for i, wantAttempts := range []float64{1, 2} {
			if d := log[i].(map[string]any); d["status"] != "delivered" || d["endpoint"] != "approvals" || d["attempts"].(float64) < wantAttempts {
				t.Errorf("delivery %v, want delivered after at least %v attempts", d, wantAttempts)
			}
		}
		if text := jsonText(t, log); strings.Contains(text, "hooks.example") {
			t.Errorf("the delivery log shows the endpoint's URL: %s", text)
		}
		f.must(403, "GET", "/v1/webhooks/deliveries", approverKey, "")
	})
}

func TestWebhooksNoConfigNoRoute(t *testing.T) {
	f := newFixture(t, nil)
	code, out := f.do("GET", "/v1/webhooks/deliveries", adminKey, "")
	if code != 403 {
		t.Errorf("without webhook roles: %d %v, want 403", code, out)
	}
}

func TestPublicURLInvalid(t *testing.T) {
	for _, u := range []string{"toolgate.example.com", "https://toolgate.example.com/?a=b", "ftp://x"} {
		_, err := server.New(&server.Config{Agents: map[string]*server.Agent{"a": {Client: toolgate.NewClient(flightdemo.Model(), nil, nil)}}, PublicURL: u})
		if err == nil || !strings.Contains(err.Error(), "public_url") {
			t.Errorf("PublicURL %q: %v, want an error naming public_url", u, err)
		}
	}
}
