package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
)

// TokenVerifier authenticates a bearer token that is not one of the
// configured API keys, such as a JWT from an OpenID Connect provider (see
// [OIDC]). Implementations must be safe for concurrent use.
type TokenVerifier interface {
	// VerifyToken returns the principal token authenticates, or an error
	// when it does not authenticate anybody. It must not panic on any
	// input.
	VerifyToken(ctx context.Context, token string) (*toolgate.Principal, error)
}

// ErrKeySetUnavailable is wrapped by the errors of [OIDC.VerifyToken] when
// the signing keys could not be fetched from the JWKS URL (the issuer is
// down or answers with an error): the token could not be checked at all.
var ErrKeySetUnavailable = errors.New("server: the signing keys (JWKS) could not be fetched")

// ErrInvalidToken is wrapped by the errors of [OIDC.VerifyToken] when the
// token itself is refused: malformed, badly signed, by an unknown key,
// expired, not yet valid, or for another issuer or audience.
var ErrInvalidToken = errors.New("server: invalid bearer token")

// DefaultClockSkew is the leeway of [OIDCOptions.ClockSkew] when it is 0.
const DefaultClockSkew = time.Minute

// DefaultKeysRefreshInterval is [OIDCOptions.KeysRefreshInterval] when it
// is 0.
const DefaultKeysRefreshInterval = 30 * time.Second

// DefaultKeysRetryInterval is [OIDCOptions.KeysRetryInterval] when it is
// 0.
const DefaultKeysRetryInterval = 10 * time.Second

// DefaultAlgorithms are the signature algorithms [OIDC] accepts when
// [OIDCOptions.Algorithms] is nil: asymmetric ones only.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OIDCOptions configure an [OIDC] verifier.
type OIDCOptions struct {
	// Issuer is the "iss" claim every token must carry, exactly.
	// Required.
	Issuer string `yaml:"issuer"`
	// Audience must be one of the token's "aud" values. Required.
	Audience string `yaml:"audience"`
	// JWKSURL is the address of the issuer's JSON Web Key Set. Required.
	// The keys are cached; they are fetched again when a token names a key
	// id the cache does not hold.
	JWKSURL string `yaml:"jwks_url"`
	// RolesClaim names the claim that holds the principal's roles: an
	// array of strings or one space-separated string. A dotted name
	// reaches into objects, as in "realm_access.roles". "": "roles". A
	// token without the claim authenticates a principal with no roles.
	RolesClaim string `yaml:"roles_claim"`
	// ClockSkew is the leeway allowed when checking "exp", "nbf" and
	// "iat" against the clock. 0: [DefaultClockSkew]; negative: none.
	ClockSkew time.Duration `yaml:"clock_skew"`
	// Algorithms are the signature algorithms accepted, such as "RS256".
	// nil: [DefaultAlgorithms]. "none" and symmetric algorithms are never
	// accepted.
	Algorithms []string `yaml:"algorithms"`
	// KeysRefreshInterval is the shortest time between two fetches of
	// the key set once it was fetched: a token naming an unknown key id, or
	// failing its signature, within it is checked against the cached keys
	// only, so that a flood of such tokens costs the issuer nothing. A key
	// the issuer adds is then used at most this long after its first
	// token. 0: [DefaultKeysRefreshInterval]; negative: no limit.
	KeysRefreshInterval time.Duration `yaml:"keys_refresh_interval"`
	// KeysRetryInterval is the shortest time between a fetch of the key
	// set that failed (unreachable, not 200, unreadable) and the next
	// one: within it, a token the cached keys cannot verify fails with
	// [ErrKeySetUnavailable] without asking the issuer again, so that a
	// flood of tokens during an outage costs it nothing. 0:
	// [DefaultKeysRetryInterval]; negative: no limit.
	KeysRetryInterval time.Duration `yaml:"keys_retry_interval"`
	// HTTPClient fetches the key set. nil: a client with a 10-second
	// timeout.
	HTTPClient *http.Client `yaml:"-"`
	// Now returns the current time. nil: [time.Now].
	Now func() time.Time `yaml:"-"`
}

