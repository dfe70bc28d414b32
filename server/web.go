package server

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
)

// The web pages: a sign-in form and, for signed-in browsers, the
// conversations, a chat page per conversation, the approval inbox, a
// decision page per pause and the audit trail of a conversation. The pages
// are thin shells rendered with html/template; their script (static/app.js,
// no inline scripts) reads and writes through the JSON API with the
// session cookie and builds the DOM with textContent only, since tool
// arguments are attacker-controlled.

//go:embed web/templates/*.html web/static
var webFiles embed.FS

// sessionCookie is the name of the cookie holding a session id.
const sessionCookie = "toolgate_session"

// contentSecurityPolicy is the Content-Security-Policy of every page:
// scripts and styles only from the server's own files, nothing inline.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// codeCrossOrigin is the API error code of a state-changing request a
// browser sent from another origin (403). Its value never changes.
const codeCrossOrigin = "cross_origin"

// maxSignInBytes bounds the body of the sign-in form.
const maxSignInBytes = 8 << 10

// webState is what the pages need besides the API; fixed at creation
// except for the sessions, which are safe for concurrent use.
type webState struct {
	pages    []string // the page patterns registered, "METHOD /path"
	sessions *sessions
	cop      *http.CrossOriginProtection
	tmpl     map[string]*template.Template // by page name
	static   fs.FS
	login    *oidcLogin // nil without [Config.OIDCLogin]
}

// pageNames are the templates under web/templates besides layout.html.
var pageNames = []string{"signin", "conversations", "chat", "inbox", "decide", "audit", "history", "error"}

// initWeb registers the pages and the static files.
func (s *Server) initWeb() {
	ttl := s.cfg.SessionTTL
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	w := &s.web
	w.sessions = newSessions(ttl, s.cfg.Records)
	w.cop = http.NewCrossOriginProtection()
	w.tmpl = make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		// The templates are part of the binary: failing to parse them is a
		// programmer error.
		w.tmpl[name] = template.Must(template.ParseFS(webFiles, "web/templates/layout.html", "web/templates/"+name+".html"))
	}
	static, err := fs.Sub(webFiles, "web/static")
	if err != nil {
		panic(err)
	}
	w.static = static

	s.page("GET /{$}", s.signedIn(s.conversationsPage))
	s.page("GET /signin", s.signInPage)
	s.page("POST /signin", s.signIn)
	s.page("POST /signout", s.signOut)
	s.page("GET /inbox", s.signedIn(s.inboxPage))
	s.page("GET /conversations/{id}", s.signedIn(s.chatPage))
	s.page("GET /conversations/{id}/pauses/{pause}", s.signedIn(s.decidePage))
	s.page("GET /conversations/{id}/audit", s.signedIn(s.auditPage))
	s.page("GET /history", s.signedIn(s.historyPage))
	s.page("GET /static/{file...}", s.staticFile)
	s.page("GET /favicon.ico", s.favicon)
	s.initOIDCLogin()
}

// page registers a page: unlike the API routes, pages are not listed by
// [Server.Routes].
func (s *Server) page(pattern string, h http.HandlerFunc) {
	s.web.pages = append(s.web.pages, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w.Header())
		h(w, r)
	})
}

// setPageHeaders sets the security headers of every page and static file.
func setPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}

// crossOrigin answers 403 and returns true when r is a state-changing
// request a browser sent from another origin; [Server.ServeHTTP] asks it
// first, so it guards the pages and the API alike (requests without the browser's Sec-Fetch-Site or Origin
// headers, such as API clients', pass).
func (s *Server) crossOrigin(w http.ResponseWriter, r *http.Request) bool {
	if err := s.web.cop.Check(r); err != nil {
		writeError(w, http.StatusForbidden, codeCrossOrigin, "cross-origin requests that change state are refused")
		return true
	}
	return false
}

