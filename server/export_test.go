package server

// PageRoutes returns the patterns of the web pages.
func (s *Server) PageRoutes() []string { return append([]string(nil), s.web.pages...) }

// SafeNext is safeNext, for tests.
var SafeNext = safeNext
