package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// Servers built from configuration files (package serve), as
// toolgate serve builds them.

// The keys whose hashes examples/serve.yaml and validConfig hold.
const (
	exampleTravellerKey = "example-traveller-key"
	exampleApproverKey  = "example-approver-key"
)

// build loads and builds fc into a served fixture.
func build(t testing.TB, fc *serve.FileConfig) *fixture {
	t.Helper()
	cfg, closeStore, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeStore(); err != nil {
			t.Error(err)
		}
	})
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv}
}

// writeConfig writes text (tabs turned into two spaces) to a file in a new
// directory, with an empty Cedar policy file beside it, and returns the
// file's path.
func writeConfig(t testing.TB, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policies.cedar"), []byte(flightsPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "\t", "  ")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const flightsPolicy = `permit (principal in Role::"traveller", action, resource);`

// validConfig is a valid file; the table below breaks it line by line.
const validConfig = `agents:
	flights:
		model:
			provider: scripted-demo
		tools: [flightStatus, bookFlight]
		confirmation:
			tools: [bookFlight]
		authorization:
			cedar: policies.cedar
		requester_roles: [traveller]
		approvals:
			- tools: [bookFlight]
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

func TestConfigOIDC(t *testing.T) {
	is := newIssuer(t)
	text := strings.Replace(validConfig, "\tapi_keys:\n", "\toidc:\n\t\tissuer: "+testIssuer+"\n\t\taudience: "+testAudience+
		"\n\t\tjwks_url: "+is.srv.URL+"\n\t\tclock_skew: 87600h\n\tapi_keys:\n", 1)
	fc, err := serve.LoadConfig(writeConfig(t, text))
	if err != nil {
		t.Fatal(err)
	}
	if fc.Authentication.OIDC == nil || fc.Authentication.OIDC.JWKSURL != is.srv.URL {
		t.Fatalf("oidc %+v", fc.Authentication.OIDC)
	}
	f := build(t, fc)
	// The verifier runs on the real clock; the skew of ten years covers
	// the test tokens' times.
	f.must(201, "POST", "/v1/conversations", is.rs(claims()), `{}`)
	f.must(401, "POST", "/v1/conversations", is.rs(with(func(c map[string]any) { c["aud"] = "x" })), `{}`)
	f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
}

// loginBlock is authentication.oidc with a login, for validConfig.
const loginBlock = `authentication:
	oidc:
		issuer: ISSUER
		roles_claim: groups
		login:
			client_id: toolgate-pages
			client_secret_env: TG_LOGIN_SECRET
			redirect_url: http://toolgate.test/signin/oidc/callback
			scopes: [openid, email]
			provider_name: Fake ID
`

// loginConfigText is validConfig with sign-in through the provider at
// issuer.
func loginConfigText(issuer string) string {
	return strings.Replace(validConfig, "authentication:\n", strings.Replace(loginBlock, "ISSUER", issuer, 1), 1)
}

// TestConfigOIDCLogin signs in through the provider with a server built
// from a file.
func TestConfigOIDCLogin(t *testing.T) {
	t.Setenv("TG_LOGIN_SECRET", loginSecret)
	p := newFakeProvider(t)
	p.set(func() {
		p.claims = func(c map[string]any) {
			delete(c, "roles")
			c["groups"] = "approver auditor"
		}
	})
	fc, err := serve.LoadConfig(writeConfig(t, loginConfigText(p.issuer)))
	if err != nil {
		t.Fatal(err)
	}
	if o := fc.Authentication.OIDC; o == nil || o.Login == nil || o.Login.ClientID != loginClientID || o.Issuer != p.issuer {
		t.Fatalf("authentication.oidc: %+v", o)
	}
	f := build(t, fc)
	login, q := beginLogin(t, f.h, "/inbox")
	if got := q.Get("scope"); got != "openid email" {
		t.Errorf("scope %q, want %q", got, "openid email")
	}
	rec := callback(f.h, p.approve(q), login)
	session := cookieNamed(rec, "toolgate_session")
	if rec.Code != 200 || session == nil {
		t.Fatalf("callback: status %d, want 200 signed in\n%s", rec.Code, rec.Body)
	}
	rec = webRequest(f.h, "GET", "/inbox", "", session)
	if !strings.Contains(rec.Body.String(), `<strong id="user">ada</strong> <span class="roles">(approver, auditor)</span>`) {
		t.Errorf("GET /inbox: want ada with the roles of the groups claim\n%s", rec.Body)
	}
	// Without audience and jwks_url, bearer tokens are not accepted.
	f.must(401, "GET", "/v1/inbox", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "")
}

// mustRecords returns the record store kept beside the conversations of a
// SQL store.
func mustRecords(t testing.TB, s interface {
	Records(context.Context) (records.Store, error)
}) records.Store {
	t.Helper()
	rs, err := s.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestConfigDecisionBounds: the file's max_deny_message bounds deny
// messages.
func TestConfigDecisionBounds(t *testing.T) {
	fc, err := serve.LoadConfig("../examples/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fc.Store.SQLite = filepath.Join(t.TempDir(), "toolgate.db")
	fc.MaxDenyMessage = 5
	f := build(t, fc)
	conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{"agent":"flights"}`)["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
	pause := out["pause"].(map[string]any)["id"].(string)
	out = f.must(422, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_book","verdict":"deny","message":"too long"}]}`)
	if out["error"] != "message_too_long" {
		t.Errorf("%v, want message_too_long", out)
	}
}
