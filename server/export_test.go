package server

import (
	"time"

	"github.com/toolgate/toolgate"
)

// Adopt makes s know a conversation another server created, as the shared
// index of several instances will.
func (s *Server) Adopt(id, agent string, owner *toolgate.Principal) {
	s.idx.add(&conversation{ID: id, Agent: agent, Owner: owner, CreatedAt: time.Now().UTC()})
}

// PageRoutes returns the patterns of the web pages.
func (s *Server) PageRoutes() []string { return append([]string(nil), s.web.pages...) }

// SafeNext is safeNext, for tests.
var SafeNext = safeNext
