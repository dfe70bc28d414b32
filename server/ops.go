package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/logcap"
	"github.com/toolgate/toolgate/storekit"
	"github.com/toolgate/toolgate/telemetry"
)

// Operations: every request passes [Server.ServeHTTP], which gives it a
// request id, limits its body, bounds its time, and records it as a span,
// in the histogram toolgate_http_request_duration_seconds and as one log
// line. GET /readyz and GET /metrics are registered by New.

// The error codes of operations (see errors.go).
const (
	codeTimeout = "timeout" // 504: the request outlived its timeout
	// 503: a store operation outlived the store's deadline
	codeStoreUnavailable = "store_unavailable"
	codeNotReady         = "not_ready" // 503: /readyz: a check failed
)

// Request ids: one given in X-Request-Id is kept when it is at most
// maxRequestIDLen characters of [A-Za-z0-9._:-]; otherwise, or when none is
// given, the server makes one.
const (
	requestIDHeader = "X-Request-Id"
	maxRequestIDLen = 128
)

// readyTimeout bounds the store pings of /readyz.
const readyTimeout = 5 * time.Second

// decideRoute is the pattern of decisions, whose 409 answers count as
// "conflict" decisions.
const decideRoute = "POST /v1/conversations/{id}/pauses/{pause}/decisions"

// The outcomes of toolgate_decisions_total.
const (
	decisionAllowed  = "allowed"  // a decision allowed every awaiting call
	decisionDenied   = "denied"   // a decision denied every awaiting call
	decisionPartial  = "partial"  // a decision allowed some awaiting calls and denied others
	decisionExpired  = "expired"  // the pause expired
	decisionConflict = "conflict" // a decision came after the pause was decided or expired (409)
	decisionFailed   = "failed"   // the resumed turn failed
)

// ops is the server's operational state.
type ops struct {
	// fixed at creation
	tel            *telemetry.Telemetry
	tracer         trace.Tracer
	requests       *prometheus.HistogramVec // route, method, code
	decisions      *prometheus.CounterVec   // agent, outcome
	pausesOpen     *pausesGauge             // agent; shared by the servers of one registry
	requestTimeout time.Duration
	turnTimeout    time.Duration
}

// opsProblems returns the problems of the operations settings.
func (c *Config) opsProblems() []error {
	var errs []error
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("request_timeout %v is negative", c.RequestTimeout))
	}
	if c.TurnTimeout < 0 {
		errs = append(errs, fmt.Errorf("turn_timeout %v is negative", c.TurnTimeout))
	}
	return errs
}

// newOps returns the operational state of a server with configuration cfg.
func newOps(cfg *Config) *ops {
	tel := cfg.Telemetry
	if tel == nil {
		tel = telemetry.New(nil)
	}
	reg := tel.Registry()
	o := &ops{
		tel:            tel,
		tracer:         tel.Tracer(),
		requestTimeout: cmp(cfg.RequestTimeout, DefaultRequestTimeout),
		turnTimeout:    cmp(cfg.TurnTimeout, DefaultTurnTimeout),
	}
	o.requests = telemetry.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolgate_http_request_duration_seconds",
		Help:    "How long the approval service took to answer requests, by route pattern, method and status code.",
		Buckets: telemetry.HTTPBuckets(),
	}, []string{"route", "method", "code"}))
	o.decisions = telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_decisions_total",
		Help: "Pauses resolved, and decisions refused as too late, by agent and outcome (allowed, denied, partial, expired, conflict, failed).",
	}, []string{"agent", "outcome"}))
	o.pausesOpen = telemetry.Register(reg, newPausesGauge())
	return o
}

