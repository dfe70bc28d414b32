package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// Identities: who a principal is now.
//
// Every request is authenticated anew (an API key of the current key
// table, a bearer token, a session), and its principal — id and roles as
// they are now — is what the request is checked against and what a turn
// it runs is run with. A conversation's record keeps its owner's id; the
// roles stored with it are never used to run anything.
//
// A decision, a sticky resumption and a recovery continue a turn of the
// conversation's owner, who is not the one making the request. They run
// with the owner resolved when they start ([Server.currentOwner]): the
// principal of the owner's entry in the current API key table, or, for an
// owner who authenticates with bearer tokens or an OIDC sign-in, the
// principal of the owner's latest such authentication on this server, for
// [tokenIdentityTTL] after it (or until the session it started ends). An
// owner known in neither way — the key was removed, the roles changed to
// none, the last token is older, the sign-in was on another instance —
// cannot be run for: the decision is refused with 403 "owner_unavailable"
// and nothing of the reply runs (the pause stays open). A recovery of a
// claimed pause in the background fails closed the same way: the pause
// stays claimed and the recovery is tried again on the next sweep.
//
// A turn that is already running keeps the principal it started with.

// codeOwnerUnavailable answers a decision whose conversation's owner the
// server cannot resolve now (403).
const codeOwnerUnavailable = "owner_unavailable"

// tokenIdentityTTL is how long the principal of a verified bearer token
// counts as its holder's current identity for the turns others resume.
const tokenIdentityTTL = 15 * time.Minute

// APIKeysSource names the API keys ([Config.APIKeys]) in
// [Config.IdentitySources].
const APIKeysSource = "api_keys"

// IdentitySource is how the ids of one identity source become the
// identity of a person.
type IdentitySource struct {
	// CaseInsensitive folds the principal ids of the source to lower case
	// when they authenticate, for a source whose ids ignore case: "Bob"
	// and "bob" are then one principal, "bob" — the owner of the
	// conversations either starts, one approver under a two-person rule,
	// the id in the audit log. false: ids are kept byte for byte.
	CaseInsensitive bool `json:"case_insensitive,omitempty" yaml:"case_insensitive,omitempty"`
}

// canonical returns p with its id as src makes it.
func (src IdentitySource) canonical(p *toolgate.Principal) *toolgate.Principal {
	if p == nil || !src.CaseInsensitive {
		return p
	}
	if id := strings.ToLower(p.ID); id != p.ID {
		c := *p
		c.ID = id
		return &c
	}
	return p
}

// fromSource returns p, authenticated by a token or a sign-in, as the
// identity source of its issuer makes it ([Config.IdentitySources]).
func (s *Server) fromSource(p *toolgate.Principal) *toolgate.Principal {
	if p == nil || p.Attributes["iss"] == "" {
		return p
	}
	return s.cfg.IdentitySources[p.Attributes["iss"]].canonical(p)
}

// keyTable is one version of the API key table.
type keyTable struct {
	byHash map[[sha256.Size]byte]*toolgate.Principal
	byID   map[string]*toolgate.Principal
}

// newKeyTable checks keys and returns their table, or the problems.
// src is [Config.IdentitySources] of [APIKeysSource].
func newKeyTable(keys []APIKey, src IdentitySource) (*keyTable, []error) {
	var errs []error
	t := &keyTable{byHash: make(map[[sha256.Size]byte]*toolgate.Principal, len(keys)), byID: make(map[string]*toolgate.Principal, len(keys))}
	for i, k := range keys {
		b, err := hexHash(k.SHA256)
		if err != nil {
			errs = append(errs, fmt.Errorf("api_keys[%d]: sha256 is not a hex-encoded SHA-256 hash", i))
			continue
		}
		if k.Principal.ID == "" {
			errs = append(errs, fmt.Errorf("api_keys[%d]: empty principal id", i))
			continue
		}
		if t.byHash[b] != nil {
			errs = append(errs, fmt.Errorf("api_keys[%d]: the same key as another entry", i))
			continue
		}
		p := *src.canonical(&k.Principal)
		p.Roles = slices.Clone(p.Roles)
		p.Attributes = maps.Clone(p.Attributes)
		t.byHash[b] = &p
		if old := t.byID[p.ID]; old != nil && !slices.Equal(old.Roles, p.Roles) {
			errs = append(errs, fmt.Errorf("api_keys[%d]: principal %q has other roles in another entry", i, p.ID))
			continue
		}
		t.byID[p.ID] = &p
	}
	return t, errs
}

