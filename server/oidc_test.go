package server_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
)

const (
	testIssuer   = "https://id.example.com/"
	testAudience = "toolgate"
)

// testNow is the verifiers' clock in these tests.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// issuer holds the signing keys of a test identity provider and serves
// the public ones as a JWKS.
type issuer struct {
	t       *testing.T
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	other   *rsa.PrivateKey // a key the JWKS does not publish
	srv     *httptest.Server
	fetches atomic.Int32
	fail    atomic.Bool // answer 500
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{t: t, rsa: rk, ec: ek, other: ok}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &rk.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		{Key: &ek.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
	}}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		if is.fail.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// claims are the claims of a valid token for the traveller ada.
func claims() map[string]any {
	return map[string]any{
		"iss":   testIssuer,
		"aud":   []string{testAudience, "other"},
		"sub":   "ada",
		"exp":   testNow.Add(time.Hour).Unix(),
		"nbf":   testNow.Add(-time.Minute).Unix(),
		"iat":   testNow.Add(-time.Minute).Unix(),
		"roles": []string{"traveller"},
	}
}

// sign returns c signed by key with alg and kid.
func (is *issuer) sign(alg jose.SignatureAlgorithm, key crypto.Signer, kid string, c map[string]any) string {
	is.t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		is.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return tok
}

func (is *issuer) rs(c map[string]any) string { return is.sign(jose.RS256, is.rsa, "rsa-1", c) }

// with returns the valid claims changed by f.
func with(f func(map[string]any)) map[string]any {
	c := claims()
	f(c)
	return c
}

// unsigned returns a token with header h, claims c and no signature.
func unsigned(h string, c map[string]any) string {
	b, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(h)) + "." + enc(b) + "."
}

// newOIDCServer returns the flight agent served with one API key and
// tokens of is, and the buffer its log goes to.
func newOIDCServer(t *testing.T, is *issuer, opts *server.OIDCOptions) (*fixture, *bytes.Buffer) {
	t.Helper()
	if opts == nil {
		opts = &server.OIDCOptions{}
	}
	o := *opts
	o.Issuer, o.Audience, o.JWKSURL, o.Now = testIssuer, testAudience, is.srv.URL+"/jwks", func() time.Time { return testNow }
	v, err := server.NewOIDC(&o)
	if err != nil {
		t.Fatal(err)
	}
	tools := &flightdemo.Tools{}
	var log bytes.Buffer
	srv, err := server.New(&server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         toolgate.NewClient(flightdemo.Model(), tools.Tools(), nil),
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys: []server.APIKey{{SHA256: server.HashAPIKey(travellerKey), Principal: toolgate.Principal{ID: "ada", Roles: []string{"traveller"}}}},
		Tokens:  v,
		Logger:  slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv, tools: tools}, &log
}

