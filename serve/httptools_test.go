package serve_test

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// httpToolConfig is a file with one HTTP tool at URL, whose calls need an
// approver.
const httpToolConfig = `agents:
	shop:
		model: {provider: scripted-demo}
		http_tools:
			- name: refundOrder
				description: Refund an order in full
				url: URL/orders/{order}/refund
				headers: {Authorization: "Bearer ${TG_TEST_SHOP_TOKEN}", X-Tenant: acme}
				timeout: 5s
				requires_confirmation: true
				input_schema:
					type: object
					properties:
						order: {type: string, pattern: "^A-[0-9]+$"}
						reason: {type: string}
					required: [order]
		approvals:
			- tools: [refundOrder]
				roles: [approver]
store:
	sqlite: data/toolgate.db
authentication:
	api_keys:
		- sha256: 84f71c9ac07c9c3ab0d2c54334bcf5cab957f375e87468b71092eacc65ffed75
			principal: {id: alice, roles: [traveller]}
		- sha256: 99c6533d0bfe6cb4465751fec0b04fe9e546a05f63485547b7dec32799a5f5c1
			principal: {id: bob, roles: [approver]}
`

// TestHTTPToolFromFile runs a call of a file's HTTP tool through the
// service: it pauses, an approver allows it, and the service receives the
// arguments, the header from the environment and the idempotency key.
func TestHTTPToolFromFile(t *testing.T) {
	t.Setenv("TG_TEST_SHOP_TOKEN", "s3cret")
	type request struct {
		path, body, auth, tenant, key string
	}
	got := make(chan request, 1)
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- request{r.URL.Path, string(b), r.Header.Get("Authorization"), r.Header.Get("X-Tenant"), r.Header.Get("Idempotency-Key")}
		io.WriteString(w, `{"refunded":"A-17"}`)
	}))
	t.Cleanup(shop.Close)

	fc, err := serve.LoadConfig(writeConfig(t, strings.ReplaceAll(httpToolConfig, "URL", shop.URL)))
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
			return scripted.Reply{Text: "The shop said: " + tm.Results[0].Content}, nil
		}
		if p.Tool("refundOrder") == nil {
			return scripted.Reply{}, errors.New("refundOrder was not offered")
		}
		return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "call_refund", Name: "refundOrder", Arguments: `{"order":"A-17","reason":"damaged"}`}}}, nil
	})
	cfg, closeAll, err := serve.Build(context.Background(), fc, &serve.BuildOptions{Models: map[string]toolgate.Model{"shop": model}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll() })
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f := &fixture{t: t, h: srv, srv: srv}

	conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"Refund A-17"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
	select {
	case r := <-got:
		t.Fatalf("the tool ran before the decision: %v", r)
	default:
	}
	pause := out["pause"].(map[string]any)["id"].(string)
	out = f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_refund","verdict":"allow"}]}`)
	if want := `The shop said: {"refunded":"A-17"}`; out["text"] != want {
		t.Errorf("answer %q, want %q", out["text"], want)
	}
	r := <-got
	want := request{"/orders/A-17/refund", `{"order":"A-17","reason":"damaged"}`, "Bearer s3cret", "acme", toolgate.IdempotencyKey(conv, pause, "call_refund")}
	if r != want {
		t.Errorf("the shop got %+v, want %+v", r, want)
	}
}