// cmp returns d, or def when d is 0.
func cmp(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// opsRoutes registers GET /readyz and, unless disabled, GET /metrics.
func (s *Server) opsRoutes() {
	s.handle("GET /readyz", s.readyz)
	if s.cfg.DisableMetrics {
		return
	}
	metrics := s.ops.tel.Handler()
	if s.cfg.MetricsRoles == nil {
		s.handle("GET /metrics", metrics.ServeHTTP)
		return
	}
	s.handle("GET /metrics", s.auth(func(w http.ResponseWriter, r *http.Request, p *toolgate.Principal) {
		if !hasRole(p, s.cfg.MetricsRoles) {
			writeError(w, http.StatusForbidden, codeForbidden, "your roles may not read the metrics")
			return
		}
		metrics.ServeHTTP(w, r)
	}))
}

// timeout returns how long a request of the route pattern may take: 0
// (no limit) for event streams, which end when the client or the server
// goes away, and for the audit log's export, which streams a log of any
// size.
func (o *ops) timeout(pattern string) time.Duration {
	switch {
	case strings.HasSuffix(pattern, "/events") || strings.HasSuffix(pattern, "/stream") || pattern == "GET /v1/audit/export":
		return 0
	case strings.HasPrefix(pattern, "POST ") && (strings.HasSuffix(pattern, "/messages") || strings.HasSuffix(pattern, "/decisions")):
		return o.turnTimeout
	}
	return o.requestTimeout
}

// requestInfo is what the log line of a request needs from its handler.
type requestInfo struct {
	id        string
	principal string // set by auth
}

type requestInfoKey struct{}

// RequestID returns the id of the request ctx belongs to, as the server
// answered it in the X-Request-Id header, or "" outside a request. The
// agents' tools get that context, so they can quote the id in their logs.
func RequestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// notePrincipal records who a request runs as, for its log line.
func notePrincipal(ctx context.Context, p *toolgate.Principal) {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.principal = p.ID
	}
}

// requestID returns the id given in a request header when it is
// acceptable, and a new one otherwise.
func requestID(given string) string {
	if given != "" && len(given) <= maxRequestIDLen && !strings.ContainsFunc(given, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':')
	}) {
		return given
	}
	return rand.Text()
}

// methods are the methods that are their own metric label; any other is
// "_OTHER", so that hostile methods do not make new series.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// labels returns the method and route labels of a request whose route
// pattern is pattern ("" when none matched).
func labels(method, pattern string) (string, string) {
	if !slices.Contains(methods, method) {
		method = "_OTHER"
	}
	if pattern == "" {
		return method, "unmatched"
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return method, path
	}
	return method, pattern
}

// probe reports whether route is one probed often (health, readiness,
// scrapes): its successful requests are logged at debug level.
func probe(route string) bool {
	return route == "/healthz" || route == "/readyz" || route == "/metrics"
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	_, pattern := s.mux.Handler(r)
	method, route := labels(r.Method, pattern)
	info := &requestInfo{id: requestID(r.Header.Get(requestIDHeader))}
	w.Header().Set(requestIDHeader, info.id)

	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	name := method
	attrs := []attribute.KeyValue{attribute.String("http.request.method", method)}
	if pattern != "" {
		name += " " + route
		attrs = append(attrs, attribute.String("http.route", route))
	}
	ctx, span := s.ops.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	defer span.End()
	ctx = context.WithValue(ctx, requestInfoKey{}, info)
	if d := s.ops.timeout(pattern); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	rw := &responseWriter{ResponseWriter: w}
	r = r.WithContext(ctx)
	// Every body is limited, whether or not its handler reads it.
	r.Body = http.MaxBytesReader(rw, r.Body, s.cfg.MaxBodyBytes)
	s.serveRecovering(rw, r)

	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(start)
	s.ops.requests.WithLabelValues(route, method, strconv.Itoa(status)).Observe(elapsed.Seconds())
	if pattern == decideRoute && status == http.StatusConflict {
		// The conversation's record is cached by the decision that read it.
		if c, err := s.conversation(context.WithoutCancel(ctx), r.PathValue("id")); err == nil && c != nil {
			s.ops.decision(c.Agent, decisionConflict)
		}
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(status))
	}
	level := slog.LevelInfo
	switch {
	case status >= 500:
		level = slog.LevelError
	case status < 400 && probe(route):
		level = slog.LevelDebug
	}
	s.logger.LogAttrs(ctx, level, "http request",
		slog.String("method", method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Duration("duration", elapsed),
		slog.String("principal", info.principal),
	)
}