func TestOIDCTokens(t *testing.T) {
	is := newIssuer(t)
	f, _ := newOIDCServer(t, is, nil)
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hsToken, err := jwt.Signed(hs).Claims(claims()).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"valid RSA", is.rs(claims()), 201},
		{"valid ECDSA", is.sign(jose.ES256, is.ec, "ec-1", claims()), 201},
		{"API key", travellerKey, 201},
		{"audience as a string", is.rs(with(func(c map[string]any) { c["aud"] = testAudience })), 201},
		{"roles as a space-separated string", is.rs(with(func(c map[string]any) { c["roles"] = "guest traveller" })), 201},
		{"expired within the clock skew", is.rs(with(func(c map[string]any) { c["exp"] = testNow.Add(-30 * time.Second).Unix() })), 201},
		{"missing role", is.rs(with(func(c map[string]any) { c["roles"] = []string{"guest"} })), 403},
		{"no roles claim", is.rs(with(func(c map[string]any) { delete(c, "roles") })), 403},
		{"bad signature", is.sign(jose.RS256, is.other, "rsa-1", claims()), 401},
		{"tampered payload", tamper(is.rs(claims())), 401},
		{"expired", is.rs(with(func(c map[string]any) { c["exp"] = testNow.Add(-2 * time.Minute).Unix() })), 401},
		{"no expiry", is.rs(with(func(c map[string]any) { delete(c, "exp") })), 401},
		{"not yet valid", is.rs(with(func(c map[string]any) { c["nbf"] = testNow.Add(5 * time.Minute).Unix() })), 401},
		{"issued in the future", is.rs(with(func(c map[string]any) { c["iat"] = testNow.Add(5 * time.Minute).Unix() })), 401},
		{"wrong audience", is.rs(with(func(c map[string]any) { c["aud"] = "someone-else" })), 401},
		{"wrong issuer", is.rs(with(func(c map[string]any) { c["iss"] = "https://evil.example.com/" })), 401},
		{"no subject", is.rs(with(func(c map[string]any) { delete(c, "sub") })), 401},
		{"roles of the wrong type", is.rs(with(func(c map[string]any) { c["roles"] = 7 })), 401},
		{"unknown kid", is.sign(jose.RS256, is.other, "rsa-2", claims()), 401},
		{"alg none", unsigned(`{"alg":"none","typ":"JWT"}`, claims()), 401},
		{"alg none with a kid", unsigned(`{"alg":"none","kid":"rsa-1"}`, claims()), 401},
		{"HS256", hsToken, 401},
		{"garbage shaped like a JWT", "eyJhbGciOiJSUzI1NiJ9.e30.AAAA", 401},
		{"unknown API key", "tg_not_a_key", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.t = t
			code, out := f.do("POST", "/v1/conversations", tt.token, `{"agent":"flights"}`)
			if code != tt.want {
				t.Fatalf("status %d %v, want %d", code, out, tt.want)
			}
			if code == 201 && out["owner"] != "ada" {
				t.Errorf("owner %v, want ada", out["owner"])
			}
		})
	}
}

// tamper changes the subject in token's payload, keeping the signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	b = bytes.Replace(b, []byte(`"ada"`), []byte(`"eve"`), 1)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func TestOIDCRolesClaimPath(t *testing.T) {
	is := newIssuer(t)
	f, _ := newOIDCServer(t, is, &server.OIDCOptions{RolesClaim: "realm_access.roles"})
	tok := is.rs(with(func(c map[string]any) {
		c["roles"] = []string{"guest"}
		c["realm_access"] = map[string]any{"roles": []string{"traveller"}}
	}))
	f.must(201, "POST", "/v1/conversations", tok, `{"agent":"flights"}`)
	tok = is.rs(claims()) // roles only at the top level
	f.must(403, "POST", "/v1/conversations", tok, `{"agent":"flights"}`)
}