func TestHTTPToolConfigInvalid(t *testing.T) {
	t.Setenv("TG_TEST_SHOP_TOKEN", "s3cret")
	t.Setenv("TG_TEST_UNSET", "")
	tool := func(lines string) string {
		return strings.Replace(httpToolConfig, "\t\thttp_tools:\n", "\t\thttp_tools:\n"+lines, 1)
	}
	for _, tc := range []struct {
		name, config, path, message string
	}{
		{"unset header variable", strings.Replace(httpToolConfig, "TG_TEST_SHOP_TOKEN", "TG_TEST_UNSET", 1),
			"agents.shop.http_tools[0].headers.Authorization", "the environment variable TG_TEST_UNSET is not set"},
		{"bad url", strings.Replace(httpToolConfig, "URL/orders", "ftp://shop.example/orders", 1), "agents.shop.http_tools[0].url", "not an http or https URL"},
		{"placeholder in host", strings.Replace(httpToolConfig, "URL/orders", "https://{tenant}.example/orders", 1), "agents.shop.http_tools[0].url", "in the path only"},
		{"method", tool("\t\t\t- {name: t2, url: \"https://x.example/\", method: TRACE}\n"), "agents.shop.http_tools[0].method", "want GET, POST"},
		{"builtin name", tool("\t\t\t- {name: bookFlight, url: \"https://x.example/\"}\n"), "agents.shop.http_tools[0].name", "built-in tool"},
		{"duplicate name", tool("\t\t\t- {name: refundOrder, url: \"https://x.example/\"}\n"), "agents.shop.http_tools[1].name", "another HTTP tool"},
		{"bad name", tool("\t\t\t- {name: \"no spaces\", url: \"https://x.example/\"}\n"), "agents.shop.http_tools[0].name", "want 1 to 64"},
		{"schema keyword typo", strings.Replace(httpToolConfig, "required: [order]", "requried: [order]", 1), "agents.shop.http_tools[0].input_schema", "unknown JSON schema keywords: requried"},
		{"nested keyword typo", strings.Replace(httpToolConfig, "reason: {type: string}", "reason: {typ: string}", 1), "agents.shop.http_tools[0].input_schema.properties.reason", "unknown JSON schema keywords: typ"},
		{"schema not a mapping", tool("\t\t\t- {name: t2, url: \"https://x.example/\", input_schema: [1]}\n"), "agents.shop.http_tools[0].input_schema", "want a JSON schema"},
		{"schema of a string", tool("\t\t\t- {name: t2, url: \"https://x.example/\", input_schema: {type: string}}\n"), "agents.shop.http_tools[0].input_schema", "want type object"},
		{"schema with a non-string key", tool("\t\t\t- {name: t2, url: \"https://x.example/\", input_schema: {properties: {1: {type: string}}}}\n"), "agents.shop.http_tools[0].input_schema", ""},
		{"negative timeout", tool("\t\t\t- {name: t2, url: \"https://x.example/\", timeout: -1s}\n"), "agents.shop.http_tools[0].timeout", "negative"},
		{"negative size", tool("\t\t\t- {name: t2, url: \"https://x.example/\", max_response_bytes: -1}\n"), "agents.shop.http_tools[0].max_response_bytes", "negative"},
		{"tls on http", tool("\t\t\t- {name: t2, url: \"http://x.example/\", tls: {insecure_skip_verify: true}}\n"), "agents.shop.http_tools[0].tls", "https URL"},
		{"missing ca file", tool("\t\t\t- {name: t2, url: \"https://x.example/\", tls: {ca_file: nowhere.pem}}\n"), "agents.shop.http_tools[0].tls.ca_file", "nowhere.pem"},
		{"cert without key", tool("\t\t\t- {name: t2, url: \"https://x.example/\", tls: {cert_file: policies.cedar}}\n"), "agents.shop.http_tools[0].tls.cert_file", "both cert_file and key_file"},
		{"unknown key", tool("\t\t\t- {name: t2, url: \"https://x.example/\", secret: x}\n"), "agents.shop.http_tools[0]", `unknown key "secret"`},
		{"approval of an unknown tool", strings.Replace(httpToolConfig, "tools: [refundOrder]", "tools: [refundOrders]", 1), "agents.shop.approvals[0].tools[0]", "not one of the agent's tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := serve.LoadConfig(writeConfig(t, strings.ReplaceAll(tc.config, "URL", "https://shop.example")))
			var ce *serve.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("LoadConfig = %v, want a ConfigError", err)
			}
			for _, p := range ce.Problems {
				if p.Path == tc.path && strings.Contains(p.Message, tc.message) {
					if strings.Contains(err.Error(), "s3cret") {
						t.Errorf("the error shows a header's value: %v", err)
					}
					return
				}
			}
			t.Errorf("problems %v, want one at %s saying %q", ce.Problems, tc.path, tc.message)
		})
	}
}

// TestHTTPToolTLSPathsRelative checks that TLS files are found relative to
// the configuration file.
func TestHTTPToolTLSPathsRelative(t *testing.T) {
	t.Setenv("TG_TEST_SHOP_TOKEN", "s3cret")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	cfgText := strings.Replace(strings.ReplaceAll(httpToolConfig, "URL", srv.URL), "\t\t\t\ttimeout: 5s\n", "\t\t\t\ttimeout: 5s\n\t\t\t\ttls: {ca_file: certs/ca.pem}\n", 1)
	path := writeConfig(t, cfgText)
	if _, err := serve.LoadConfig(path); err == nil || !strings.Contains(err.Error(), "certs/ca.pem") {
		t.Fatalf("LoadConfig without the CA file = %v, want a problem naming it", err)
	}
	dir := filepath.Join(filepath.Dir(path), "certs")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "ca.pem"), certPEM(srv.Certificate().Raw), 0o600)
	if _, err := serve.LoadConfig(path); err != nil {
		t.Fatalf("LoadConfig with the CA file beside the config: %v", err)
	}
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestHTTPToolsExampleConfig checks that examples/serve-http-tools.yaml
// loads and builds, given its environment variables.
func TestHTTPToolsExampleConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-example")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("SHOP_API_TOKEN", "shop-token")
	t.Setenv("TOOLGATE_WEBHOOK_SECRET", testHookSecret)
	fc, err := serve.LoadConfig("../examples/serve-http-tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fc.Store.SQLite = filepath.Join(t.TempDir(), "support.db") // not in the repository
	f := build(t, fc)
	if code, _ := f.raw("GET", "/v1/webhooks/deliveries", exampleApproverKey, ""); code != 200 {
		t.Errorf("delivery log: %d, want 200", code)
	}
	if fc.Agents["support"] == nil || len(fc.Agents["support"].HTTPTools) != 2 {
		t.Errorf("agents %v", fc.Agents)
	}
}
