package serve_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/serve"
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

// TestConfigOIDCLoginSecretMissing checks that the client secret's
// variable must be set.
func TestConfigOIDCLoginSecretMissing(t *testing.T) {
	t.Setenv("TG_LOGIN_SECRET", "")
	_, err := serve.LoadConfig(writeConfig(t, loginConfigText("https://id.example.com")))
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
			_, err := serve.LoadConfig(writeConfig(t, strings.Replace(validConfig, "authentication:\n", text, 1)))
			checkProblem(t, err, tt.line, tt.col, tt.path, tt.message)
		})
	}
}

// checkProblem checks that err is a *ConfigError with the problem.
func checkProblem(t *testing.T, err error, line, col int, path, message string) {
	t.Helper()
	var ce *serve.ConfigError
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