// OIDC verifies JWT bearer tokens signed by an OpenID Connect provider
// (or any issuer publishing a JWKS): the signature against the issuer's
// keys, then the issuer, the audience, the expiry (required), the
// not-before and issued-at times. The subject becomes the principal's ID
// and the roles claim its roles. Signature checking and key fetching are
// those of github.com/coreos/go-oidc.
//
// An OIDC is safe for concurrent use.
type OIDC struct {
	// fixed at creation
	keys     *oidc.RemoteKeySet
	algs     []jose.SignatureAlgorithm
	issuer   string
	audience string
	roles    []string // the roles claim's path
	skew     time.Duration
	now      func() time.Time
}

// NewOIDC returns a verifier configured by opts, or an error naming every
// problem of opts. It fetches nothing: the keys are fetched when the first
// token is checked.
func NewOIDC(opts *OIDCOptions) (*OIDC, error) {
	if opts == nil {
		opts = &OIDCOptions{}
	}
	var errs []error
	if opts.Issuer == "" {
		errs = append(errs, errors.New("no issuer"))
	}
	if opts.Audience == "" {
		errs = append(errs, errors.New("no audience"))
	}
	if u, err := url.Parse(opts.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("jwks_url %q is not an http or https URL", opts.JWKSURL))
	}
	algNames := opts.Algorithms
	if algNames == nil {
		algNames = DefaultAlgorithms
	}
	var algs []jose.SignatureAlgorithm
	for _, a := range algNames {
		if !slices.Contains(DefaultAlgorithms, a) {
			errs = append(errs, fmt.Errorf("algorithm %q is not accepted (want one of %s)", a, strings.Join(DefaultAlgorithms, ", ")))
			continue
		}
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	if len(algNames) == 0 {
		errs = append(errs, errors.New("no algorithms"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("server: invalid OIDC options: %w", err)
	}
	v := &OIDC{algs: algs, issuer: opts.Issuer, audience: opts.Audience, skew: opts.ClockSkew, now: opts.Now}
	claim := opts.RolesClaim
	if claim == "" {
		claim = "roles"
	}
	v.roles = strings.Split(claim, ".")
	if v.skew == 0 {
		v.skew = DefaultClockSkew
	} else if v.skew < 0 {
		v.skew = 0
	}
	if v.now == nil {
		v.now = time.Now
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	every := opts.KeysRefreshInterval
	if every == 0 {
		every = DefaultKeysRefreshInterval
	}
	retry := opts.KeysRetryInterval
	if retry == 0 {
		retry = DefaultKeysRetryInterval
	}
	hc = &http.Client{Transport: &keySetTransport{c: hc, every: every, retry: retry}, Timeout: hc.Timeout}
	v.keys = oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), hc), opts.JWKSURL)
	return v, nil
}

// keySetTransport marks every failure to fetch the key set with
// [ErrKeySetUnavailable], so that it is told apart from a bad token, and
// answers a fetch within every of the last successful one with the body
// that fetch got, without asking the issuer (go-oidc fetches again on
// every token its cached keys do not verify). A fetch within retry of the
// last failed one fails the same way, without asking.
//
// A keySetTransport is safe for concurrent use.
type keySetTransport struct {
	// fixed at creation
	c     *http.Client
	every time.Duration // <= 0: no limit
	retry time.Duration // <= 0: no limit

	mu       sync.Mutex
	last     time.Time // guarded by mu: the last successful fetch
	body     []byte    // guarded by mu: its body
	failedAt time.Time // guarded by mu: the last failed fetch, if it came after last
	failure  error     // guarded by mu: its error; nil after a successful fetch
}

// maxKeySetBytes bounds the key set read.
const maxKeySetBytes = 1 << 20

