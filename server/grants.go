package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/records"
)

// Sticky grants can be listed and revoked (GET
// /v1/conversations/{id}/grants, POST
// /v1/conversations/{id}/grants/{grant}/revoke). A live grant is listed to
// the conversation's readers and to the agent's approvers; it may be
// revoked by its granter and by every principal an approval rule lets
// decide calls of its tool in the conversation. A revocation ends the
// grant at once (the next pause it would have covered waits for a person)
// and writes a revoked record to the audit log, before it is answered; a
// revocation whose record cannot be written is answered 500 and the grant
// stays revoked.

// codeGrantNotFound answers a revocation of a grant that is not live in
// the conversation (404).
const codeGrantNotFound = "grant_not_found"

// liveGrantJSON is a live grant in a listing, with whether the caller may
// revoke it.
type liveGrantJSON struct {
	grantJSON
	GrantedAt time.Time `json:"granted_at"`
	MayRevoke bool      `json:"may_revoke"`
}

// mayRevoke reports whether p may revoke g in c.
func (s *Server) mayRevoke(p *toolgate.Principal, c *conversation, g *records.Grant) bool {
	return s.sameIdentity(g.GrantedBy, p.ID) || len(s.authorizing(p, c, g.Tool)) > 0
}

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	c := s.pathConversation(w, r, p, func(c *conversation) bool { return s.approver(p, c.Agent) })
	if c == nil {
		return
	}
	grants, err := s.cfg.Records.Grants(r.Context(), c.ID, now())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := []liveGrantJSON{}
	for i := range grants {
		g := &grants[i]
		out = append(out, liveGrantJSON{grantJSON: grantOut(g), GrantedAt: g.GrantedAt, MayRevoke: s.mayRevoke(p, c, g)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversation_id": c.ID, "grants": out})
}

func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	ctx := r.Context()
	c := s.pathConversation(w, r, p, func(c *conversation) bool { return s.approver(p, c.Agent) })
	if c == nil {
		return
	}
	var in struct{} // no body, or an empty object
	if !s.decode(w, r, &in, true) {
		return
	}
	id := r.PathValue("grant")
	t := now()
	grants, err := s.cfg.Records.Grants(ctx, c.ID, t)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	var g *records.Grant
	for i := range grants {
		if grants[i].ID == id {
			g = &grants[i]
		}
	}
	if g == nil {
		writeError(w, http.StatusNotFound, codeGrantNotFound, fmt.Sprintf("the conversation has no live grant %q", capped(id)))
		return
	}
	if !s.mayRevoke(p, c, g) {
		writeError(w, http.StatusForbidden, codeForbidden, "only the granter, or who may decide calls of tool "+capped(g.Tool)+", may revoke this grant")
		return
	}
	old, err := s.cfg.Records.RevokeGrant(ctx, c.ID, id, t)
	if errors.Is(err, records.ErrNotFound) {
		writeError(w, http.StatusNotFound, codeGrantNotFound, fmt.Sprintf("the conversation has no live grant %q", capped(id)))
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if a := s.audit; a != nil {
		rec := &audit.Record{ConversationID: c.ID, Tool: old.Tool, Kind: audit.KindRevoked, Actor: person(p),
			Reason: fmt.Sprintf("sticky grant %s by %s revoked", old.ID, old.GrantedBy)}
		if err := a.append(ctx, rec); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	s.logger.InfoContext(ctx, "server: sticky grant revoked", "conversation", c.ID, "grant", old.ID, "by", capped(p.ID))
	old.ExpiresAt = t
	writeJSON(w, http.StatusOK, map[string]any{"conversation_id": c.ID, "revoked": grantOut(old)})
}
