package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/records"
)

// Server is the approval service as an [http.Handler]: agents' turns run
// for authenticated principals, paused calls wait in an inbox, and an
// approver's decisions resume a pause exactly once. See docs/API.md for
// the API.
//
// A Server is safe for concurrent use.
type Server struct {
	// fixed at creation
	cfg *Config
	// keys is the current API key table (see identity.go).
	keys atomic.Pointer[keyTable]
	// seen holds the latest token principals (see identity.go).
	seen   seenIdentities
	mux    *http.ServeMux
	logger *slog.Logger
	routes []string // the patterns registered, "METHOD /path"
	// sweeper expires pauses in the background; nil when none expire.
	sweeper *sweeper
	audit   *auditor // nil: no audit log
	// tx names the agents whose stores write the server's records in
	// their own transactions (txaudit.go).
	tx map[string]bool
	// probes caches the readiness checks' write probes (probe.go).
	probes probes
	// convs caches conversation records, which never change.
	convs convCache
	// recoverer recovers abandoned claims in the background; nil when
	// they are never recovered.
	recoverer *sweeper
	// events hands events to the event streams (events.go, sse.go).
	events eventsState
	ops    *ops // metrics, traces, timeouts (ops.go)
	web    webState
	hooks  *notifier // nil without webhooks
	// settling retries the settling of idempotency keys (idempotency.go).
	settling settlers

	closed atomic.Bool
}

// New returns a server for cfg, or an error naming every problem of cfg.
func New(cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	keys, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg.clone(), mux: http.NewServeMux(), settling: newSettlers()}
	s.keys.Store(keys)
	s.logger = requestLogger(s.cfg.Logger)
	s.ops = newOps(s.cfg)
	s.ops.pausesOpen.add(s)
	s.audit = newAuditor(s.cfg)
	s.tx = s.txAgents()
	s.handle("GET /healthz", s.healthz)
	s.opsRoutes()
	s.handle("POST /v1/conversations", s.auth(s.createConversation))
	s.handle("GET /v1/conversations", s.auth(s.listConversations))
	s.handle("GET /v1/conversations/{id}", s.auth(s.getConversation))
	s.handle("POST /v1/conversations/{id}/messages", s.auth(s.idempotent(s.postMessage)))
	s.handle("GET /v1/inbox", s.auth(s.inbox))
	s.handle("POST /v1/conversations/{id}/pauses/{pause}/decisions", s.auth(s.idempotent(s.decide)))
	s.handle("GET /v1/conversations/{id}/audit", s.auth(s.conversationAudit))
	s.handle("GET /v1/conversations/{id}/grants", s.auth(s.listGrants))
	s.handle("POST /v1/conversations/{id}/grants/{grant}/revoke", s.auth(s.revokeGrant))
	s.handle("GET /v1/conversations/{id}/events", s.auth(s.conversationEvents))
	s.handle("GET /v1/inbox/events", s.auth(s.inboxEvents))
	s.handle("GET /v1/webhooks/deliveries", s.auth(s.webhookDeliveries))
	s.handle("GET /v1/history", s.auth(s.serveHistory))
	s.handle("GET /v1/audit/export", s.auth(s.exportAudit))
	s.startEvents()
	s.startWebhooks()
	s.initWeb()
	s.sweeper = s.startSweeper()
	s.recoverer = s.startRecovery()
	return s, nil
}

func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.routes = append(s.routes, pattern)
	s.mux.HandleFunc(pattern, h)
}

// Routes returns the patterns of the API the server serves, such as
// "GET /v1/inbox", in registration order. The web pages (see docs/API.md)
// are not among them.
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

// Close stops the server from accepting requests: later ones are answered
// with 503 (GET /readyz then names the check "server" as closing). It
// ends the event streams, unsubscribes from the broker, stops the
// background expiry of pauses and the background settling of
// idempotency keys, and waits for them to return. It does not
// close the agents' clients or stores, nor the broker, which the caller
// owns. Close is idempotent and returns nil.
func (s *Server) Close() error {
	if !s.closed.Swap(true) {
		s.ops.pausesOpen.remove(s)
		s.stopEvents()
		s.stopSweeper()
		s.stopRecovery()
		s.stopWebhooks()
		s.settling.stop()
	}
	return nil
}

// serve answers a request once [Server.ServeHTTP] has prepared it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.closed.Load() && r.URL.Path != "/readyz" {
		writeError(w, http.StatusServiceUnavailable, codeClosed, "the server is closed")
		return
	}
	if s.crossOrigin(w, r) {
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// noRoute answers a request no pattern matches: 405 when the path exists
// with another method, 404 otherwise.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := s.mux.Handler(r2); p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, "method "+r.Method+" is not allowed here")
		return
	}
	writeError(w, http.StatusNotFound, codeNotFound, "no such endpoint")
}

