package serve_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/webhook"
)

const testHookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// webhookConfig is the flight agent with privacy and webhooks to URL.
const webhookConfig = `agents:
	flights:
		model: {provider: scripted-demo}
		tools: [flightStatus, bookFlight]
		requester_roles: [traveller]
		privacy:
			enabled: true
			vault_key_env: TG_TEST_VAULT
			disclosures: {bookFlight: [EMAIL_ADDRESS, CREDIT_CARD]}
		approvals:
			- tools: [bookFlight]
				roles: [approver]
store:
	sqlite: data/toolgate.db
public_url: https://toolgate.example.com
webhooks:
	endpoints:
		- {name: relay, url: "URL", secret_env: TG_TEST_HOOK_SECRET, types: [pause.paused]}
	min_backoff: 10ms
	roles: [approver]
authentication:
	api_keys:
		- sha256: 84f71c9ac07c9c3ab0d2c54334bcf5cab957f375e87468b71092eacc65ffed75
			principal: {id: alice, roles: [traveller]}
		- sha256: 99c6533d0bfe6cb4465751fec0b04fe9e546a05f63485547b7dec32799a5f5c1
			principal: {id: bob, roles: [approver]}
`

// TestWebhooksFromFile: the file's endpoint gets a signed pause.paused
// webhook whose arguments hold tokens, never the personal data, with the
// link to the pause under public_url.
func TestWebhooksFromFile(t *testing.T) {
	t.Setenv("TG_TEST_VAULT", strings.Repeat("5a", 32))
	t.Setenv("TG_TEST_HOOK_SECRET", testHookSecret)
	verifier, _ := standardwebhooks.NewWebhook(testHookSecret)
	got := make(chan []byte, 4)
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			t.Errorf("the webhook does not verify: %v", err)
		}
		got <- body
	}))
	t.Cleanup(relay.Close)
	fc, err := serve.LoadConfig(writeConfig(t, strings.Replace(webhookConfig, "URL", relay.URL, 1)))
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.PrivateInput+`"}`)
	pause := out["pause"].(map[string]any)["id"].(string)
	body := <-got
	for _, private := range []string{"ada.lovelace", "4111"} {
		if strings.Contains(string(body), private) {
			t.Errorf("the webhook holds personal data %q: %s", private, body)
		}
	}
	var m webhook.Message
	var d server.WebhookData
	if err := json.Unmarshal(body, &m); err != nil || json.Unmarshal(m.Data, &d) != nil {
		t.Fatalf("webhook %s: %v", body, err)
	}
	if m.Type != "pause.paused" || d.Link != "https://toolgate.example.com/conversations/"+conv+"/pauses/"+pause {
		t.Errorf("webhook %s", body)
	}
	var book string
	for _, c := range d.Calls {
		if c.Tool == "bookFlight" {
			book = c.Arguments
		}
	}
	if !strings.Contains(book, "[EMAIL_ADDRESS_1]") {
		t.Errorf("bookFlight's arguments %q, want them with tokens", book)
	}
	// Only pause.paused goes to this endpoint.
	f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	log := f.must(200, "GET", "/v1/webhooks/deliveries", exampleApproverKey, "")["deliveries"].([]any)
	if len(log) != 1 || log[0].(map[string]any)["type"] != "pause.paused" {
		t.Errorf("delivery log %v, want the one pause.paused", log)
	}
}

func TestWebhooksConfigInvalid(t *testing.T) {
	t.Setenv("TG_TEST_VAULT", strings.Repeat("5a", 32))
	t.Setenv("TG_TEST_HOOK_SECRET", testHookSecret)
	t.Setenv("TG_TEST_BAD_SECRET", "hunter2")
	base := strings.Replace(webhookConfig, "URL", "https://relay.example.com/hook", 1)
	for _, tc := range []struct{ name, old, new, path, message string }{
		{"unset secret", "TG_TEST_HOOK_SECRET", "TG_TEST_NOT_SET", "webhooks.endpoints[0].secret_env", "TG_TEST_NOT_SET is not set"},
		{"bad secret", "TG_TEST_HOOK_SECRET", "TG_TEST_BAD_SECRET", "webhooks.endpoints[0].secret_env", `TG_TEST_BAD_SECRET: want "whsec_"`},
		{"no secret", ", secret_env: TG_TEST_HOOK_SECRET", "", "webhooks.endpoints[0].secret_env", "required"},
		{"bad url", "https://relay.example.com/hook", "relay.example.com", "webhooks.endpoints[0].url", "not an http or https URL"},
		{"no name", "name: relay, ", "", "webhooks.endpoints[0].name", "required"},
		{"unknown type", "[pause.paused]", "[pause.pasued]", "webhooks.endpoints[0].types[0]", `unknown type "pause.pasued"`},
		{"negative backoff", "min_backoff: 10ms", "min_backoff: -1s", "webhooks.min_backoff", "negative"},
		{"settings without endpoints", "\tendpoints:\n\t\t- {name: relay, url: \"https://relay.example.com/hook\", secret_env: TG_TEST_HOOK_SECRET, types: [pause.paused]}\n", "", "webhooks", "no endpoints"},
		{"public url", "https://toolgate.example.com", "toolgate.example.com", "public_url", "want an http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(base, tc.old, tc.new, 1)
			if text == base {
				t.Fatalf("%q is not in the file", tc.old)
			}
			_, err := serve.LoadConfig(writeConfig(t, text))
			var ce *serve.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("LoadConfig = %v, want a ConfigError", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the secret: %v", err)
			}
			for _, p := range ce.Problems {
				if p.Path == tc.path && strings.Contains(p.Message, tc.message) {
					return
				}
			}
			t.Errorf("problems %v, want one at %s saying %q", ce.Problems, tc.path, tc.message)
		})
	}
}
