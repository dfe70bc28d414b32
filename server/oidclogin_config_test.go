package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/server"
)

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
	fc, err := server.LoadConfig(writeConfig(t, loginConfigText(p.issuer)))
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

// TestConfigOIDCLoginSecretMissing checks that the client secret's
// variable must be set.
func TestConfigOIDCLoginSecretMissing(t *testing.T) {
	t.Setenv("TG_LOGIN_SECRET", "")
	_, err := server.LoadConfig(writeConfig(t, loginConfigText("https://id.example.com")))
	checkProblem(t, err, 22, 26, "authentication.oidc.login.client_secret_env", "TG_LOGIN_SECRET is not set")
}

func TestConfigOIDCLoginInvalid(t *testing.T) {
	t.Setenv("TG_LOGIN_SECRET", "x")
	for _, tt := range []struct {
		name, old, new string
		line, col      int
		path, message  string
	}{
		{"no client id", "\t\t\tclient_id: toolgate-pages\n", "", 21, 7, "authentication.oidc.login.client_id", "required"},
		{"no redirect URL", "\t\t\tredirect_url: http://toolgate.test/signin/oidc/callback\n", "", 21, 7, "authentication.oidc.login.redirect_url", "required"},
		{"redirect URL not http", "http://toolgate.test/signin/oidc/callback", "ftp://toolgate.test/signin/oidc/callback", 23, 21, "authentication.oidc.login.redirect_url", "not an http or https URL"},
		{"redirect URL elsewhere", "http://toolgate.test/signin/oidc/callback", "http://toolgate.test/callback", 23, 21, "authentication.oidc.login.redirect_url", "want the address of /signin/oidc/callback"},
		{"scope with a space", "[openid, email]", `[openid, "email profile"]`, 24, 24, "authentication.oidc.login.scopes[1]", "not a scope token"},
		{"unknown key", "\t\t\tprovider_name: Fake ID\n", "\t\t\tclient_secret: hunter2\n", 25, 7, "authentication.oidc.login", `unknown key "client_secret"`},
		{"issuer not a URL", "issuer: ISSUER", "issuer: id.example.com", 18, 13, "authentication.oidc.issuer", "needs an http or https URL"},
		{"no issuer", "\t\tissuer: ISSUER\n", "", 18, 5, "authentication.oidc.issuer", "required"},
		{"audience without jwks_url", "\t\troles_claim: groups\n", "\t\troles_claim: groups\n\t\taudience: toolgate\n", 18, 5, "authentication.oidc.jwks_url", "required"},
		{"login not a mapping", "\t\tlogin:\n", "\t\tlogin: yes\n\t\tx:\n", 20, 12, "authentication.oidc.login", "want a mapping"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(loginBlock, tt.old) {
				t.Fatalf("%q is not in the login block", tt.old)
			}
			text := strings.Replace(strings.Replace(loginBlock, tt.old, tt.new, 1), "ISSUER", "https://id.example.com", 1)
			_, err := server.LoadConfig(writeConfig(t, strings.Replace(validConfig, "authentication:\n", text, 1)))
			checkProblem(t, err, tt.line, tt.col, tt.path, tt.message)
		})
	}
}

// checkProblem checks that err is a *ConfigError with the problem.
func checkProblem(t *testing.T, err error, line, col int, path, message string) {
	t.Helper()
	var ce *server.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *ConfigError", err)
	}
	for _, p := range ce.Problems {
		if p.Line == line && p.Column == col && p.Path == path && strings.Contains(p.Message, message) {
			return
		}
	}
	t.Errorf("got problems %+v, want one at %d:%d, path %q, saying %q", ce.Problems, line, col, path, message)
}