// auth wraps h with API key authentication, or a signed-in browser's
// session cookie: h gets the request's principal.
func (s *Server) auth(h func(http.ResponseWriter, *http.Request, *toolgate.Principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cookieAuth(w, r, h) {
			return
		}
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || key == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
			writeError(w, http.StatusUnauthorized, codeUnauthorized, "an Authorization: Bearer API key is required")
			return
		}
		p := s.keyPrincipal(key)
		if p == nil && s.cfg.Tokens != nil && looksLikeJWT(key) {
			p = s.verifyToken(w, r, key)
			if p == nil {
				return
			}
		}
		if p == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, codeUnauthorized, "unknown API key")
			return
		}
		notePrincipal(r.Context(), p)
		h(w, r, p)
	}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// conversationJSON is a conversation in lists.
type conversationJSON struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
}

func convJSON(c *conversation) conversationJSON {
	return conversationJSON{ID: c.ID, Agent: c.Agent, Owner: c.Owner.ID, CreatedAt: c.CreatedAt}
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	var in struct {
		Agent string `json:"agent"`
	}
	if !s.decode(w, r, &in, true) {
		return
	}
	if in.Agent == "" && len(s.cfg.Agents) == 1 {
		for name := range s.cfg.Agents {
			in.Agent = name
		}
	}
	a := s.cfg.Agents[in.Agent]
	if a == nil {
		writeError(w, http.StatusUnprocessableEntity, codeUnknownAgent, fmt.Sprintf("no agent named %q", in.Agent))
		return
	}
	if a.RequesterRoles != nil && !hasRole(p, a.RequesterRoles) {
		writeError(w, http.StatusForbidden, codeForbidden, "your roles may not start conversations with agent "+in.Agent)
		return
	}
	c := &conversation{ID: newConversationID(), Agent: in.Agent, Owner: *p, CreatedAt: now()}
	if err := s.cfg.Records.CreateConversation(r.Context(), c); err != nil {
		s.internal(w, r, err)
		return
	}
	// The record as the store gives it back, so that the turns posted to
	// this instance next need not read it.
	s.convs.put(storedConversation(c))
	w.Header().Set("Location", "/v1/conversations/"+c.ID)
	writeJSON(w, http.StatusCreated, convJSON(c))
}

// canRead reports whether p may see conversation c.
func (s *Server) canRead(p *toolgate.Principal, c *conversation) bool {
	return c.Owner.ID == p.ID || hasRole(p, s.cfg.ReadAllRoles)
}

