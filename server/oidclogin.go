package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/toolgate/toolgate/internal/confcheck"
	"github.com/toolgate/toolgate/internal/logcap"
)

// Sign-in to the web pages through an OpenID Connect provider: the
// authorization-code flow with PKCE (RFC 7636).
//
//  1. GET /signin/oidc?next=PATH sets the login cookie, which holds a
//     fresh state, nonce and PKCE verifier, sealed with a key only this
//     process knows, and redirects to the provider's authorization
//     endpoint with the state, the nonce and the verifier's challenge.
//  2. The provider signs the person in and redirects the browser to
//     GET /signin/oidc/callback?code=...&state=... The state must be the
//     login cookie's; the code is exchanged for an ID token with the
//     verifier; the ID token is verified (signature, issuer, audience =
//     client id, expiry) and must carry the cookie's nonce. Its claims
//     become a principal as a bearer token's do ([OIDC]), and the browser
//     gets the session cookie of a sign-in with an API key.
//
// The login cookie is used once: every callback clears it.

// OIDCLogin configures sign-in to the web pages through an OpenID Connect
// provider ([Config.OIDCLogin]). The provider's endpoints and keys are
// discovered from Issuer + "/.well-known/openid-configuration" when the
// first browser signs in (and again after a failure), not by [New].
type OIDCLogin struct {
	// Issuer is the provider's issuer URL, the "iss" of its ID tokens.
	// Required.
	Issuer string
	// ClientID is the client id the provider registered the service
	// under; ID tokens must be for this audience. Required.
	ClientID string
	// ClientSecret is the client's secret. "": a public client, which
	// PKCE alone protects.
	ClientSecret string
	// RedirectURL is the address of GET /signin/oidc/callback as browsers
	// reach it, such as "https://toolgate.example.com/signin/oidc/callback";
	// it must be registered with the provider. When it is https, the login
	// cookie is Secure even if TLS ends in front of the server. Required.
	RedirectURL string
	// Scopes are the scopes asked for; "openid" is added when missing.
	// nil: "openid", "profile" and "email".
	Scopes []string
	// ProviderName names the provider on the sign-in page: "Sign in with
	// ProviderName". "": the issuer's host.
	ProviderName string
	// RolesClaim, ClockSkew and Algorithms map and check the ID token's
	// claims as [OIDCOptions] do for bearer tokens; their zero values mean
	// the same.
	RolesClaim string
	ClockSkew  time.Duration
	Algorithms []string
	// HTTPClient talks to the provider (discovery, keys, token exchange).
	// nil: a client with a 10-second timeout.
	HTTPClient *http.Client
	// Now returns the current time. nil: [time.Now].
	Now func() time.Time
}

// loginCookie is the name of the cookie that carries a sign-in through the
// provider, sent only to the paths under /signin/oidc.
const loginCookie = "toolgate_oidc_login"

// loginTTL is how long a browser has to come back from the provider.
const loginTTL = 10 * time.Minute

// maxLoginCookie bounds the length of a login cookie's value the server
// tries to open; the ones it seals are about 300 bytes.
const maxLoginCookie = 2048

// loginCallbackPath is the path of [OIDCLogin.RedirectURL].
const loginCallbackPath = confcheck.LoginCallbackPath

// clone returns a copy of l; nil for nil.
func (l *OIDCLogin) clone() *OIDCLogin {
	if l == nil {
		return nil
	}
	c := *l
	c.Scopes = slices.Clone(l.Scopes)
	c.Algorithms = slices.Clone(l.Algorithms)
	return &c
}

// problems returns what is wrong with l; none for nil.
func (l *OIDCLogin) problems() []error {
	if l == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("oidc login: "+format, args...))
	}
	if !confcheck.HTTPURL(l.Issuer) {
		bad("issuer %q is not an http or https URL", l.Issuer)
	}
	if l.ClientID == "" {
		bad("no client id")
	}
	if msg := confcheck.RedirectProblem(l.RedirectURL); msg != "" {
		bad("redirect URL %q: %s", l.RedirectURL, msg)
	}
	for _, sc := range l.Scopes {
		if msg := confcheck.ScopeProblem(sc); msg != "" {
			bad("scope %q: %s", sc, msg)
		}
	}
	for _, a := range l.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			bad("algorithm %q is not accepted (want one of %s)", a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	if l.Algorithms != nil && len(l.Algorithms) == 0 {
		bad("no algorithms")
	}
	return errs
}

