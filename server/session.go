package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// DefaultSessionTTL is how long a browser stays signed in when
// [Config.SessionTTL] is 0.
const DefaultSessionTTL = 12 * time.Hour

// maxSessionsPerPrincipal bounds the sessions one principal holds at once:
// signing in again beyond it ends the session that expires first, so that
// a key holder who signs in in a loop cannot grow the table without end.
const maxSessionsPerPrincipal = 16

// sessions are the sessions of signed-in browsers, kept in the record
// store ([records.SessionStore]) so that every instance on one database
// knows them: a browser signed in through one instance is signed in on
// all, and signing out on one ends the session on all. No load balancer
// needs to send a browser back to the instance it signed in on.
//
// A session cookie's value is 128 random bits, known only to the browser;
// the store keeps its SHA-256, so that reading the table gives no cookie.
// A session ends when it expires, when the browser signs out, or, for a
// sign-in with an API key, when the key is removed.
//
// A sessions is safe for concurrent use.
type sessions struct {
	// fixed at creation
	ttl time.Duration
	rs  records.Store
}

type session struct {
	principal *toolgate.Principal
	// key is the hash of the API key the browser signed in with; nil for
	// an OIDC sign-in. Such a session runs as the key's principal in the
	// current key table, and ends when the key is removed.
	key     *[sha256.Size]byte
	expires time.Time
}

func newSessions(ttl time.Duration, rs records.Store) *sessions {
	return &sessions{ttl: ttl, rs: rs}
}

// sessionID returns the id the store keeps for a session cookie's value.
func sessionID(cookie string) string {
	h := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(h[:])
}

// create starts a session for p, signed in with the API key whose hash is
// key (nil: an OIDC sign-in), and returns its cookie's value and expiry.
func (ss *sessions) create(ctx context.Context, p *toolgate.Principal, key *[sha256.Size]byte) (cookie string, expires time.Time, err error) {
	t := time.Now()
	cookie, expires = rand.Text(), t.Add(ss.ttl)
	rec := &records.Session{ID: sessionID(cookie), Principal: *p, ExpiresAt: expires}
	if key != nil {
		rec.KeyHash = key[:]
	}
	return cookie, expires, ss.rs.AddSession(ctx, rec, maxSessionsPerPrincipal, t)
}

// get returns the session of a cookie's value, or nil when there is no
// such session or it has expired; an error is the store's.
func (ss *sessions) get(ctx context.Context, cookie string) (*session, error) {
	rec, err := ss.rs.Session(ctx, sessionID(cookie), time.Now())
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := &session{principal: &rec.Principal, expires: rec.ExpiresAt}
	if len(rec.KeyHash) == sha256.Size {
		out.key = (*[sha256.Size]byte)(rec.KeyHash)
	}
	return out, nil
}

// end ends the session of a cookie's value, if there is one.
func (ss *sessions) end(ctx context.Context, cookie string) error {
	return ss.rs.EndSession(ctx, sessionID(cookie))
}

// sessionUser returns the principal the session of a cookie's value runs
// as now, or nil when it ended: the current key table's principal for a
// session signed in with an API key, the sign-in's principal otherwise
// (which then counts as its holder's identity, see identity.go). An error
// is the store's.
func (s *Server) sessionUser(ctx context.Context, cookie string) (*toolgate.Principal, error) {
	ses, err := s.web.sessions.get(ctx, cookie)
	switch {
	case err != nil || ses == nil:
		return nil, err
	case ses.key != nil:
		p := s.keys.Load().byHash[*ses.key]
		if p == nil {
			return nil, s.web.sessions.end(context.WithoutCancel(ctx), cookie)
		}
		return p, nil
	}
	s.seen.note(ses.principal, ses.expires)
	return ses.principal, nil
}

// startSession signs the browser of r in as p, with the API key whose hash
// is key (nil: an OIDC sign-in): it starts a session and sets its cookie,
// SameSite=Strict so that no other site's page sends it. It answers a
// store failure itself and returns false then.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, key *[sha256.Size]byte) bool {
	cookie, expires, err := s.web.sessions.create(r.Context(), p, key)
	if err != nil {
		s.internal(w, r, err)
		return false
	}
	if key == nil {
		s.seen.note(p, expires)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    cookie,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(time.Until(expires).Seconds()),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	return true
}
