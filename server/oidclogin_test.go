package server_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
)

const (
	loginClientID = "toolgate-pages"
	loginSecret   = "s3cret"
	loginRedirect = "http://toolgate.test/signin/oidc/callback"
)

// fakeProvider is an OpenID provider for the login flow: discovery, a
// JWKS with one RSA key, an authorization endpoint that signs "ada" in at
// once and a token endpoint that checks the client, the redirect URL and
// the PKCE verifier, and answers with an ID token. Its issuer is
// http://localhost:PORT, another site than the 127.0.0.1 of the servers
// under test.
type fakeProvider struct {
	t      *testing.T
	key    *rsa.PrivateKey
	other  *rsa.PrivateKey // a key the JWKS does not publish
	srv    *httptest.Server
	issuer string
	// page makes /authorize answer with a page holding an "Approve" link
	// to the callback, as a provider's sign-in page would, instead of a
	// redirect.
	page bool

	down     atomic.Bool // every endpoint answers 500
	tokenErr atomic.Bool // the token endpoint answers 500

	mu     sync.Mutex
	grants map[string]grant       // by code; guarded by mu
	claims func(c map[string]any) // changes the ID token's claims; guarded by mu
	signer *rsa.PrivateKey        // signs the ID token; nil: key; guarded by mu
	noID   bool                   // answer without an ID token; guarded by mu
	seen   []url.Values           // the token requests' forms; guarded by mu
}

// set changes what the token endpoint answers.
func (p *fakeProvider) set(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
}

// grant is what an authorization code stands for.
type grant struct {
	challenge, nonce, redirect string
}

// providerKeys are the fake providers' keys, made once.
var providerKeys = sync.OnceValue(func() (k struct {
	key, other *rsa.PrivateKey
	err        error
}) {
	if k.key, k.err = rsa.GenerateKey(rand.Reader, 2048); k.err == nil {
		k.other, k.err = rsa.GenerateKey(rand.Reader, 2048)
	}
	return k
})

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	keys := providerKeys()
	if keys.err != nil {
		t.Fatal(keys.err)
	}
	p := &fakeProvider{t: t, key: keys.key, other: keys.other, grants: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	p.issuer = strings.Replace(p.srv.URL, "127.0.0.1", "localhost", 1)
	return p
}

func (p *fakeProvider) discovery(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"issuer":                                p.issuer,
		"authorization_endpoint":                p.issuer + "/authorize",
		"token_endpoint":                        p.issuer + "/token",
		"jwks_uri":                              p.issuer + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *fakeProvider) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