// oidcLogin runs the login flow. It is safe for concurrent use.
type oidcLogin struct {
	// fixed at creation
	cfg  *OIDCLogin
	name string // on the sign-in button
	hc   *http.Client
	// secret returns the key of the seal, shared by every instance on the
	// store's database, so that a sign-in started on one instance ends on
	// any other.
	secret func(context.Context) ([]byte, error)
	mapper *OIDC // maps the ID token's claims; its key set is unused
	now    func() time.Time
	secure bool // the login cookie is Secure even without TLS
	// signedIn is the page that leads a browser on after the callback.
	signedIn *template.Template

	mu       sync.Mutex
	seal     cipher.AEAD           // guarded by mu: seals the login cookies; nil until [oidcLogin.ready]
	provider *oidc.Provider        // guarded by mu; nil until discovered
	verifier *oidc.IDTokenVerifier // guarded by mu
	oauth    *oauth2.Config        // guarded by mu
}

// initOIDCLogin sets up the login flow and registers its pages when
// [Config.OIDCLogin] is set.
func (s *Server) initOIDCLogin() {
	cfg := s.cfg.OIDCLogin
	if cfg == nil {
		return
	}
	// validate has checked the configuration: the issuer and the redirect
	// URL parse, the algorithms are accepted.
	issuer, _ := url.Parse(cfg.Issuer)
	redirect, _ := url.Parse(cfg.RedirectURL)
	// The mapper only maps verified claims (principal): go-oidc's verifier
	// checks the signatures, so the mapper's key set, at a URL that is
	// never fetched, stays unused.
	mapper, err := NewOIDC(&OIDCOptions{Issuer: cfg.Issuer, Audience: cfg.ClientID, JWKSURL: cfg.Issuer,
		RolesClaim: cfg.RolesClaim, ClockSkew: cfg.ClockSkew, Algorithms: cfg.Algorithms, HTTPClient: cfg.HTTPClient, Now: cfg.Now})
	if err != nil {
		panic(fmt.Sprintf("server: OIDC login options checked by validate: %v", err))
	}
	l := &oidcLogin{cfg: cfg, name: cfg.ProviderName, hc: cfg.HTTPClient, mapper: mapper, now: cfg.Now,
		secure: redirect.Scheme == "https"}
	l.secret = func(ctx context.Context) ([]byte, error) {
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh) // never fails
		return s.cfg.Records.SharedSecret(ctx, loginSealSecret, fresh)
	}
	if l.name == "" {
		l.name = issuer.Host
	}
	if l.hc == nil {
		l.hc = &http.Client{Timeout: 10 * time.Second}
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.signedIn = template.Must(template.ParseFS(webFiles, "web/templates/signedin.html"))
	s.web.login = l
	s.page("GET /signin/oidc", s.oidcSignIn)
	s.page("GET "+loginCallbackPath, s.oidcCallback)
}

// loginSealSecret names the shared secret that keys the login cookies'
// seal in the record store.
const loginSealSecret = "oidc login cookie seal"

// ready makes the seal of the login cookies, from the secret the store
// keeps, the first time; an error is the store's.
func (l *oidcLogin) ready(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seal != nil {
		return nil
	}
	key, err := l.secret(ctx)
	if err != nil {
		return err
	}
	if len(key) != 32 {
		return fmt.Errorf("server: the stored login seal key has %d bytes, not 32", len(key))
	}
	l.seal = aeadFor(key)
	return nil
}

// aead returns the seal of the login cookies, nil before [oidcLogin.ready].
func (l *oidcLogin) aead() cipher.AEAD {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal
}

// aeadFor returns AES-256-GCM under key, 32 bytes.
func aeadFor(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // a 32-byte key is valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // AES has a 16-byte block
	}
	return aead
}

// newLoginSeal returns the AEAD that seals login cookies, under a new
// random key: a login cookie is good only with the process that set it.
func newLoginSeal() cipher.AEAD {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails
	return aeadFor(key)
}