// cookieAuth serves a request that carries no Authorization header but a
// session cookie: h runs for the session's principal, or the request is
// answered 401 when the session is unknown or expired. It returns false,
// having done nothing, when the request has no session cookie.
func (s *Server) cookieAuth(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request, *toolgate.Principal)) bool {
	if r.Header.Get("Authorization") != "" {
		return false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	p, err := s.sessionUser(r.Context(), c.Value)
	if err != nil {
		s.internal(w, r, err)
		return true
	}
	if p == nil {
		writeError(w, http.StatusUnauthorized, codeUnauthorized, "the session has expired or ended; sign in again")
		return true
	}
	h(w, r, p)
	return true
}

// sessionPrincipal returns the principal of r's session cookie, or nil;
// a store failure is logged and counts as no session.
func (s *Server) sessionPrincipal(r *http.Request) *toolgate.Principal {
	p, err := s.cookiePrincipal(r)
	if err != nil {
		s.logger.ErrorContext(r.Context(), "server: reading a session failed", "err", logcap.Error(err))
	}
	return p
}

// cookiePrincipal returns the principal of r's session cookie, or nil;
// an error is the store's.
func (s *Server) cookiePrincipal(r *http.Request) (*toolgate.Principal, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, nil
	}
	return s.sessionUser(r.Context(), c.Value)
}

// signedIn wraps a page for signed-in browsers: others are sent to the
// sign-in page, which sends them back after signing in.
func (s *Server) signedIn(h func(http.ResponseWriter, *http.Request, *toolgate.Principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.cookiePrincipal(r)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if p == nil {
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, p)
	}
}

// pageData is what the templates render. Every string in it may come from
// outside (a principal's id from an identity provider, ids from the URL):
// html/template escapes it by context.
type pageData struct {
	Title string
	// Page names the page for the script: the body's data-page.
	Page string
	// User is the signed-in principal; nil on the sign-in page.
	User           *toolgate.Principal
	ConversationID string
	PauseID        string
	// Agents are the agents the user may start conversations with.
	Agents []string
	// Error is shown in an alert; "" for none.
	Error string
	// Next is where the sign-in form leads.
	Next string
	// LoginProvider names the OpenID Connect provider of the sign-in
	// button; "" when there is none (see oidclogin.go).
	LoginProvider string
	// Decider is true when the user's roles decide calls of some agent:
	// the pages offer the inbox and the history.
	Decider bool
	// Auditor is true when the user holds an audit role of a service
	// with an audit log: the pages offer the export.
	Auditor bool // MayPost is true on a chat page when the user may post to the
	// conversation (its owner, holding a requester role).
	MayPost bool
}

// render writes the page name with status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d *pageData) {
	if d.Page == "" {
		d.Page = name
	}
	if name == "signin" && s.web.login != nil {
		d.LoginProvider = s.web.login.name
	}
	if d.User != nil {
		d.Decider = s.decidesAnything(d.User)
		d.Auditor = s.audit != nil && hasRole(d.User, s.cfg.AuditRoles)
	}
	var b strings.Builder
	if err := s.web.tmpl[name].ExecuteTemplate(&b, "layout", d); err != nil {
		s.internal(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// notFoundPage answers 404 with the error page.
func (s *Server) notFoundPage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, msg string) {
	s.render(w, r, http.StatusNotFound, "error", &pageData{Title: "Not found", User: p, Error: msg})
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if s.sessionPrincipal(r) != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "signin", &pageData{Title: "Sign in", Next: next})
}