// responseWriter records the status of a response. It passes flushes
// through and unwraps for [http.ResponseController], so that streams can
// flush and extend their write deadline.
type responseWriter struct {
	http.ResponseWriter
	status int // 0 until the header is written
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements [http.Flusher].
func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the underlying writer, for [http.ResponseController].
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// transient reports whether err says that the database did not serve a
// request for now (unavailable, or a statement's deadline ran out), so
// that the same request may succeed later.
func transient(err error) bool {
	return storekit.Unavailable(err) || errors.Is(err, context.DeadlineExceeded)
}

// timedOut answers 504 "timeout" and returns true when err, or the
// request's context, says that the request outlived its timeout; and 503
// "store_unavailable" with Retry-After when a deadline of the store ran
// out or err says that the store is unavailable for now
// ([storekit.Unavailable]: a lost connection, a restarting database, a
// full disk).
func (s *Server) timedOut(w http.ResponseWriter, r *http.Request, err error) bool {
	unavailable := r.Context().Err() == nil && storekit.Unavailable(err)
	if !unavailable && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		return false
	}
	if r.Context().Err() == nil {
		// A deadline of the store (or another dependency), not the request's: the database
		// stalls or is locked. Nothing waited for it longer; retry soon.
		// Or the database is unavailable for now: retry soon too.
		msg := "the database or another service the request needs did not answer in time; retry"
		if unavailable {
			msg = "the database the request needs is unavailable for now; retry"
		}
		s.logger.WarnContext(r.Context(), "server: the store did not answer", "method", r.Method, "route", r.Pattern, "err", logcap.Error(err))
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeStoreUnavailable, msg)
		return true
	}
	s.logger.WarnContext(r.Context(), "server: request timed out", "method", r.Method, "route", r.Pattern, "err", logcap.Error(err))
	writeError(w, http.StatusGatewayTimeout, codeTimeout, "the request took longer than the server allows; a turn may still have been stored, read the conversation")
	return true
}

// pinger is a store that can tell whether it answers, as the stores of
// packages store/sqlite and store/postgres do.
type pinger interface {
	Ping(ctx context.Context) error
}

