package serve_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

func TestExampleConfig(t *testing.T) {
	fc, err := serve.LoadConfig("../examples/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if fc.Store.SQLite != ".toolgate-data/toolgate.db" {
		t.Fatalf("store.sqlite %q", fc.Store.SQLite)
	}
	fc.Store.SQLite = filepath.Join(t.TempDir(), "toolgate.db") // not in the repository
	f := build(t, fc)

	c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{"agent":"flights"}`)
	conv := c["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
	pause := out["pause"].(map[string]any)["id"].(string)
	if got := f.must(200, "GET", "/v1/inbox", exampleApproverKey, "")["pauses"].([]any); len(got) != 1 {
		t.Fatalf("approver's inbox: %v, want one pause", got)
	}
	body := `{"decisions":[{"key":"call_book","verdict":"allow"}]}`
	f.must(403, "POST", decisionsPath(conv, pause), exampleTravellerKey, body)
	out = f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, body)
	if out["status"] != "completed" || out["text"] != "VX205 is on time. Your seat on VX205 is booked." {
		t.Errorf("decision: %v", out)
	}
	f.must(401, "GET", "/v1/inbox", "example-unknown-key", "")
}

func TestConfigValid(t *testing.T) {
	fc, err := serve.LoadConfig(writeConfig(t, validConfig))
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
	out := f.must(200, "POST", "/v1/conversations/"+c["id"].(string)+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
}

func TestConfigInvalid(t *testing.T) {
	t.Setenv("TG_TEST_SET", "x")
	t.Setenv("TG_TEST_UNSET", "")
	t.Setenv("TG_TEST_KEY", strings.Repeat("ab", 32))
	tests := []struct {
		name      string
		old, new  string // validConfig with old replaced by new
		line, col int
		path      string
		message   string // a part of the problem's message
	}{
		{"unknown key", "\t\ttools: [flightStatus, bookFlight]\n", "\t\ttools: [flightStatus, bookFlight]\n\t\tcolour: blue\n", 6, 5, "agents.flights", `unknown key "colour"`},
		{"unknown top-level key", "store:\n", "stores:\n\tx: 1\nstore:\n", 14, 1, "", `unknown key "stores"`},
		{"wrong type: scalar for a list", "[flightStatus, bookFlight]", "flightStatus", 5, 12, "agents.flights.tools", "want a list"},
		{"wrong type: string for a boolean", "\t\t\ttools: [bookFlight]\n", "\t\t\ttools: [bookFlight]\n\t\t\tmetadata: yes\n", 8, 17, "agents.flights.confirmation.metadata", "want true or false"},
		{"wrong type: list for a string", "provider: scripted-demo", "provider: [scripted-demo]", 4, 17, "agents.flights.model.provider", "want a string"},
		{"wrong type: duration", "\tapi_keys:\n", "\toidc:\n\t\tissuer: i\n\t\taudience: a\n\t\tjwks_url: https://id.example.com/jwks\n\t\tclock_skew: often\n\tapi_keys:\n", 21, 17, "authentication.oidc.clock_skew", "want a duration"},
		{"bad enum", "provider: scripted-demo", "provider: scripted", 4, 17, "agents.flights.model.provider", `unknown provider "scripted"`},
		{"bad output mode", "\t\trequester_roles", "\t\tprivacy:\n\t\t\tenabled: true\n\t\t\tvault_key_env: TG_TEST_KEY\n\t\t\toutput: shout\n\t\trequester_roles", 13, 15, "agents.flights.privacy.output", `unknown output mode "shout"`},
		{"missing required: provider", "\t\t\tprovider: scripted-demo\n", "\t\t\tname: x\n", 4, 7, "agents.flights.model.provider", "required"},
		{"missing required: store", "store:\n\tsqlite: data/toolgate.db\n", "", 1, 1, "store", "required"},
		{"missing required: model name", "provider: scripted-demo", "provider: openai\n\t\t\tapi_key_env: TG_TEST_SET", 4, 7, "agents.flights.model.name", "required"},
		{"missing required: principal id", "{id: alice, roles: [traveller]}", "{roles: [traveller]}", 19, 18, "authentication.api_keys[0].principal.id", "required"},
		{"unknown tool", "[flightStatus, bookFlight]", "[flightStatus, bookFlight, launchRocket]", 5, 39, "agents.flights.tools[2]", `unknown tool "launchRocket"`},
		{"three approvers", "\t\t\t\troles: [approver]\n", "\t\t\t\troles: [approver]\n\t\t\t\tapprovers: 3\n", 14, 20, "agents.flights.approvals[0].approvers", "approvers 3: want 1 or 2"},
		{"sticky with two approvers", "\t\t\t\troles: [approver]\n", "\t\t\t\troles: [approver]\n\t\t\t\tapprovers: 2\n\t\t\t\tsticky_max: 30m\n", 15, 21, "agents.flights.approvals[0].sticky_max", "sticky_max with approvers 2"},
		{"bad sticky_max", "\t\t\t\troles: [approver]\n", "\t\t\t\troles: [approver]\n\t\t\t\tsticky_max: long\n", 14, 21, "agents.flights.approvals[0].sticky_max", "want a duration"},
		{"unknown tool in a rule", "\t\t\t- tools: [bookFlight]\n", "\t\t\t- tools: [cancelFlight]\n", 12, 17, "agents.flights.approvals[0].tools[0]", `"cancelFlight" is not one of the agent's tools`},
		{"missing env var", "provider: scripted-demo", "provider: openai\n\t\t\tname: gpt-4.1-mini\n\t\t\tapi_key_env: TG_TEST_UNSET", 6, 20, "agents.flights.model.api_key_env", "TG_TEST_UNSET is not set"},
		{"missing env var for postgres", "\tsqlite: data/toolgate.db\n", "\tpostgres_url_env: TG_TEST_UNSET\n", 15, 21, "store.postgres_url_env", "TG_TEST_UNSET is not set"},
		{"bad hash", "sha256: 84f71c9a", "sha256: zz71c9a", 18, 15, "authentication.api_keys[0].sha256", "not a hex-encoded SHA-256"},
		{"missing policy file", "cedar: policies.cedar", "cedar: nowhere.cedar", 9, 14, "agents.flights.authorization.cedar", "cannot read the policies"},
		{"duplicate key", "\t\ttools: [flightStatus, bookFlight]\n", "\t\ttools: [flightStatus, bookFlight]\n\t\ttools: [flightStatus]\n", 6, 5, "agents.flights.tools", "appears twice"},
		{"negative pause_ttl", "store:\n", "pause_ttl: -5m\nstore:\n", 14, 12, "pause_ttl", "must not be negative"},
		{"negative idempotency_ttl", "store:\n", "idempotency_ttl: -5m\nstore:\n", 14, 18, "idempotency_ttl", "must not be negative"},
		{"negative concurrency", "\t\trequester_roles", "\t\tconcurrency: -1\n\t\trequester_roles", 10, 18, "agents.flights.concurrency", "must not be negative"},
		{"pause_ttl not a duration", "\t\trequester_roles", "\t\tpause_ttl: soon\n\t\trequester_roles", 10, 16, "agents.flights.pause_ttl", "want a duration"},
		{"reveal roles without privacy", "\t\trequester_roles: [traveller]\n", "\t\treveal_roles: [auditor]\n\t\trequester_roles: [traveller]\n", 10, 19, "agents.flights.reveal_roles", "need privacy.enabled"},
		{"missing env var for the audit digest key", "store:\n", "audit:\n\tdigest_key_env: TG_TEST_UNSET\nstore:\n", 15, 19, "audit.digest_key_env", "TG_TEST_UNSET is not set"},
		{"bad audit digest key", "store:\n", "audit:\n\tdigest_key_env: TG_TEST_SET\nstore:\n", 15, 19, "audit.digest_key_env", "want 32 bytes"},
		{"YAML syntax", "\t\ttools: [flightStatus, bookFlight]\n", "\t\ttools: [flightStatus, bookFlight\n", 0, 0, "", "line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(validConfig, tt.old) {
				t.Fatalf("%q is not in the valid config", tt.old)
			}
			path := writeConfig(t, strings.Replace(validConfig, tt.old, tt.new, 1))
			_, err := serve.LoadConfig(path)
			var ce *serve.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			for _, p := range ce.Problems {
				if p.Line == tt.line && p.Column == tt.col && p.Path == tt.path && strings.Contains(p.Message, tt.message) {
					if tt.line > 0 {
						if pos := fmt.Sprintf("%s:%d:%d: ", path, tt.line, tt.col); !strings.Contains(err.Error(), pos) {
							t.Errorf("error %q does not name %s", err, pos)
						}
					}
					return
				}
			}
			t.Errorf("got problems %+v, want one at %d:%d, path %q, saying %q", ce.Problems, tt.line, tt.col, tt.path, tt.message)
		})
	}
}