// SetAPIKeys replaces the API key table ([Config.APIKeys]) at once: the
// next request is authenticated with keys, and a principal whose entry is
// gone or whose roles changed is no longer run for with the old ones —
// neither in its own requests nor in the turns others resume for it (see
// docs/API.md, "Who may do what"). Sessions signed in with a removed key
// end. It returns an error naming every problem of keys and then changes
// nothing.
func (s *Server) SetAPIKeys(keys []APIKey) error {
	t, errs := newKeyTable(keys, s.cfg.IdentitySources[APIKeysSource])
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: invalid API keys: %w", err)
	}
	s.keys.Store(t)
	return nil
}

// keyPrincipal returns the principal of the API key, or nil.
func (s *Server) keyPrincipal(key string) *toolgate.Principal {
	return s.keys.Load().byHash[sha256.Sum256([]byte(key))]
}

// seenIdentities remembers the principals of the latest bearer tokens and
// OIDC sign-ins, for [Server.currentOwner].
//
// A seenIdentities is safe for concurrent use.
type seenIdentities struct {
	mu   sync.Mutex
	byID map[string]seenIdentity // guarded by mu
}

type seenIdentity struct {
	p     *toolgate.Principal
	until time.Time
}

// maxSeenIdentities bounds the identities remembered; beyond it, expired
// ones are dropped first, then the one that expires first.
const maxSeenIdentities = 100_000

// note records p as its holder's identity until until.
func (si *seenIdentities) note(p *toolgate.Principal, until time.Time) {
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.byID == nil {
		si.byID = map[string]seenIdentity{}
	}
	if _, ok := si.byID[p.ID]; !ok && len(si.byID) >= maxSeenIdentities {
		t := time.Now()
		var first string
		for id, e := range si.byID {
			if !t.Before(e.until) {
				delete(si.byID, id)
			} else if first == "" || e.until.Before(si.byID[first].until) {
				first = id
			}
		}
		if len(si.byID) >= maxSeenIdentities {
			delete(si.byID, first)
		}
	}
	si.byID[p.ID] = seenIdentity{p: p, until: until}
}

// get returns the principal last noted for id, unless it is too old.
func (si *seenIdentities) get(id string, t time.Time) *toolgate.Principal {
	si.mu.Lock()
	defer si.mu.Unlock()
	e, ok := si.byID[id]
	if !ok || !t.Before(e.until) {
		return nil
	}
	return e.p
}

// currentOwner returns the principal the turns of c run with now (see the
// comment at the top of this file), or nil when the server cannot tell.
func (s *Server) currentOwner(c *conversation) *toolgate.Principal {
	return s.principalNow(c.Owner.ID)
}

// principalNow returns the principal with the id as the server knows it
// now (the comment at the top of this file says how), or nil.
func (s *Server) principalNow(id string) *toolgate.Principal {
	if p := s.keys.Load().byID[id]; p != nil {
		return p
	}
	return s.seen.get(id, time.Now())
}

// hexHash decodes a hex SHA-256 hash.
func hexHash(s string) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	if len(s) != 2*sha256.Size {
		return out, errors.New("not a SHA-256 hash")
	}
	for i := range sha256.Size {
		hi, lo := unhex(s[2*i]), unhex(s[2*i+1])
		if hi < 0 || lo < 0 {
			return out, errors.New("not hex")
		}
		out[i] = byte(hi<<4 | lo)
	}
	return out, nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// sameIdentity reports whether a and b are one person, comparing
// canonical identities (see [Server.canonicalID]).
func (s *Server) sameIdentity(a, b string) bool {
	return s.canonicalID(a) == s.canonicalID(b)
}

// canonicalID returns the identity the two-person rule and the owner
// checks compare for a principal id: [Config.Identities] maps it, and ids
// of a case-insensitive identity source are folded.
func (s *Server) canonicalID(id string) string {
	if mapped, ok := s.cfg.Identities[id]; ok {
		id = mapped
	}
	if s.cfg.CaseInsensitiveIDs {
		id = strings.ToLower(id)
	}
	return id
}

// runnableOwner returns [Server.currentOwner] of c when it may still use
// c's agent ([Agent.RequesterRoles]), nil otherwise.
func (s *Server) runnableOwner(c *conversation) *toolgate.Principal {
	p := s.currentOwner(c)
	if p == nil {
		return nil
	}
	if a := s.cfg.Agents[c.Agent]; a.RequesterRoles != nil && !hasRole(p, a.RequesterRoles) {
		return nil
	}
	return p
}
