package server

import (
	"crypto/rand"
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
	expires   time.Time
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, byID: make(map[string]*session)}
}

// create starts a session for p and returns its id and expiry.
func (ss *sessions) create(p *toolgate.Principal) (id string, expires time.Time) {
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
	ss.byID[id] = &session{principal: p, expires: expires}
	return id, expires
}

// get returns the principal of the session id, or nil when there is no
// such session or it has expired.
func (ss *sessions) get(id string) *toolgate.Principal {
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
	return s.principal
}

// end ends the session id, if there is one.
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

// startSession signs the browser of r in as p: it starts a session and
// sets its cookie, SameSite=Strict so that no other site's page sends it.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	id, expires := s.web.sessions.create(p)
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