// signIn checks the API key of the sign-in form and starts a session.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBytes)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, "signin", &pageData{Title: "Sign in", Next: "/", Error: "The form could not be read."})
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	key := strings.TrimSpace(r.PostForm.Get("key"))
	p := s.keyPrincipal(key)
	if key == "" || p == nil {
		s.render(w, r, http.StatusUnauthorized, "signin", &pageData{Title: "Sign in", Next: next, Error: "That API key is not valid."})
		return
	}
	h := sha256.Sum256([]byte(key))
	if !s.startSession(w, r, p, &h) {
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the session and clears its cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if err := s.web.sessions.end(r.Context(), c.Value); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// safeNext returns next when it is a path on this server, and "/"
// otherwise, so that the sign-in form redirects nowhere else.
func safeNext(next string) string {
	if next == "" || next[0] != '/' || len(next) > 2048 {
		return "/"
	}
	// "//host" and "/\host" are other hosts to browsers; control
	// characters are never part of a path we serve.
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for _, c := range next {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

func (s *Server) conversationsPage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	var agents []string
	for name, a := range s.cfg.Agents {
		if a.RequesterRoles == nil || hasRole(p, a.RequesterRoles) {
			agents = append(agents, name)
		}
	}
	slices.Sort(agents)
	if len(agents) == 0 && s.decidesAnything(p) && !hasRole(p, s.cfg.ReadAllRoles) {
		// Somebody who decides calls and starts no conversation has
		// nothing of their own here: their page is the inbox.
		http.Redirect(w, r, "/inbox", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "conversations", &pageData{Title: "Conversations", User: p, Agents: agents})
}

// readable returns the conversation of r's {id} when p may read it, or
// when also, if not nil, says p may.
func (s *Server) readable(r *http.Request, p *toolgate.Principal, also func(*conversation) bool) *conversation {
	c, err := s.conversation(r.Context(), r.PathValue("id"))
	if err != nil {
		s.logger.ErrorContext(r.Context(), "server: reading a conversation's record failed", "err", logcap.Error(err))
		return nil
	}
	if c == nil || !s.canRead(p, c) && (also == nil || !also(c)) {
		return nil
	}
	return c
}

func (s *Server) chatPage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	c := s.readable(r, p, s.decidesOpenPause(r.Context(), p))
	if c == nil {
		s.notFoundPage(w, r, p, "There is no such conversation, or it is not yours.")
		return
	}
	a := s.cfg.Agents[c.Agent]
	mayPost := c.Owner.ID == p.ID && (a.RequesterRoles == nil || hasRole(p, a.RequesterRoles))
	s.render(w, r, http.StatusOK, "chat", &pageData{Title: "Conversation with " + c.Agent, User: p, ConversationID: c.ID, Agents: []string{c.Agent}, MayPost: mayPost})
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	c := s.readable(r, p, func(*conversation) bool { return hasRole(p, s.cfg.AuditRoles) })
	if c == nil {
		s.notFoundPage(w, r, p, "There is no such conversation, or it is not yours.")
		return
	}
	s.render(w, r, http.StatusOK, "audit", &pageData{Title: "Audit trail", User: p, ConversationID: c.ID})
}

func (s *Server) historyPage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	var agents []string
	for name := range s.cfg.Agents {
		agents = append(agents, name)
	}
	slices.Sort(agents)
	s.render(w, r, http.StatusOK, "history", &pageData{Title: "Decision history", User: p, Agents: agents})
}

func (s *Server) inboxPage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	s.render(w, r, http.StatusOK, "inbox", &pageData{Title: "Approval inbox", User: p})
}

// decidePage is the decision form of one pause. Whether the user may
// decide it is the inbox's answer, which the script asks: the page itself
// reveals nothing of the conversation.
func (s *Server) decidePage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	s.render(w, r, http.StatusOK, "decide", &pageData{Title: "Decide", User: p, ConversationID: r.PathValue("id"), PauseID: r.PathValue("pause")})
}

// faviconSVG is the pages' icon: a gate, in the colours of the header.
const faviconSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1b1f24"/>` +
	`<path d="M8 26V10a8 8 0 0 1 16 0v16" fill="none" stroke="#fde68a" stroke-width="3"/><path d="M12 26V14h8v12" fill="none" stroke="#fff" stroke-width="2.5"/></svg>`

// favicon serves the icon browsers ask for at /favicon.ico, as SVG (which
// browsers accept there); it changes only with the binary.
func (s *Server) favicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Header().Set("ETag", faviconETag)
	if r.Header.Get("If-None-Match") == faviconETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write([]byte(faviconSVG))
}

// faviconETag is the entity tag of the icon.
var faviconETag = func() string {
	h := sha256.Sum256([]byte(faviconSVG))
	return `"` + hex.EncodeToString(h[:8]) + `"`
}()

// staticFile serves the pages' script and style sheet.
func (s *Server) staticFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	st, err := fs.Stat(s.web.static, name)
	if err != nil || st.IsDir() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
			s.internal(w, r, err)
			return
		}
		writeError(w, http.StatusNotFound, codeNotFound, "no such file")
		return
	}
	// Files change with the binary: browsers revalidate.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.web.static, name)
}
