package server

import (
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// DefaultSessionTTL is how long a browser stays signed in when
// [Config.SessionTTL] is 0.
const DefaultSessionTTL = 12 * time.Hour

// maxSessionsPerPrincipal bounds the sessions one principal holds at once:
// signing in again beyond it ends the session that expires first, so that
// a key holder who signs in in a loop cannot grow the table without end.
const maxSessionsPerPrincipal = 16

// sessions maps the ids of the session cookies of signed-in browsers to
// their principals. Ids are 128-bit random values, known only to the
// server and the browser; a session ends when it expires, when the browser
// signs out, or when the process exits (sessions are kept in memory).
//
// A sessions is safe for concurrent use.
type sessions struct {
	// fixed at creation
	ttl time.Duration

	mu   sync.Mutex
	byID map[string]*session // guarded by mu
}

type session struct {
	principal *toolgate.Principal
	// key is the hash of the API key the browser signed in with; nil for
	// an OIDC sign-in. Such a session runs as the key's principal in the
	// current key table, and ends when the key is removed.
	key     *[sha256.Size]byte
	expires time.Time
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, byID: make(map[string]*session)}
}

// create starts a session for p, signed in with the API key whose hash is
// key (nil: an OIDC sign-in), and returns its id and expiry.
func (ss *sessions) create(p *toolgate.Principal, key *[sha256.Size]byte) (id string, expires time.Time) {
	now := time.Now()
	id, expires = rand.Text(), now.Add(ss.ttl)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var held int
	var first string // the id of p's session that expires first
	for k, s := range ss.byID {
		switch {
		case !now.Before(s.expires):
			delete(ss.byID, k)
		case s.principal.ID == p.ID:
			held++
			if first == "" || s.expires.Before(ss.byID[first].expires) {
				first = k
			}
		}
	}
	if held >= maxSessionsPerPrincipal {
		delete(ss.byID, first)
	}
	ss.byID[id] = &session{principal: p, key: key, expires: expires}
	return id, expires
}

// get returns the session id, or nil when there is no such session or it
// has expired.
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[id]
	if s == nil {
		return nil
	}
	if !time.Now().Before(s.expires) {
		delete(ss.byID, id)
		return nil
	}
	return s
}

// sessionUser returns the principal the session id runs as now, or nil
// when it ended: the current key table's principal for a session signed
// in with an API key, the sign-in's principal otherwise (which then counts
// as its holder's identity, see identity.go).
func (s *Server) sessionUser(id string) *toolgate.Principal {
	ses := s.web.sessions.get(id)
	switch {
	case ses == nil:
		return nil
	case ses.key != nil:
		p := s.keys.Load().byHash[*ses.key]
		if p == nil {
			s.web.sessions.end(id)
		}
		return p
	}
	s.seen.note(ses.principal, ses.expires)
	return ses.principal
}

// end ends the session id, if there is one.
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

// startSession signs the browser of r in as p, with the API key whose hash
// is key (nil: an OIDC sign-in): it starts a session and sets its cookie,
// SameSite=Strict so that no other site's page sends it.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, key *[sha256.Size]byte) {
	id, expires := s.web.sessions.create(p, key)
	if key == nil {
		s.seen.note(p, expires)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(time.Until(expires).Seconds()),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}