// readyz answers 200 when the server is open and every agent's store
// answers a ping, and 503 naming the failing checks otherwise. A store
// without a Ping method counts as ready.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := map[string]string{"server": "ok"}
	var failing []string
	if s.closed.Load() {
		checks["server"] = "closing"
		failing = append(failing, "server")
	}
	pinged := map[any]error{} // by store, for comparable stores shared by agents
	// Agents' names are told only to authenticated callers; others get
	// one check, "stores", for all of them.
	named := s.readyCaller(r)
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Agents)) {
		check := "store:" + name
		if !named {
			check = "stores"
		}
		if checks[check] == "" {
			checks[check] = "ok"
		}
		st := s.cfg.Agents[name].Client.Store()
		p, ok := st.(pinger)
		if !ok {
			continue
		}
		comparable := reflect.TypeOf(st).Comparable()
		err, done := error(nil), false
		if comparable {
			err, done = pinged[st]
		}
		if !done {
			if wp, ok := st.(writeProber); ok && comparable {
				err = s.probes.check(ctx, wp, p.Ping)
			} else {
				err = p.Ping(ctx)
			}
			if comparable {
				pinged[st] = err
			}
			if err != nil {
				s.logger.WarnContext(ctx, "server: readiness: the store does not answer", "agent", name, "err", logcap.Error(err))
			}
		}
		if err != nil {
			if checks[check] != "failed" {
				failing = append(failing, check)
			}
			checks[check] = "failed"
		}
	}
	if wp, ok := s.cfg.Audit.(writeProber); ok && reflect.TypeOf(wp).Comparable() {
		checks["audit"] = "ok"
		if err := s.probes.check(ctx, wp, nil); err != nil {
			s.logger.WarnContext(ctx, "server: readiness: the audit log cannot write", "err", logcap.Error(err))
			checks["audit"] = "failed"
			failing = append(failing, "audit")
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	if len(failing) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, struct {
			errorJSON
			Status string            `json:"status"`
			Checks map[string]string `json:"checks"`
		}{errorJSON{Error: codeNotReady, Message: "not ready: " + strings.Join(failing, ", ")}, "not_ready", checks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

// call runs a turn of conversation c, recording it.
func (s *Server) call(ctx context.Context, c *conversation, p *toolgate.CallParams) (*toolgate.Response, error) {
	ctx, end := s.ops.tel.StartTurn(ctx, &telemetry.Turn{Agent: c.Agent, ConversationID: c.ID})
	resp, err := s.cfg.Agents[c.Agent].Client.Call(ctx, p)
	end(resp, err)
	return resp, err
}

// resume resumes the pause of conversation c whose awaiting calls are
// awaiting, recording the turn and the decision.
func (s *Server) resume(ctx context.Context, c *conversation, awaiting []string, p *toolgate.ResumeTurnParams) (*toolgate.Response, error) {
	ctx, end := s.ops.tel.StartTurn(ctx, &telemetry.Turn{Agent: c.Agent, ConversationID: c.ID, Resume: true})
	resp, err := s.cfg.Agents[c.Agent].Client.Resume(ctx, p)
	end(resp, err)
	switch {
	case err == nil:
		s.ops.decision(c.Agent, verdictOutcome(awaiting, p.Decisions))
	case !errors.Is(err, toolgate.ErrNoOpenPause):
		// ErrNoOpenPause is answered 409 and counted as a conflict.
		s.ops.decision(c.Agent, decisionFailed)
	}
	return resp, err
}

// verdictOutcome returns allowed, denied or partial for decisions on the
// awaiting calls.
func verdictOutcome(awaiting []string, decisions []toolgate.Decision) string {
	allowed, denied := false, false
	for _, d := range decisions {
		if !slices.Contains(awaiting, d.Key) {
			continue
		}
		if d.Verdict == toolgate.VerdictDeny {
			denied = true
		} else {
			allowed = true
		}
	}
	switch {
	case allowed && denied:
		return decisionPartial
	case denied:
		return decisionDenied
	}
	return decisionAllowed
}

// expired records that this server expired the pause of c.
func (o *ops) expired(c *conversation) {
	o.decision(c.Agent, decisionExpired)
}

func (o *ops) decision(agent, outcome string) {
	o.decisions.WithLabelValues(agent, outcome).Inc()
}

// requestLogger returns l with the request id of the context added to
// every record logged with one.
func requestLogger(l *slog.Logger) *slog.Logger {
	return slog.New(requestIDHandler{l.Handler()})
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// serveRecovering is [Server.serve], turning a panic of code the request
// runs (a policy, an authorizer, a model, a middleware of the agent's
// client) into 500 "internal" when nothing was answered yet: the process
// keeps serving, and the panic is logged at ERROR with its stack. A call
// of the turn that had not started when the panic came does not run; the
// store's claim of a resumed pause, if one was taken, is recovered after
// the lease like any resumption that stopped. [http.ErrAbortHandler]
// panics on, as net/http expects.
func (s *Server) serveRecovering(rw *responseWriter, r *http.Request) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.logger.ErrorContext(r.Context(), "server: a request panicked", "method", r.Method, "path", capped(r.URL.Path),
			"panic", capped(fmt.Sprint(v)), "stack", string(debug.Stack()))
		if rw.status == 0 {
			writeError(rw, http.StatusInternalServerError, codeInternal, "internal error")
		}
	}()
	s.serve(rw, r)
}

// readyCaller reports whether the request to /readyz carries a valid API
// key or session: such callers see the checks by agent.
func (s *Server) readyCaller(r *http.Request) bool {
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && key != "" {
		return s.keyPrincipal(key) != nil
	}
	return s.sessionPrincipal(r) != nil
}