func TestOIDCVerifyToken(t *testing.T) {
	is := newIssuer(t)
	v, err := server.NewOIDC(&server.OIDCOptions{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.VerifyToken(context.Background(), is.rs(claims()))
	if err != nil {
		t.Fatal(err)
	}
	want := &toolgate.Principal{ID: "ada", Roles: []string{"traveller"}, Attributes: map[string]string{"iss": testIssuer}}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("principal (-want +got):\n%s", d)
	}
	// The keys are cached: a second token fetches nothing.
	if _, err := v.VerifyToken(context.Background(), is.sign(jose.ES256, is.ec, "ec-1", claims())); err != nil {
		t.Fatal(err)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches of the JWKS, want 1", n)
	}
	_, err = v.VerifyToken(context.Background(), is.sign(jose.RS256, is.other, "rsa-9", claims()))
	if !errors.Is(err, server.ErrInvalidToken) {
		t.Errorf("unknown kid: got %v, want ErrInvalidToken", err)
	}
}

// TestOIDCKeySetRefreshThrottled: tokens the cached keys do not verify
// (an unknown key id, a bad signature by a known one) do not fetch the key
// set again within the refresh interval.
func TestOIDCKeySetRefreshThrottled(t *testing.T) {
	is := newIssuer(t)
	v, err := server.NewOIDC(&server.OIDCOptions{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL,
		KeysRefreshInterval: time.Hour, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyToken(t.Context(), is.rs(claims())); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, tok := range []string{
			is.sign(jose.RS256, is.other, fmt.Sprintf("flood-%d", i), claims()), // unknown kid
			is.sign(jose.RS256, is.other, "rsa-1", claims()),                    // known kid, bad signature
		} {
			if _, err := v.VerifyToken(t.Context(), tok); !errors.Is(err, server.ErrInvalidToken) {
				t.Fatalf("a bad token: %v, want ErrInvalidToken", err)
			}
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches of the JWKS for 40 bad tokens, want 1", n)
	}
	// Good tokens still verify from the cache.
	if _, err := v.VerifyToken(t.Context(), is.rs(claims())); err != nil {
		t.Error(err)
	}
}

// A key set that cannot be fetched is not asked again for every token:
// within the retry interval, tokens the cached keys cannot verify fail
// with ErrKeySetUnavailable at no cost to the issuer.
func TestOIDCKeySetFailureThrottled(t *testing.T) {
	is := newIssuer(t)
	is.fail.Store(true)
	v, err := server.NewOIDC(&server.OIDCOptions{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.srv.URL,
		KeysRetryInterval: time.Hour, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, tok := range []string{
			is.rs(claims()), // a good token
			is.sign(jose.RS256, is.other, fmt.Sprintf("flood-%d", i), claims()), // unknown kid
		} {
			if _, err := v.VerifyToken(t.Context(), tok); !errors.Is(err, server.ErrKeySetUnavailable) {
				t.Fatalf("token %d while the key set is down: %v, want ErrKeySetUnavailable", i, err)
			}
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches of a failing JWKS for 40 tokens, want 1", n)
	}
}

func TestOIDCKeySetDown(t *testing.T) {
	for _, mode := range []string{"closed", "500"} {
		t.Run(mode, func(t *testing.T) {
			is := newIssuer(t)
			// No retry interval: the issuer is asked again as soon as it is back.
			f, log := newOIDCServer(t, is, &server.OIDCOptions{KeysRetryInterval: -1})
			if mode == "closed" {
				is.srv.Close()
			} else {
				is.fail.Store(true)
			}
			code, out := f.do("POST", "/v1/conversations", is.rs(claims()), `{"agent":"flights"}`)
			if code != 401 || out["error"] != "unauthorized" {
				t.Fatalf("status %d %v, want 401 unauthorized", code, out)
			}
			if !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "signing keys cannot be fetched") {
				t.Errorf("log %q does not say the keys cannot be fetched", log)
			}
			// API keys keep working.
			f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)
			if mode == "500" {
				is.fail.Store(false)
				f.must(201, "POST", "/v1/conversations", is.rs(claims()), `{"agent":"flights"}`)
			}
		})
	}
}

func TestNewOIDCInvalid(t *testing.T) {
	tests := []struct {
		name string
		opts *server.OIDCOptions
	}{
		{"nil", nil},
		{"no issuer", &server.OIDCOptions{Audience: "a", JWKSURL: "https://x/jwks"}},
		{"no audience", &server.OIDCOptions{Issuer: "i", JWKSURL: "https://x/jwks"}},
		{"bad URL", &server.OIDCOptions{Issuer: "i", Audience: "a", JWKSURL: "ftp://x/jwks"}},
		{"HS256", &server.OIDCOptions{Issuer: "i", Audience: "a", JWKSURL: "https://x/jwks", Algorithms: []string{"HS256"}}},
		{"none", &server.OIDCOptions{Issuer: "i", Audience: "a", JWKSURL: "https://x/jwks", Algorithms: []string{"none"}}},
		{"no algorithms", &server.OIDCOptions{Issuer: "i", Audience: "a", JWKSURL: "https://x/jwks", Algorithms: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := server.NewOIDC(tt.opts); err == nil {
				t.Fatal("got nil error, want one")
			}
		})
	}
}