func (p *fakeProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("response_type") != "code", q.Get("client_id") != loginClientID,
		q.Get("code_challenge_method") != "S256", q.Get("code_challenge") == "", q.Get("state") == "", q.Get("nonce") == "",
		!strings.Contains(" "+q.Get("scope")+" ", " openid "):
		http.Error(w, "bad authorization request: "+q.Encode(), http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.grants[code] = grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: q.Get("redirect_uri")}
	p.mu.Unlock()
	back := q.Get("redirect_uri") + "?" + url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	if p.page {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Fake provider</title><h1>Sign in to the fake provider</h1><a id="approve" href="%s">Approve</a>`, html.EscapeString(back))
		return
	}
	http.Redirect(w, r, back, http.StatusFound)
}

func (p *fakeProvider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := r.PostForm
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, f)
	oauthErr := func(status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	if p.tokenErr.Load() {
		http.Error(w, "token endpoint down", http.StatusInternalServerError)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	if id != loginClientID || secret != loginSecret {
		oauthErr(http.StatusUnauthorized, "invalid_client")
		return
	}
	g, ok := p.grants[f.Get("code")]
	delete(p.grants, f.Get("code")) // a code is good once
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	if !ok || f.Get("grant_type") != "authorization_code" || f.Get("redirect_uri") != g.redirect ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		oauthErr(http.StatusBadRequest, "invalid_grant")
		return
	}
	now := time.Now()
	c := map[string]any{
		"iss": p.issuer, "aud": loginClientID, "sub": "ada", "nonce": g.nonce,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "roles": []string{"traveller"},
	}
	if p.claims != nil {
		p.claims(c)
	}
	key := p.signer
	if key == nil {
		key = p.key
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		p.t.Error(err)
		return
	}
	idToken, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		p.t.Error(err)
		return
	}
	out := map[string]any{"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 3600}
	if !p.noID {
		out["id_token"] = idToken
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// loginConfig is the sign-in through p of the tests, with the clock now.
func loginConfig(p *fakeProvider, redirect string, now func() time.Time) *server.OIDCLogin {
	return &server.OIDCLogin{Issuer: p.issuer, ClientID: loginClientID, ClientSecret: loginSecret, RedirectURL: redirect,
		ProviderName: "Fake ID", Now: now}
}

// loginFixture is the flight agent with sign-in through p; its clock
// runs ahead of the real one by *ahead.
func loginFixture(t *testing.T, p *fakeProvider, ahead *atomic.Int64) *fixture {
	t.Helper()
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	return newFixtureWith(t, memory.New(), flightdemo.Model(), func(c *server.Config) {
		c.OIDCLogin = loginConfig(p, loginRedirect, now)
	})
}

// cookieNamed returns the cookie name rec sets, or nil.
func cookieNamed(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// beginLogin starts a sign-in as a browser would: it returns the login
// cookie and the query of the authorization request.
func beginLogin(t *testing.T, h http.Handler, next string) (*http.Cookie, url.Values) {
	t.Helper()
	rec := webRequest(h, "GET", "/signin/oidc?next="+url.QueryEscape(next), "", nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("GET /signin/oidc: status %d, want 303\n%s", rec.Code, rec.Body)
	}
	c := cookieNamed(rec, "toolgate_oidc_login")
	if c == nil || c.Value == "" {
		t.Fatalf("GET /signin/oidc: no login cookie in %v", rec.Result().Header["Set-Cookie"])
	}
	loc, err := url.Parse(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return c, loc.Query()
}

// noRedirects is a client that does not follow redirects.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// approve asks p's authorization endpoint for a code with the
// authorization request q, as the browser would; it returns the query of
// the callback it is sent back to.
func (p *fakeProvider) approve(q url.Values) url.Values {
	p.t.Helper()
	resp, err := noRedirects.Get(p.srv.URL + "/authorize?" + q.Encode())
	if err != nil {
		p.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		p.t.Fatalf("GET /authorize: %s", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		p.t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != q.Get("redirect_uri") {
		p.t.Fatalf("sent back to %s, want %s", got, q.Get("redirect_uri"))
	}
	return loc.Query()
}

// callback returns the answer to the browser coming back from the
// provider with the query cq and the login cookie c (if not nil).
func callback(h http.Handler, cq url.Values, c *http.Cookie) *httptest.ResponseRecorder {
	return webRequest(h, "GET", "/signin/oidc/callback?"+cq.Encode(), "", c)
}

func TestOIDCLogin(t *testing.T) {
	p := newFakeProvider(t)
	f := loginFixture(t, p, new(atomic.Int64))

	rec := webRequest(f.h, "GET", "/signin?next=/inbox", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `href="/signin/oidc?next=%2finbox"`) ||
		!strings.Contains(rec.Body.String(), "Sign in with Fake ID") {
		t.Fatalf("GET /signin: status %d, want 200 with the button\n%s", rec.Code, rec.Body)
	}

	login, q := beginLogin(t, f.h, "/inbox")
	if diff := cmp.Diff(&http.Cookie{Name: "toolgate_oidc_login", Path: "/signin/oidc", MaxAge: 600, HttpOnly: true, SameSite: http.SameSiteLaxMode},
		&http.Cookie{Name: login.Name, Path: login.Path, MaxAge: login.MaxAge, HttpOnly: login.HttpOnly, Secure: login.Secure, SameSite: login.SameSite}); diff != "" {
		t.Errorf("login cookie (-want +got):\n%s", diff)
	}
	for k, want := range map[string]string{"response_type": "code", "client_id": loginClientID, "redirect_uri": loginRedirect,
		"scope": "openid profile email", "code_challenge_method": "S256"} {
		if got := q.Get(k); got != want {
			t.Errorf("authorization request: %s = %q, want %q", k, got, want)
		}
	}
	if len(q.Get("state")) < 20 || len(q.Get("nonce")) < 20 || len(q.Get("code_challenge")) != 43 || q.Get("state") == q.Get("nonce") {
		t.Errorf("authorization request: state %q, nonce %q, code_challenge %q: want fresh random values", q.Get("state"), q.Get("nonce"), q.Get("code_challenge"))
	}
	if strings.Contains(login.Value, q.Get("state")) || strings.Contains(login.Value, q.Get("nonce")) {
		t.Errorf("the login cookie %q shows its state or nonce: want them sealed", login.Value)
	}

	rec = callback(f.h, p.approve(q), login)
	if rec.Code != http.StatusOK {
		t.Fatalf("callback: status %d, want 200\n%s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	if !strings.Contains(body, `<meta http-equiv="refresh" content="0; url=/inbox">`) || !strings.Contains(body, `href="/inbox"`) {
		t.Errorf("callback page: want a refresh to /inbox\n%s", body)
	}
	if c := cookieNamed(rec, "toolgate_oidc_login"); c == nil || c.MaxAge >= 0 {
		t.Errorf("callback: login cookie %v, want it cleared", c)
	}
	session := cookieNamed(rec, "toolgate_session")
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" {
		t.Fatalf("callback: session cookie %v, want the one of an API-key sign-in", session)
	}
	p.mu.Lock()
	verifier := p.seen[0].Get("code_verifier")
	p.mu.Unlock()
	if len(verifier) < 43 || strings.Contains(login.Value, verifier) {
		t.Errorf("code_verifier %q: want 43+ characters, sealed in the cookie", verifier)
	}

	// The session is the principal of the ID token, as a bearer token's.
	rec = webRequest(f.h, "GET", "/inbox", "", session)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<strong id="user">ada</strong> <span class="roles">(traveller)</span>`) {
		t.Fatalf("GET /inbox: status %d, want 200 as ada (traveller)\n%s", rec.Code, rec.Body)
	}
	code, out := f.doCookie("POST", "/v1/conversations", session, `{"agent":"flights"}`)
	if code != http.StatusCreated || out["owner"] != "ada" {
		t.Errorf("POST /v1/conversations with the session: %d %v, want 201 owned by ada", code, out)
	}
}