// discover returns the OAuth 2 configuration and the ID token verifier of
// the provider, fetching its discovery document the first time.
func (l *oidcLogin) discover(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.provider != nil {
		return l.oauth, l.verifier, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, l.hc), l.cfg.Issuer)
	if err != nil {
		return nil, nil, err
	}
	scopes := l.cfg.Scopes
	if scopes == nil {
		scopes = []string{"profile", "email"}
	}
	if !slices.Contains(scopes, oidc.ScopeOpenID) {
		scopes = append([]string{oidc.ScopeOpenID}, scopes...)
	}
	algs := l.cfg.Algorithms
	if algs == nil {
		algs = DefaultAlgorithms
	}
	l.provider = p
	l.oauth = &oauth2.Config{ClientID: l.cfg.ClientID, ClientSecret: l.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: l.cfg.RedirectURL, Scopes: scopes}
	l.verifier = p.Verifier(&oidc.Config{ClientID: l.cfg.ClientID, SupportedSigningAlgs: algs, Now: l.now})
	return l.oauth, l.verifier, nil
}

// loginState is what a login cookie carries, sealed.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"r"`
	Expires  int64  `json:"e"` // Unix seconds
}

// errLoginCookie is the error of a login cookie that cannot be used.
var errLoginCookie = errors.New("server: invalid or expired login cookie")

// sealCookie returns the login cookie's value for st: AES-GCM under the
// process's key, bound to the cookie's name, base64url-encoded.
func (l *oidcLogin) sealCookie(st *loginState) string {
	seal := l.aead()
	plain, _ := json.Marshal(st) // strings and a number
	nonce := make([]byte, seal.NonceSize(), seal.NonceSize()+len(plain)+seal.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(seal.Seal(nonce, nonce, plain, []byte(loginCookie)))
}

// openCookie returns the state sealed in a login cookie's value, or
// [errLoginCookie] when value was not sealed by this process, is
// malformed or has expired. value comes from the browser: anything may be
// in it.
func (l *oidcLogin) openCookie(value string) (*loginState, error) {
	if len(value) > maxLoginCookie {
		return nil, fmt.Errorf("%w: %d bytes", errLoginCookie, len(value))
	}
	seal := l.aead()
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) < seal.NonceSize()+seal.Overhead() {
		return nil, fmt.Errorf("%w: malformed", errLoginCookie)
	}
	ns := seal.NonceSize()
	plain, err := seal.Open(nil, b[:ns], b[ns:], []byte(loginCookie))
	if err != nil {
		return nil, fmt.Errorf("%w: not sealed by this server (or by an earlier run of it)", errLoginCookie)
	}
	var st loginState
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, fmt.Errorf("%w: %v", errLoginCookie, err)
	}
	if st.State == "" || st.Nonce == "" || st.Verifier == "" {
		return nil, fmt.Errorf("%w: incomplete", errLoginCookie)
	}
	if !l.now().Before(time.Unix(st.Expires, 0)) {
		return nil, fmt.Errorf("%w: expired", errLoginCookie)
	}
	st.Next = safeNext(st.Next)
	return &st, nil
}

// setLoginCookie sets (value != "") or clears the login cookie.
//
// It is SameSite=Lax, not Strict like the session cookie: the callback is
// a navigation from the provider's site, to which browsers send Lax
// cookies (on top-level GETs) but never Strict ones. Lax is safe here:
// the cookie only lets the browser that holds it finish the sign-in it
// started, and its path keeps it away from every other request.
func (l *oidcLogin) setLoginCookie(w http.ResponseWriter, r *http.Request, value string) {
	c := &http.Cookie{
		Name:     loginCookie,
		Value:    value,
		Path:     "/signin/oidc",
		MaxAge:   int(loginTTL.Seconds()),
		HttpOnly: true,
		Secure:   r.TLS != nil || l.secure,
		SameSite: http.SameSiteLaxMode,
	}
	if value == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// oidcSignIn starts a sign-in through the provider.
func (s *Server) oidcSignIn(w http.ResponseWriter, r *http.Request) {
	l := s.web.login
	next := safeNext(r.URL.Query().Get("next"))
	if s.sessionPrincipal(r) != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	oc, _, err := l.discover(r.Context())
	if err != nil {
		s.logger.ErrorContext(r.Context(), "server: OIDC sign-in: the provider's discovery document cannot be fetched", "issuer", l.cfg.Issuer, "err", logcap.Error(err))
		s.render(w, r, http.StatusBadGateway, "signin", &pageData{Title: "Sign in", Next: next,
			Error: l.name + " cannot be reached. Try again later, or sign in with an API key."})
		return
	}
	if err := l.ready(r.Context()); err != nil {
		s.internal(w, r, err)
		return
	}
	st := &loginState{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Next: next,
		Expires: l.now().Add(loginTTL).Unix()}
	l.setLoginCookie(w, r, l.sealCookie(st))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, oc.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce)), http.StatusSeeOther)
}

