package server

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
)

// PageRoutes returns the patterns of the web pages.
func (s *Server) PageRoutes() []string { return append([]string(nil), s.web.pages...) }

// SafeNext is safeNext, for tests.
var SafeNext = safeNext

// DeciderFor returns the check of who may decide that the server hands
// the core when p decides a pause of conversation convID.
func (s *Server) DeciderFor(ctx context.Context, p *toolgate.Principal, convID string) (func(toolgate.ToolCall) bool, error) {
	c, err := s.conversation(ctx, convID)
	if err != nil || c == nil {
		return nil, fmt.Errorf("conversation %q: %v", convID, err)
	}
	return s.decider(p, c), nil
}