func (t *keySetTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.every > 0 && t.body != nil && time.Since(t.last) < t.every {
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(t.body)),
			ContentLength: int64(len(t.body)), Request: r}, nil
	}
	if t.retry > 0 && t.failure != nil && time.Since(t.failedAt) < t.retry {
		return nil, t.failure
	}
	body, err := t.fetch(r)
	if err != nil {
		t.failedAt, t.failure = time.Now(), err
		return nil, err
	}
	t.last, t.body, t.failure = time.Now(), body, nil
	resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Request: r}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp, nil
}

// fetch asks the issuer for the key set of r and returns its body, or an
// error wrapping [ErrKeySetUnavailable].
func (t *keySetTransport) fetch(r *http.Request) ([]byte, error) {
	resp, err := t.c.Do(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeySetUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("%w: %s answered %s", ErrKeySetUnavailable, r.URL.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySetBytes))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeySetUnavailable, err)
	}
	return body, nil
}

// looksLikeJWT reports whether token has the shape of a JWS in compact
// serialization: three base64url parts separated by dots.
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2 && strings.HasPrefix(token, "eyJ")
}

// VerifyToken implements [TokenVerifier]. Its errors wrap
// [ErrInvalidToken] or [ErrKeySetUnavailable].
func (v *OIDC) VerifyToken(ctx context.Context, token string) (*toolgate.Principal, error) {
	if _, err := jose.ParseSignedCompact(token, v.algs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	payload, err := v.keys.VerifySignature(ctx, token)
	if err != nil {
		if errors.Is(err, ErrKeySetUnavailable) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	p, err := v.principal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	return p, nil
}

// principal checks the verified claims in payload and maps them to a
// principal.
func (v *OIDC) principal(payload []byte) (*toolgate.Principal, error) {
	var c jwt.Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("claims: %v", err)
	}
	if c.Expiry == nil {
		return nil, errors.New("no exp claim")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: []string{v.audience}, Time: v.now()}, v.skew); err != nil {
		return nil, err
	}
	if c.Subject == "" {
		return nil, errors.New("no sub claim")
	}
	roles, err := rolesClaim(payload, v.roles)
	if err != nil {
		return nil, err
	}
	return &toolgate.Principal{ID: c.Subject, Roles: roles, Attributes: map[string]string{"iss": c.Issuer}}, nil
}

// rolesClaim returns the roles at path in the claims of payload: an array
// of strings or a space-separated string; nil when the claim is missing.
func rolesClaim(payload []byte, path []string) ([]string, error) {
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return nil, fmt.Errorf("claims: %v", err)
	}
	for _, name := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, nil
		}
		if v, ok = obj[name]; !ok {
			return nil, nil
		}
	}
	claim := strings.Join(path, ".")
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(x), nil
	case []any:
		roles := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("the %s claim holds a non-string value", claim)
			}
			roles = append(roles, s)
		}
		return roles, nil
	default:
		return nil, fmt.Errorf("the %s claim is neither a string nor an array of strings", claim)
	}
}

// verifyToken authenticates a JWT bearer token with the configured
// verifier; when it fails, it answers 401, logs why and returns nil.
func (s *Server) verifyToken(w http.ResponseWriter, r *http.Request, token string) *toolgate.Principal {
	p, err := s.cfg.Tokens.VerifyToken(r.Context(), token)
	p = s.fromSource(p)
	if err == nil && p != nil && p.ID != "" {
		s.seen.note(p, time.Now().Add(tokenIdentityTTL))
		return p
	}
	switch {
	case errors.Is(err, ErrKeySetUnavailable):
		s.logger.Error("server: bearer token refused: the issuer's signing keys cannot be fetched", "err", logcap.Error(err))
	case err == nil:
		s.logger.Warn("server: bearer token refused: the verifier returned no principal")
	default:
		s.logger.Info("server: bearer token refused", "err", logcap.Error(err))
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate", error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, codeUnauthorized, "invalid bearer token")
	return nil
}