func TestOIDCLoginNext(t *testing.T) {
	p := newFakeProvider(t)
	f := loginFixture(t, p, new(atomic.Int64))
	for next, want := range map[string]string{
		"/conversations/c1?x=1": "/conversations/c1?x=1",
		"//evil.example.com/":   "/",
		"https://evil.example/": "/",
		"/\\evil.example.com":   "/",
	} {
		login, q := beginLogin(t, f.h, next)
		rec := callback(f.h, p.approve(q), login)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="continue" href="`+html.EscapeString(want)+`"`) {
			t.Errorf("next %q: status %d, want 200 leading to %q\n%s", next, rec.Code, want, rec.Body)
		}
	}
}

func TestOIDCLoginSecureCookie(t *testing.T) {
	p := newFakeProvider(t)
	f := newFixtureWith(t, memory.New(), flightdemo.Model(), func(c *server.Config) {
		c.OIDCLogin = loginConfig(p, "https://toolgate.example.com/signin/oidc/callback", nil)
	})
	login, _ := beginLogin(t, f.h, "/")
	if !login.Secure {
		t.Errorf("with an https redirect URL, the login cookie is not Secure")
	}
}

// TestOIDCLoginRefused runs the callbacks that must not sign anybody in.
func TestOIDCLoginRefused(t *testing.T) {
	type step struct {
		cq     url.Values
		cookie *http.Cookie
	}
	for _, tc := range []struct {
		name string
		// setup returns the callback to send; it may change the provider.
		setup  func(t *testing.T, p *fakeProvider, h http.Handler, ahead *atomic.Int64) step
		status int
		msg    string
	}{
		{"provider error", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			return step{url.Values{"error": {"access_denied"}, "error_description": {"<b>no</b>"}, "state": {q.Get("state")}}, login}
		}, 401, "Fake ID did not sign you in (access_denied)."},
		{"provider error not a code", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			return step{url.Values{"error": {"<script>alert(1)</script>"}, "state": {q.Get("state")}}, login}
		}, 401, "Fake ID did not sign you in."},
		{"no login cookie", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			_, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), nil}
		}, 400, "This sign-in has expired or was started in another browser."},
		{"expired login cookie", func(t *testing.T, p *fakeProvider, h http.Handler, ahead *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			cq := p.approve(q)
			ahead.Store(int64(10*time.Minute + time.Second))
			return step{cq, login}
		}, 400, "This sign-in has expired"},
		{"forged login cookie", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			b, _ := base64.RawURLEncoding.DecodeString(login.Value)
			b[len(b)-1] ^= 1
			return step{p.approve(q), &http.Cookie{Name: login.Name, Value: base64.RawURLEncoding.EncodeToString(b)}}
		}, 400, "This sign-in has expired"},
		{"login cookie of another server", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			other := loginFixture(t, p, new(atomic.Int64))
			login, _ := beginLogin(t, other.h, "/inbox")
			_, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 400, "This sign-in has expired"},
		{"state mismatch", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			cq := p.approve(q)
			cq.Set("state", rand.Text())
			return step{cq, login}
		}, 400, "This sign-in has expired or was started in another browser."},
		{"no state", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			cq := p.approve(q)
			cq.Del("state")
			return step{cq, login}
		}, 400, "This sign-in has expired"},
		{"another browser's callback", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			// The attacker's code and state, delivered to the victim's
			// browser: its login cookie has another state.
			victim, _ := beginLogin(t, h, "/inbox")
			_, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), victim}
		}, 400, "This sign-in has expired"},
		{"no code", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			cq := p.approve(q)
			cq.Del("code")
			return step{cq, login}
		}, 400, "holds no code"},
		{"code_verifier mismatch", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			// A code issued for another sign-in's challenge, injected
			// with this sign-in's state.
			login, q := beginLogin(t, h, "/inbox")
			_, q2 := beginLogin(t, h, "/inbox")
			q2.Set("state", q.Get("state"))
			return step{p.approve(q2), login}
		}, 401, "Fake ID did not accept the sign-in."},
		{"unknown code", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			cq := p.approve(q)
			cq.Set("code", "guessed")
			return step{cq, login}
		}, 401, "Fake ID did not accept the sign-in."},
		{"token endpoint down", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			login, q := beginLogin(t, h, "/inbox")
			cq := p.approve(q)
			p.tokenErr.Store(true)
			return step{cq, login}
		}, 401, "Fake ID did not accept the sign-in."},
		{"no ID token", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.noID = true })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "Fake ID sent no ID token."},
		{"wrong nonce", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.claims = func(c map[string]any) { c["nonce"] = "another sign-in's" } })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "is not for this sign-in"},
		{"no nonce", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.claims = func(c map[string]any) { delete(c, "nonce") } })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "is not for this sign-in"},
		{"wrong audience", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.claims = func(c map[string]any) { c["aud"] = "another-client" } })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "The ID token of Fake ID is not valid."},
		{"wrong issuer", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.claims = func(c map[string]any) { c["iss"] = "https://evil.example.com" } })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "The ID token of Fake ID is not valid."},
		{"expired ID token", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() {
				p.claims = func(c map[string]any) {
					c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
					c["exp"] = time.Now().Add(-time.Hour).Unix()
				}
			})
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "The ID token of Fake ID is not valid."},
		{"signed by an unknown key", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.signer = p.other })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "The ID token of Fake ID is not valid."},
		{"no subject", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.claims = func(c map[string]any) { delete(c, "sub") } })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "The ID token of Fake ID is not valid."},
		{"roles not strings", func(t *testing.T, p *fakeProvider, h http.Handler, _ *atomic.Int64) step {
			p.set(func() { p.claims = func(c map[string]any) { c["roles"] = []any{"traveller", 7} } })
			login, q := beginLogin(t, h, "/inbox")
			return step{p.approve(q), login}
		}, 401, "The ID token of Fake ID is not valid."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakeProvider(t)
			ahead := new(atomic.Int64)
			f := loginFixture(t, p, ahead)
			st := tc.setup(t, p, f.h, ahead)
			rec := callback(f.h, st.cq, st.cookie)
			checkRefused(t, rec, tc.status, tc.msg)
		})
	}
}

// checkRefused checks that rec is the sign-in page with status and msg,
// signing nobody in.
func checkRefused(t *testing.T, rec *httptest.ResponseRecorder, status int, msg string) {
	t.Helper()
	body := rec.Body.String()
	_, alert, _ := strings.Cut(body, `role="alert" id="page-error">`)
	alert, _, _ = strings.Cut(alert, "</p>")
	if rec.Code != status || !strings.Contains(alert, html.EscapeString(msg)) || !strings.Contains(body, `id="signin"`) {
		t.Errorf("callback: status %d, want %d with %q on the sign-in page\n%s", rec.Code, status, msg, body)
	}
	if c := cookieNamed(rec, "toolgate_session"); c != nil {
		t.Errorf("callback: session cookie %v set: want nobody signed in", c)
	}
	if c := cookieNamed(rec, "toolgate_oidc_login"); c == nil || c.MaxAge >= 0 {
		t.Errorf("callback: login cookie %v, want it cleared", c)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>no</b>") {
		t.Errorf("callback: the provider's text is on the page\n%s", body)
	}
}

// TestOIDCLoginReplay sends a callback that signed a browser in again:
// without the login cookie (which the first answer cleared) and with it.
func TestOIDCLoginReplay(t *testing.T) {
	p := newFakeProvider(t)
	f := loginFixture(t, p, new(atomic.Int64))
	login, q := beginLogin(t, f.h, "/inbox")
	cq := p.approve(q)
	if rec := callback(f.h, cq, login); rec.Code != http.StatusOK || cookieNamed(rec, "toolgate_session") == nil {
		t.Fatalf("first callback: status %d, want 200 signed in\n%s", rec.Code, rec.Body)
	}
	checkRefused(t, callback(f.h, cq, nil), 400, "This sign-in has expired")
	// A copy of the cookie does not help: the provider takes a code once.
	checkRefused(t, callback(f.h, cq, login), 401, "Fake ID did not accept the sign-in.")
}

func TestOIDCLoginProviderDown(t *testing.T) {
	p := newFakeProvider(t)
	f := loginFixture(t, p, new(atomic.Int64))
	p.down.Store(true)
	rec := webRequest(f.h, "GET", "/signin/oidc?next=/inbox", "", nil)
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "Fake ID cannot be reached.") ||
		cookieNamed(rec, "toolgate_oidc_login") != nil {
		t.Fatalf("GET /signin/oidc with the provider down: status %d, want 502 with a message and no login cookie\n%s", rec.Code, rec.Body)
	}
	// Discovery is tried again once the provider is back.
	p.down.Store(false)
	login, q := beginLogin(t, f.h, "/inbox")
	if rec := callback(f.h, p.approve(q), login); rec.Code != http.StatusOK {
		t.Fatalf("callback after the provider came back: status %d\n%s", rec.Code, rec.Body)
	}
}

func TestOIDCLoginNotConfigured(t *testing.T) {
	f := newFixture(t, memory.New())
	rec := webRequest(f.h, "GET", "/signin", "", nil)
	if strings.Contains(rec.Body.String(), "oidc-signin") {
		t.Errorf("GET /signin without OIDC login shows the button\n%s", rec.Body)
	}
	for _, path := range []string{"/signin/oidc", "/signin/oidc/callback?code=x&state=y"} {
		if rec := webRequest(f.h, "GET", path, "", nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s without OIDC login: status %d, want 404", path, rec.Code)
		}
	}
	for _, r := range f.srv.PageRoutes() {
		if strings.Contains(r, "oidc") {
			t.Errorf("page %q without OIDC login", r)
		}
	}
}

func TestOIDCLoginConfigInvalid(t *testing.T) {
	good := func() *server.OIDCLogin {
		return &server.OIDCLogin{Issuer: "https://id.example.com", ClientID: "c", RedirectURL: "https://t.example.com/signin/oidc/callback"}
	}
	for _, tc := range []struct {
		name   string
		change func(l *server.OIDCLogin)
		want   string
	}{
		{"no issuer", func(l *server.OIDCLogin) { l.Issuer = "" }, `issuer "" is not an http or https URL`},
		{"no client id", func(l *server.OIDCLogin) { l.ClientID = "" }, "no client id"},
		{"no redirect URL", func(l *server.OIDCLogin) { l.RedirectURL = "" }, "required"},
		{"redirect elsewhere", func(l *server.OIDCLogin) { l.RedirectURL = "https://t.example.com/callback" }, "want the address of /signin/oidc/callback"},
		{"scope with a space", func(l *server.OIDCLogin) { l.Scopes = []string{"openid email"} }, "not a scope token"},
		{"symmetric algorithm", func(l *server.OIDCLogin) { l.Algorithms = []string{"HS256"} }, `algorithm "HS256" is not accepted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := good()
			tc.change(l)
			_, err := server.New(&server.Config{Agents: map[string]*server.Agent{"a": {Client: toolgate.NewClient(flightdemo.Model(), nil, nil)}}, OIDCLogin: l})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := server.New(&server.Config{Agents: map[string]*server.Agent{"a": {Client: toolgate.NewClient(flightdemo.Model(), nil, nil)}}, OIDCLogin: good()}); err != nil {
		t.Errorf("New with a valid login: %v", err)
	}
}

// TestOIDCLoginRoutesDocumented checks that docs/API.md lists the pages of
// the login flow, which only a server with [server.OIDCLogin] has.
func TestOIDCLoginRoutesDocumented(t *testing.T) {
	f := loginFixture(t, newFakeProvider(t), new(atomic.Int64))
	doc, err := readFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, r := range f.srv.PageRoutes() {
		if strings.Contains(r, "/signin/oidc") {
			n++
			if !strings.Contains(string(doc), "`"+r+"`") {
				t.Errorf("page %q is not in docs/API.md", r)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d pages of the login flow in %v, want 2", n, f.srv.PageRoutes())
	}
}