// pathConversation returns the conversation the request's {id} names
// when p may access it — it may read it, or may also pass when also is not
// nil and says so — and answers 404 (or 500 on a store failure) itself
// otherwise, returning nil.
func (s *Server) pathConversation(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, also func(*conversation) bool) *conversation {
	c, err := s.conversation(r.Context(), r.PathValue("id"))
	if err != nil {
		s.internal(w, r, err)
		return nil
	}
	if c == nil || !(s.canRead(p, c) || also != nil && also(c)) {
		writeError(w, http.StatusNotFound, codeNotFound, "no such conversation")
		return nil
	}
	return c
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	params := &records.ListParams{After: r.URL.Query().Get("after")}
	if !hasRole(p, s.cfg.ReadAllRoles) {
		params.Owner = p.ID
	}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > records.MaxLimit {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf("limit must be a whole number from 1 to %d", records.MaxLimit))
			return
		}
		params.Limit = n
	}
	page, err := s.cfg.Records.ListConversations(r.Context(), params)
	if errors.Is(err, records.ErrInvalid) {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "after is not the cursor of a page")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := struct {
		Conversations []conversationJSON `json:"conversations"`
		Next          string             `json:"next,omitempty"`
	}{Conversations: []conversationJSON{}, Next: page.Next}
	for i := range page.Conversations {
		out.Conversations = append(out.Conversations, convJSON(&page.Conversations[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// callJSON is one call of a paused reply.
type callJSON struct {
	Key       string `json:"key"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Awaiting is true for the calls that need a decision; the others run
	// when the pause is resumed, unless a decision denies them.
	Awaiting bool `json:"awaiting"`
}

// pauseJSON is an open pause.
type pauseJSON struct {
	ID        string    `json:"id"`
	Awaiting  []string  `json:"awaiting"`
	Claimed   bool      `json:"claimed,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the pause expires unless decided; nil: never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Calls     []callJSON `json:"calls"`
	// Approval is the first approval of a pause that waits for a second
	// approver (two-person rule); nil otherwise.
	Approval *approvalJSON `json:"approval,omitempty"`
	// KeysConfusable is true when a call's id looks like a positional key
	// ("#1") or is another call's key: a client that decides by id could
	// decide the wrong call, so decide by the keys of Calls.
	KeysConfusable bool `json:"keys_confusable,omitempty"`
	// Deciders says who decides the pause, in the conversation view
	// (decidectx.go); nil elsewhere.
	Deciders *decidersJSON `json:"deciders,omitempty"`
}

// openPause returns the conversation's open pause and its reply, or nils.
func openPause(conv *toolgate.Conversation) (*pauseJSON, *toolgate.AssistantMessage) {
	pr := conv.Pause
	if pr == nil || pr.Index < 0 || pr.Index >= len(conv.Messages) {
		return nil, nil
	}
	reply, ok := conv.Messages[pr.Index].(*toolgate.AssistantMessage)
	if !ok {
		return nil, nil
	}
	keys := reply.CallKeys()
	out := &pauseJSON{ID: pr.ID, Awaiting: slices.Clone(pr.Awaiting), Claimed: pr.Claimed, CreatedAt: pr.CreatedAt.UTC()}
	for i, c := range reply.ToolCalls {
		out.Calls = append(out.Calls, callJSON{Key: keys[i], Tool: c.Name, Arguments: c.Arguments, Awaiting: slices.Contains(pr.Awaiting, keys[i])})
	}
	out.KeysConfusable = keysConfusable(reply, keys)
	return out, reply
}

// keysConfusable reports whether a call id of reply looks like a
// positional key or names another call's key (keys are reply's).
func keysConfusable(reply *toolgate.AssistantMessage, keys []string) bool {
	for i, c := range reply.ToolCalls {
		if strings.HasPrefix(c.ID, "#") {
			return true
		}
		for j, k := range keys {
			if j != i && c.ID != "" && c.ID == k {
				return true
			}
		}
	}
	return false
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	c := s.pathConversation(w, r, p, s.decidesOpenPause(r.Context(), p))
	if c == nil {
		return
	}
	reveal, ok := revealParam(w, r)
	if !ok {
		return
	} else if reveal && !s.mayReveal(p, c.Agent) {
		forbidReveal(w)
		return
	}
	conv, err := s.expireIfDue(r.Context(), c)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	pause, reply := openPause(conv)
	s.setExpiry(c, conv, pause)
	if pause != nil {
		pause.Deciders = s.deciders(p, c, pause, reply)
	}
	if err := s.setApproval(r.Context(), c, pause); err != nil {
		s.internal(w, r, err)
		return
	}
	msgs, err := s.showConversation(r.Context(), c, p, conv.Messages, pause, reply, reveal)
	if err == nil {
		msgs, err = s.viewReasoning(r.Context(), c, p, msgs, reveal)
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if msgs == nil {
		msgs = []toolgate.Message{}
	}
	decisions, err := s.cfg.Records.Decisions(r.Context(), c.ID)
	if err == nil {
		decisions, err = s.viewRecords(r.Context(), c, p, decisions, reveal)
	}
	if err == nil && pause != nil {
		err = s.viewApproval(r.Context(), c, p, pause.Approval, reveal)
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		conversationJSON
		Messages  []any            `json:"messages"`
		Pause     *pauseJSON       `json:"pause"`
		Decisions []DecisionRecord `json:"decisions"`
		Revealed  bool             `json:"revealed,omitempty"`
	}{convJSON(c), viewContent(msgs, s.cfg.Agents[c.Agent].ShowReasoning), pause, decisions, reveal})
}

// turnJSON is the outcome of a turn: an answer, or a pause.
type turnJSON struct {
	ConversationID string `json:"conversation_id"`
	// Status is "completed" or "paused".
	Status string     `json:"status"`
	Text   string     `json:"text"`
	Pause  *pauseJSON `json:"pause,omitempty"`
	// Decision is the decision that resumed the turn: the person's, for a
	// decision's response, or the last sticky one when live grants
	// resumed the turn by themselves.
	Decision *DecisionRecord `json:"decision,omitempty"`
	// Grants are the sticky grants the decision made.
	Grants []grantJSON `json:"grants,omitempty"`
}

// maxStickyResumes bounds how many pauses in a row live sticky grants
// resume by themselves within one request; a pause after that waits.
const maxStickyResumes = 16

// turnResult builds a turn's outcome; a paused one is read back from the
// store, which holds the pause's id, and put in the index of open pauses.
// A pause whose awaiting calls live sticky grants all cover is resumed at
// once, and the outcome is that of the resumed turn.
func (s *Server) turnResult(ctx context.Context, c *conversation, resp *toolgate.Response) (*turnJSON, error) {
	out := &turnJSON{ConversationID: c.ID}
	for range maxStickyResumes + 1 {
		out.Status, out.Text = "completed", resp.Text()
		if !resp.Paused() {
			return out, nil
		}
		conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		out.Status = "paused"
		pause, reply := openPause(conv)
		out.Pause = pause
		if pause == nil || pause.Claimed {
			// Already being resolved elsewhere.
			return out, nil
		}
		if !pausedInTx(ctx, pause.ID) {
			if err := s.indexPause(ctx, c, conv); err != nil {
				return nil, err
			}
			s.auditPaused(ctx, c)
		}
		s.setExpiry(c, conv, out.Pause)
		s.kickSweeper()
		next, rec, err := s.resumeSticky(ctx, c, conv, pause, reply)
		if err != nil || next == nil {
			return out, err
		}
		resp, out.Decision = next, rec
		out.Pause = nil
	}
	return out, nil
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	c := s.pathConversation(w, r, p, nil)
	if c == nil {
		return
	}
	a := s.cfg.Agents[c.Agent]
	if c.Owner.ID != p.ID || (a.RequesterRoles != nil && !hasRole(p, a.RequesterRoles)) {
		writeError(w, http.StatusForbidden, codeForbidden, "only the conversation's owner may post to it")
		return
	}
	var in struct {
		Input string         `json:"input"`
		Parts jsontext.Value `json:"parts"`
	}
	if !s.decodeLimit(w, r, &in, false, s.messageBodyLimit()) {
		return
	}
	parts, problem := s.postedParts(in.Parts)
	if problem != nil {
		writeError(w, problem.status, problem.code, problem.message)
		return
	}
	if strings.TrimSpace(in.Input) == "" && len(parts) == 0 {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "input must not be empty")
		return
	}
	// A pause that outlived its time-to-live no longer blocks new input.
	if s.ttl(c.Agent) > 0 {
		if _, err := s.expireIfDue(r.Context(), c); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	r = r.WithContext(s.withTx(r.Context(), c, nil))
	if wantsEvents(r) {
		s.streamMessage(w, r, c, a, p, in.Input, parts)
		return
	}
	// The turn runs with the principal as this request authenticated it.
	resp, err := s.call(r.Context(), c, &toolgate.CallParams{ConversationID: c.ID, Principal: p, Input: in.Input, Parts: parts})
	if problem, ok := callPartsProblem(err); ok {
		writeError(w, problem.status, problem.code, problem.message)
		return
	}
	switch {
	case errors.Is(err, toolgate.ErrPauseOpen):
		s.reindex(r.Context(), c)
		writeError(w, http.StatusConflict, codePauseOpen, "the conversation waits for a decision on its open pause")
		return
	case errors.Is(err, toolgate.ErrConflict):
		writeError(w, http.StatusConflict, codeConflict, "another turn of the conversation ran at the same time; retry")
		return
	case err != nil:
		s.publish(r.Context(), c.ID, EventAppended, "")
		if status, body, ok := s.denial(r, err); ok {
			writeJSON(w, status, body)
			return
		}
		s.internal(w, r, err)
		return
	}
	out, err := s.turnResult(r.Context(), c, resp)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.publishTurn(r.Context(), out)
	writeJSON(w, http.StatusOK, out)
}

// mayDecide returns "" when p may decide the awaiting calls of reply in c,
// or the error code and message of a refusal.
func (s *Server) mayDecide(p *toolgate.Principal, c *conversation, reply *toolgate.AssistantMessage, awaiting []string) (code, msg string) {
	keys := reply.CallKeys()
	for i, call := range reply.ToolCalls {
		if !slices.Contains(awaiting, keys[i]) {
			continue
		}
		if allowed, selfRefused := s.mayDecideTool(p, c, call.Name); !allowed {
			if selfRefused {
				return codeOwnCall, fmt.Sprintf("you may not decide your own call %q of tool %s", keys[i], capped(call.Name))
			}
			return codeForbidden, fmt.Sprintf("your roles may not decide calls of tool %s", capped(call.Name))
		}
	}
	return "", ""
}

// mayDecideTool is the rule of who decides: it reports whether some
// approval rule of c's agent covering tool lets p decide its calls, and,
// when none does, whether one would but for p owning c (a rule that does
// not let requesters decide their own calls).
func (s *Server) mayDecideTool(p *toolgate.Principal, c *conversation, tool string) (allowed, selfRefused bool) {
	if p == nil {
		return false, false
	}
	self := s.sameIdentity(c.Owner.ID, p.ID)
	for _, rule := range s.cfg.Agents[c.Agent].Approvals {
		if !rule.covers(tool) {
			continue
		}
		switch {
		case self && rule.RequesterMayDecide:
			return true, false
		case self:
			selfRefused = selfRefused || hasRole(p, rule.Roles)
		case hasRole(p, rule.Roles):
			return true, false
		}
	}
	return false, selfRefused
}

// decider returns the check of [Server.mayDecideTool] for p deciding in c,
// as the core takes it ([toolgate.ResumeTurnParams.MayDecide]): every
// resumption the server starts for a decider hands it over, so that the
// core refuses a call whose decider the rule refuses even when a code path
// of the server did not check first. A nil p decides nothing.
func (s *Server) decider(p *toolgate.Principal, c *conversation) func(toolgate.ToolCall) bool {
	return func(call toolgate.ToolCall) bool {
		ok, _ := s.mayDecideTool(p, c, call.Name)
		return ok
	}
}

// approver reports whether p holds a role of some approval rule of agent.
func (s *Server) approver(p *toolgate.Principal, agent string) bool {
	for _, rule := range s.cfg.Agents[agent].Approvals {
		if hasRole(p, rule.Roles) {
			return true
		}
	}
	return false
}

// inboxItem is a pause the caller may decide.
type inboxItem struct {
	ConversationID string     `json:"conversation_id"`
	Agent          string     `json:"agent"`
	PauseID        string     `json:"pause_id"`
	Requester      string     `json:"requester"`
	Awaiting       []string   `json:"awaiting"`
	Calls          []callJSON `json:"calls"`
	CreatedAt      time.Time  `json:"created_at"`
	// ExpiresAt is when the pause expires unless decided; nil: never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Revealed is true when Calls show original values, not tokens.
	Revealed bool `json:"revealed,omitempty"`
	// Approval is the first approval, when the pause waits for a second
	// approver.
	Approval *approvalJSON `json:"approval,omitempty"`
	// StickyMaxMinutes is the most minutes the caller may ask for in a
	// sticky grant with decisions that allow every awaiting call (see
	// [Server.stickyMinutes]); 0, omitted: none.
	StickyMaxMinutes int64 `json:"sticky_max_minutes,omitempty"`
	// MayReveal is true when the caller holds a reveal role of the agent
	// (?reveal=true shows them the originals).
	MayReveal bool `json:"may_reveal,omitempty"`
	// KeysConfusable is [pauseJSON.KeysConfusable].
	KeysConfusable bool `json:"keys_confusable,omitempty"`
	// MaxDenyMessage is the longest deny message accepted, in characters
	// ([Config.MaxDenyMessage]).
	MaxDenyMessage int `json:"max_deny_message"`
	// Context is what the approver needs to decide (decidectx.go).
	Context *pauseContextJSON `json:"context"`
}

func (s *Server) inbox(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	reveal, ok := revealParam(w, r)
	if !ok {
		return
	} else if reveal && !s.mayRevealAny(p) {
		forbidReveal(w)
		return
	}
	items := []inboxItem{}
	// Only the pauses p could decide a call of are read: those awaiting a
	// tool of an approval rule where p holds a role, or of a rule that
	// lets requesters decide their own calls (then only of p's own
	// conversations).
	scopes := s.inboxScopes(p)
	var entries []records.Pending
	for params := (&records.ListParams{Limit: records.MaxLimit, Scopes: scopes}); len(scopes) > 0; {
		page, err := s.cfg.Records.ListPending(r.Context(), params)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		entries = append(entries, page.Pending...)
		if page.Next == "" {
			break
		}
		params.After = page.Next
	}
	own := map[string]bool{} // agent → only p's own conversations
	for name, a := range s.cfg.Agents {
		switch {
		case s.approver(p, name):
			own[name] = false
		case slices.ContainsFunc(a.Approvals, func(r ApprovalRule) bool { return r.RequesterMayDecide }):
			own[name] = true
		}
	}
	for _, e := range entries {
		onlyOwn, ok := own[e.Agent]
		if !ok {
			continue // nothing p may decide, or another server's agent on a shared database
		}
		c, err := s.conversation(r.Context(), e.ConversationID)
		if err == nil && c != nil && onlyOwn && !s.sameIdentity(c.Owner.ID, p.ID) {
			continue
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if c == nil {
			continue
		}
		conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(r.Context(), c.ID)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		pause, reply := openPause(conv)
		switch {
		case pause == nil:
			s.dropStale(r.Context(), c, e.PauseID) // resolved: a stale entry
			continue
		case pause.ID != e.PauseID, e.Tools == nil:
			// Another pause opened since, or an entry of an earlier
			// version, which did not keep the awaiting tools.
			s.reindex(r.Context(), c)
		}
		if pause.Claimed {
			continue
		}
		if s.due(c, conv) {
			// Expired pauses leave the inbox, whether or not this
			// request is the one that expires them.
			if _, err := s.expire(r.Context(), c, pause.ID); err != nil {
				s.logger.ErrorContext(r.Context(), "server: expiry failed", "conversation", c.ID, "pause", pause.ID, "err", logcap.Error(err))
				s.kickSweeper()
			}
			continue
		}
		s.setExpiry(c, conv, pause)
		if code, _ := s.mayDecide(p, c, reply, pause.Awaiting); code != "" {
			continue
		}
		if err := s.setApproval(r.Context(), c, pause); err != nil {
			s.internal(w, r, err)
			return
		}
		revealed, err := s.showInboxPause(r.Context(), c, p, pause, reply, reveal)
		if err == nil {
			err = s.viewApproval(r.Context(), c, p, pause.Approval, revealed)
		}
		var pc *pauseContextJSON
		if err == nil {
			pc, err = s.pauseContext(r.Context(), c, p, conv, pause, reply, revealed)
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		items = append(items, inboxItem{ConversationID: c.ID, Agent: c.Agent, PauseID: pause.ID, Requester: c.Owner.ID,
			Awaiting: pause.Awaiting, Calls: pause.Calls, CreatedAt: pause.CreatedAt, ExpiresAt: pause.ExpiresAt, Revealed: revealed, Approval: pause.Approval,
			StickyMaxMinutes: s.stickyMinutes(p, c, reply, pause.Awaiting), MayReveal: s.mayReveal(p, c.Agent),
			KeysConfusable: pause.KeysConfusable, MaxDenyMessage: s.cfg.MaxDenyMessage, Context: pc})
	}
	slices.SortStableFunc(items, func(a, b inboxItem) int { return a.CreatedAt.Compare(b.CreatedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"pauses": items})
}

// decisionIn is one decision of a request body. Unlike
// [toolgate.Decision]'s own decoding, unknown fields are refused.
type decisionIn struct {
	Key     string           `json:"key"`
	Verdict toolgate.Verdict `json:"verdict"`
	Message string           `json:"message,omitempty"`
	// Arguments, on an allow, are the approver's edit (see edit.go).
	Arguments jsontext.Value `json:"arguments,omitempty"`
}

// decisionRequest is the body of a decision request.
type decisionRequest struct {
	Decisions []decisionIn `json:"decisions"`
	// Sticky, with an allow, also grants a sticky approval.
	Sticky *stickyIn `json:"sticky,omitempty"`
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
	ctx := r.Context()
	// The record and the conversation, in one round trip where the store
	// can.
	c, conv, err := s.loadConversation(ctx, r.PathValue("id"))
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if c == nil || !(s.canRead(p, c) || s.approver(p, c.Agent)) {
		writeError(w, http.StatusNotFound, codeNotFound, "no such conversation")
		return
	}
	pauseID := r.PathValue("pause")
	var in decisionRequest
	if !s.decode(w, r, &in, false) {
		return
	}
	a := s.cfg.Agents[c.Agent]
	pause, reply := openPause(conv)
	if pause == nil || pause.ID != pauseID || pause.Claimed {
		rec, err := s.decision(ctx, c.ID, pauseID)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if rec != nil || (pause != nil && pause.ID == pauseID) {
			s.conflict(w, r, p, c, rec, conv)
			return
		}
		writeError(w, http.StatusNotFound, codePauseNotFound, fmt.Sprintf("pause %q is not the conversation's open pause", pauseID))
		return
	}
	if s.due(c, conv) {
		// Too late: the pause expires now, unless someone else took it
		// first; either way this decision decides nothing.
		if _, err := s.expire(ctx, c, pauseID); err != nil {
			s.kickSweeper()
			s.internal(w, r, err)
			return
		}
		rec, err := s.decision(ctx, c.ID, pauseID)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		s.conflict(w, r, p, c, rec, conv)
		return
	}
	if code, msg := s.mayDecide(p, c, reply, pause.Awaiting); code != "" {
		writeError(w, http.StatusForbidden, code, msg)
		return
	}
	if ref := s.checkRights(p, c, reply, pause, in.Decisions); ref != nil {
		s.refuseDecision(w, r, c, conv, p, ref)
		return
	}
	// The turn resumes for the conversation's owner as they are now.
	owner := s.runnableOwner(c)
	if owner == nil {
		s.refuseDecision(w, r, c, conv, p, &refusal{status: http.StatusForbidden, code: codeOwnerUnavailable,
			msg: "the conversation's owner may no longer run turns of this agent (or is not known to this server now); nothing ran"})
		return
	}
	decisions := make([]toolgate.Decision, 0, len(reply.ToolCalls))
	decided := make(map[string]bool, len(in.Decisions))
	for _, d := range in.Decisions {
		dec := d.decision()
		decisions = append(decisions, dec)
		decided[d.Key] = true
	}
	// Calls that await no decision run unless the request denies them.
	for _, call := range pause.Calls {
		if !call.Awaiting && !decided[call.Key] {
			decisions = append(decisions, toolgate.Allow(call.Key))
		}
	}
	if err := a.Client.CheckDecisions(reply, decisions); err != nil {
		s.decisionError(w, r, err)
		return
	}
	grants, code, msg := s.stickyGrants(p, c, reply, pause.Awaiting, decisions, in.Sticky)
	if code != "" {
		writeError(w, http.StatusUnprocessableEntity, code, msg)
		return
	}
	rec := &DecisionRecord{ConversationID: c.ID, PauseID: pauseID, Source: records.SourcePerson, DecidedBy: p.ID, DecidedAt: now(),
		Decisions: decisions, Edits: edits(reply, decisions), Outcome: outcomeDeciding}
	if s.needsSecondApprover(c, reply, pause.Awaiting, decisions) {
		first, done := s.approve(w, r, p, c, pauseID, decisions)
		if done {
			return
		}
		rec.Approvers = []string{first, p.ID}
	}
	// The turn runs for the conversation's owner; the decider is recorded.
	ctx, old, err := s.beginDecision(ctx, c, conv, rec, person(p), &resumption{pauseID: pauseID, reply: reply, actor: person(p), decisions: decisions})
	switch {
	case err != nil:
		s.internal(w, r, err)
		return
	case old != nil:
		s.conflict(w, r, p, c, old, conv)
		return
	}
	r = r.WithContext(ctx)
	params := &toolgate.ResumeTurnParams{ConversationID: c.ID, PauseID: pauseID, Principal: owner, Decisions: decisions, Conversation: conv,
		MayDecide: s.decider(p, c)}
	audited := s.auditResolution(ctx, c, conv, person(p), params)
	if wantsEvents(r) {
		s.streamDecision(w, r, c, a, p, rec, params, grants, audited)
		return
	}
	resp, err := s.resume(ctx, c, pause.Awaiting, params)
	audited(err)
	if err != nil {
		if taken, prior := s.resumeFailed(ctx, c, pauseID, err); taken {
			s.conflictOrNone(w, r, p, c, prior, conv)
			return
		}
		if s.carriedOut(w, r, p, rec) {
			return
		}
		s.decisionError(w, r, err)
		return
	}
	out, err := s.decided(ctx, c, p, rec, grants, resp)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// conflictOrNone answers 409 with the decision prior that came first, as
// [Server.conflict] does, or without one when it is not known.
func (s *Server) conflictOrNone(w http.ResponseWriter, r *http.Request, p *toolgate.Principal, c *conversation, prior *DecisionRecord, conv *toolgate.Conversation) {
	if prior == nil {
		s.alreadyDecided(w, nil)
		return
	}
	s.conflict(w, r, p, c, prior, conv)
}

// decided records that the decision rec, which a person made, resumed its
// pause into resp: the outcome (which also takes the pause out of the
// index), the event, the sticky grants it makes, and the turn's outcome
// with the decision record and the grants.
func (s *Server) decided(ctx context.Context, c *conversation, decider *toolgate.Principal, rec *DecisionRecord, grants []*records.Grant, resp *toolgate.Response) (*turnJSON, error) {
	finished := finishedInTx(ctx) || s.finish(ctx, c.ID, rec.PauseID, outcomeDecided) == nil
	s.publish(ctx, c.ID, EventDecided, rec.PauseID)
	if err := s.addGrants(ctx, grants); err != nil {
		return nil, err
	}
	out, err := s.turnResult(ctx, c, resp)
	if err != nil {
		return nil, err
	}
	s.publishTurn(ctx, out)
	switch {
	case out.Decision != nil: // a sticky resumption's, which came after
	case finished:
		// The record as stored: Begin keeps what it is given.
		rec.Outcome = outcomeDecided
		out.Decision = rec
	default:
		if out.Decision, err = s.decision(ctx, c.ID, rec.PauseID); err != nil {
			return nil, err
		}
	}
	for _, g := range grants {
		out.Grants = append(out.Grants, grantOut(g))
	}
	if out.Decision, err = s.viewRecord(ctx, c, decider, out.Decision, false); err != nil {
		return nil, err
	}
	return out, nil
}

// finishFailed records the outcome of a resumption of pause pauseID of c
// that failed: the record is forgotten, and the pause indexed again, when
// it is still open and unclaimed, so that it can be decided again;
// otherwise the outcome is "failed" and the pause leaves the index.
func (s *Server) finishFailed(ctx context.Context, c *conversation, pauseID string) {
	ctx = context.WithoutCancel(ctx)
	outcome := s.failedOutcome(ctx, s.cfg.Agents[c.Agent], c.ID, pauseID)
	// Setting an outcome may be repeated: retried while the store's
	// connections are dead (see settling).
	settling(ctx, func() (struct{}, error) { return struct{}{}, s.finish(ctx, c.ID, pauseID, outcome) })
	if outcome == outcomeFailed {
		// The pause stays claimed, and indexed: the recovery of claims
		// (recovery.go) reads the index and finishes it after the lease.
		s.publish(ctx, c.ID, EventDecided, pauseID)
		return
	}
	s.reindex(ctx, c)
	// A pause released again may be due: let the sweeper look.
	s.kickSweeper()
}

// reindex puts the open pause of c, if any, in the index again, logging a
// failure: the index may have missed it (a process that died between
// storing the pause and indexing it) or dropped it.
func (s *Server) reindex(ctx context.Context, c *conversation) {
	conv, err := s.cfg.Agents[c.Agent].Client.Store().Load(ctx, c.ID)
	if err == nil && conv.Pause != nil && !conv.Pause.Claimed {
		err = s.indexPause(ctx, c, conv)
	}
	if err != nil {
		s.logger.ErrorContext(ctx, "server: indexing an open pause failed", "conversation", c.ID, "err", logcap.Error(err))
	}
}

// failedOutcome returns the outcome of a resumption that failed: "" (forget
// the attempt) when the pause is still open and unclaimed, so that it can
// be decided again, and "failed" otherwise.
func (s *Server) failedOutcome(ctx context.Context, a *Agent, convID, pauseID string) records.Outcome {
	conv, err := settling(ctx, func() (*toolgate.Conversation, error) { return a.Client.Store().Load(ctx, convID) })
	if err == nil && conv.Pause != nil && conv.Pause.ID == pauseID && !conv.Pause.Claimed {
		return records.OutcomeNone
	}
	return outcomeFailed
}

// alreadyDecided answers 409 with the first decision's record, if known:
// "expired" when the pause expired, "already_decided" otherwise.
func (s *Server) alreadyDecided(w http.ResponseWriter, rec *DecisionRecord) {
	if rec != nil && rec.Outcome == outcomeExpired {
		writeExpired(w, rec)
		return
	}
	writeJSON(w, http.StatusConflict, struct {
		errorJSON
		Decision *DecisionRecord `json:"decision,omitempty"`
	}{errorJSON{Error: codeAlreadyDecided, Message: "the pause was already decided; nothing ran for this request"}, rec})
}

// decisionError answers 422 for invalid decisions (403 for a decider or a
// verdict the core refuses, with the problem as the code: see
// [decisionStatus]), 403 or 422 for an authorization denial, and 500
// otherwise.
func (s *Server) decisionError(w http.ResponseWriter, r *http.Request, err error) {
	var de *toolgate.DecisionError
	if errors.As(err, &de) {
		status, code := decisionStatus(de)
		if code != codeInvalidDecisions {
			s.logger.WarnContext(r.Context(), "server: decisions refused by the gate", "method", r.Method, "path", capped(r.URL.Path),
				"problem", string(de.Problem), "call", capped(de.Key), "tool", capped(de.Tool))
		}
		field, hint := argumentsHint(de)
		writeJSON(w, status, struct {
			errorJSON
			Problem toolgate.DecisionProblem `json:"problem"`
			Key     string                   `json:"key,omitempty"`
			// Field and Hint explain arguments a tool's schema refuses
			// (hint.go).
			Field string `json:"field,omitempty"`
			Hint  string `json:"hint,omitempty"`
		}{errorJSON{Error: code, Message: de.Error()}, de.Problem, de.Key, field, hint})
		return
	}
	if status, body, ok := s.denial(r, err); ok {
		writeJSON(w, status, body)
		return
	}
	s.internal(w, r, err)
}

// decisionStatus returns the status and error code answering de: 403
// "not_decider" and "not_awaited" when the gate refuses who decided or a
// verdict on a call that awaited none, 422 "edit_needs_confirmation" for
// an edit the confirmation policy gates itself, 422 "invalid_decisions"
// otherwise.
func decisionStatus(de *toolgate.DecisionError) (int, string) {
	switch de.Problem {
	case toolgate.ProblemNotDecider, toolgate.ProblemNotAwaited:
		return http.StatusForbidden, string(de.Problem)
	case toolgate.ProblemEditNeedsConfirmation:
		return http.StatusUnprocessableEntity, string(de.Problem)
	}
	return http.StatusUnprocessableEntity, codeInvalidDecisions
}

// decode reads a JSON body into v strictly: one value, in valid UTF-8, no
// unknown members, no member twice, names matched exactly (a case variant
// such as "Agent" is an unknown member), within the size limit. An empty body is accepted when emptyOK. It
// answers the error itself and returns false on failure.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	return s.decodeLimit(w, r, v, emptyOK, s.cfg.MaxBodyBytes)
}

// decodeLimit is decode with a body limit of its own.
func (s *Server) decodeLimit(w http.ResponseWriter, r *http.Request, v any, emptyOK bool, limit int64) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, codeBodyTooLarge, fmt.Sprintf("the body exceeds %d bytes", mbe.Limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, codeInvalidJSON, "cannot read the body")
		return false
	case len(body) == 0 && emptyOK:
		return true
	}
	if err := json.Unmarshal(body, v, json.RejectUnknownMembers(true)); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) && errors.Is(se.Err, json.ErrUnknownName) {
			writeError(w, http.StatusBadRequest, codeUnknownField, fmt.Sprintf("unknown field %s", se.JSONPointer))
			return false
		}
		writeError(w, http.StatusBadRequest, codeInvalidJSON, "the body is not the JSON object expected: "+strings.TrimPrefix(err.Error(), "json: "))
		return false
	}
	return true
}

func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	if s.timedOut(w, r, err) {
		return
	}
	if body, ok := modelError(err); ok {
		s.logger.ErrorContext(r.Context(), "server: the model failed", "method", r.Method, "path", capped(r.URL.Path), "kind", body.Kind, "err", logcap.Error(err))
		writeJSON(w, http.StatusBadGateway, body)
		return
	}
	s.logger.ErrorContext(r.Context(), "server: request failed", "method", r.Method, "path", capped(r.URL.Path), "err", logcap.Error(err))
	writeError(w, http.StatusInternalServerError, codeInternal, "internal error")
}