// errorCode matches the error codes of RFC 6749, 4.1.2.1, shown as they
// come; any other "error" parameter is not shown.
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// oidcCallback finishes a sign-in through the provider.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	l := s.web.login
	// The login cookie is good for one callback, whatever its outcome.
	l.setLoginCookie(w, r, "")
	next := "/"
	refuse := func(status int, msg, why string, err error) {
		s.logger.InfoContext(r.Context(), "server: OIDC sign-in refused: "+why, "err", logcap.Error(err))
		s.render(w, r, status, "signin", &pageData{Title: "Sign in", Next: next, Error: msg})
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		msg := l.name + " did not sign you in."
		if errorCode.MatchString(e) {
			msg = fmt.Sprintf("%s did not sign you in (%s).", l.name, e)
		}
		refuse(http.StatusUnauthorized, msg, "the provider answered with an error", errors.New(e))
		return
	}
	const restart = "This sign-in has expired or was started in another browser. Sign in again."
	c, err := r.Cookie(loginCookie)
	if err != nil {
		refuse(http.StatusBadRequest, restart, "no login cookie", err)
		return
	}
	if err := l.ready(r.Context()); err != nil {
		s.internal(w, r, err)
		return
	}
	st, err := l.openCookie(c.Value)
	if err != nil {
		refuse(http.StatusBadRequest, restart, "bad login cookie", err)
		return
	}
	next = st.Next
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1 {
		refuse(http.StatusBadRequest, restart, "the state is not the login cookie's", nil)
		return
	}
	code := q.Get("code")
	if code == "" {
		refuse(http.StatusBadRequest, "The answer of "+l.name+" holds no code. Sign in again.", "no code", nil)
		return
	}
	oc, verifier, err := l.discover(r.Context())
	if err != nil {
		s.logger.ErrorContext(r.Context(), "server: OIDC sign-in: the provider's discovery document cannot be fetched", "issuer", l.cfg.Issuer, "err", logcap.Error(err))
		s.render(w, r, http.StatusBadGateway, "signin", &pageData{Title: "Sign in", Next: next,
			Error: l.name + " cannot be reached. Try again later, or sign in with an API key."})
		return
	}
	ctx := oidc.ClientContext(r.Context(), l.hc)
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		refuse(http.StatusUnauthorized, l.name+" did not accept the sign-in. Sign in again.", "the code exchange failed", err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		refuse(http.StatusUnauthorized, l.name+" sent no ID token. Sign in again.", "no ID token", nil)
		return
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		refuse(http.StatusUnauthorized, "The ID token of "+l.name+" is not valid. Sign in again.", "bad ID token", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(st.Nonce)) != 1 {
		refuse(http.StatusUnauthorized, "The ID token of "+l.name+" is not for this sign-in. Sign in again.", "the nonce is not the login cookie's", nil)
		return
	}
	var claims json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		refuse(http.StatusUnauthorized, "The ID token of "+l.name+" is not valid. Sign in again.", "bad ID token claims", err)
		return
	}
	p, err := l.mapper.principal(claims)
	if err != nil {
		refuse(http.StatusUnauthorized, "The ID token of "+l.name+" is not valid. Sign in again.", "bad ID token claims", err)
		return
	}
	if !s.startSession(w, r, s.fromSource(p), nil) {
		return
	}
	// Not a redirect: the browser came from the provider's site, and a
	// redirect would carry that over to the next request, which browsers
	// then send without the SameSite=Strict session cookie. The page's
	// own refresh is a navigation from this site.
	var b strings.Builder
	if err := l.signedIn.Execute(&b, next); err != nil {
		s.internal(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
}