func TestConfigPauseTTL(t *testing.T) {
	for _, tt := range []struct {
		name     string
		file     string // inserted before "store:"
		agent    string // inserted before the agent's requester_roles
		want     time.Duration
		expiring bool
	}{
		{name: "file-wide", file: "pause_ttl: 45m\n", want: 45 * time.Minute, expiring: true},
		{name: "agent overrides", file: "pause_ttl: 45m\n", agent: "\t\tpause_ttl: 2h\n", want: 2 * time.Hour, expiring: true},
		{name: "agent never expires", file: "pause_ttl: 45m\n", agent: "\t\tpause_ttl: -1s\n"},
		{name: "unset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(validConfig, "store:\n", tt.file+"store:\n", 1)
			text = strings.Replace(text, "\t\trequester_roles", tt.agent+"\t\trequester_roles", 1)
			fc, err := serve.LoadConfig(writeConfig(t, text))
			if err != nil {
				t.Fatal(err)
			}
			f := build(t, fc)
			c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
			out := f.must(200, "POST", "/v1/conversations/"+c["id"].(string)+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
			pause, _ := out["pause"].(map[string]any)
			if pause == nil {
				t.Fatalf("turn: %v, want a pause", out)
			}
			exp, ok := pause["expires_at"].(string)
			if ok != tt.expiring {
				t.Fatalf("expires_at = %v, want one: %v", pause["expires_at"], tt.expiring)
			}
			if !ok {
				return
			}
			created, err1 := time.Parse(time.RFC3339Nano, pause["created_at"].(string))
			expires, err2 := time.Parse(time.RFC3339Nano, exp)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			if got := expires.Sub(created); got != tt.want {
				t.Errorf("expires_at - created_at = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigListsAllProblems(t *testing.T) {
	text := strings.NewReplacer(
		"provider: scripted-demo", "provider: scripted",
		"[flightStatus, bookFlight]", "[flightStatus, bookFlight, launchRocket]",
		"sha256: 84f71c9a", "sha256: zz",
	).Replace(validConfig)
	_, err := serve.LoadConfig(writeConfig(t, text))
	var ce *serve.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *ConfigError", err)
	}
	var got []string
	for _, p := range ce.Problems {
		got = append(got, fmt.Sprintf("%d:%d %s", p.Line, p.Column, p.Path))
	}
	want := "[4:17 agents.flights.model.provider 5:39 agents.flights.tools[2] 18:15 authentication.api_keys[0].sha256]"
	if fmt.Sprint(got) != want {
		t.Errorf("problems %v, want %s", got, want)
	}
}

func TestBuildReportsPolicyPosition(t *testing.T) {
	path := writeConfig(t, validConfig)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "policies.cedar"), []byte("permit (principal"), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := serve.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = serve.Build(context.Background(), fc, nil)
	var ce *serve.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 {
		t.Fatalf("got %v, want a *ConfigError with one problem", err)
	}
	if p := ce.Problems[0]; p.Line != 9 || p.Column != 14 || p.Path != "agents.flights.authorization.cedar" {
		t.Errorf("problem %+v, want at 9:14 agents.flights.authorization.cedar", p)
	}
}

// TestConfigPostgres builds the service on the PostgreSQL store named by
// TOOLGATE_POSTGRES_URL, in a schema of its own, and takes a turn through a
// pause. Without the variable it is skipped, except in CI, where it fails.
func TestConfigPostgres(t *testing.T) {
	_, schema := pgtest.Schema(t, "toolgate_config_test_")
	text := strings.Replace(validConfig, "\tsqlite: data/toolgate.db\n", "\tpostgres_url_env: TOOLGATE_POSTGRES_URL\n\tpostgres_schema: "+schema+"\n", 1)
	fc, err := serve.LoadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
	conv := c["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
	pause := out["pause"].(map[string]any)["id"].(string)
	out = f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	if out["status"] != "completed" {
		t.Errorf("decision: %v", out)
	}
}

// TestConfigPrivacy builds an agent with the privacy guard, its vaults in
// the store: a turn with personal data pauses and completes, and no
// response shows the data.
func TestConfigPrivacy(t *testing.T) {
	t.Setenv("TG_TEST_VAULT_KEY", strings.Repeat("5a", 32))
	text := strings.Replace(validConfig, "\t\trequester_roles", "\t\tprivacy:\n\t\t\tenabled: true\n\t\t\tvault_key_env: TG_TEST_VAULT_KEY\n\t\t\tdisclosures:\n\t\t\t\tbookFlight: [EMAIL_ADDRESS]\n\t\t\toutput: tokens\n\t\trequester_roles", 1)
	fc, err := serve.LoadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
	conv := c["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.PrivateInput+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
	if s := fmt.Sprint(out); strings.Contains(s, "ada.lovelace@example.com") || strings.Contains(s, "4111") {
		t.Errorf("the paused turn shows personal data: %s", s)
	}
	pause := out["pause"].(map[string]any)["id"].(string)
	out = f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	if out["status"] != "completed" || !strings.Contains(fmt.Sprint(out["text"]), "[EMAIL_ADDRESS_1]") {
		t.Errorf("decision: %v, want a completed turn naming the e-mail token", out)
	}
}

func TestBuildChecksHandBuiltConfig(t *testing.T) {
	_, _, err := serve.Build(context.Background(), &serve.FileConfig{Store: serve.StoreSpec{SQLite: filepath.Join(t.TempDir(), "x.db")}}, nil)
	var ce *serve.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *ConfigError", err)
	}
	var paths []string
	for _, p := range ce.Problems {
		paths = append(paths, p.Path)
	}
	if want := "[agents authentication]"; fmt.Sprint(paths) != want {
		t.Errorf("problems at %v, want %s", paths, want)
	}
}

func TestConfigIdentitySources(t *testing.T) {
	text := strings.Replace(validConfig, "store:\n", "identity_sources:\n\tapi_keys:\n\t\tcase_insensitive: true\n\thttps://idp.example:\n\t\tcase_insensitive: false\nstore:\n", 1)
	fc, err := serve.LoadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeStore, err := serve.Build(t.Context(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore() })
	want := map[string]server.IdentitySource{server.APIKeysSource: {CaseInsensitive: true}, "https://idp.example": {}}
	if diff := cmp.Diff(want, cfg.IdentitySources); diff != "" {
		t.Errorf("IdentitySources (-want +got):\n%s", diff)
	}

	bad := strings.Replace(validConfig, "store:\n", "identity_sources:\n\tapi_keys:\n\t\tcase_insensitve: true\nstore:\n", 1)
	if _, err := serve.LoadConfig(writeConfig(t, bad)); err == nil || !strings.Contains(err.Error(), "case_insensitve") {
		t.Errorf("a misspelt member: %v, want an error naming it", err)
	}
}
