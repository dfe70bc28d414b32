package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/telemetry"
)

// opsOptions adjust [newOpsFixture].
type opsOptions struct {
	store  toolgate.ConversationStore // nil: a memory.Store
	model  toolgate.Model             // nil: the flight demo's
	tel    *telemetry.Telemetry       // nil: telemetry.New(nil)
	logger *slog.Logger               // nil: discard
	config func(*server.Config)       // nil: none
}

// newOpsFixture serves the flight agent like newFixture, with a client
// built with the telemetry's middleware.
func newOpsFixture(t testing.TB, o opsOptions) (*fixture, *telemetry.Telemetry) {
	t.Helper()
	if o.store == nil {
		o.store = memory.New()
	}
	if o.model == nil {
		o.model = flightdemo.Model()
	}
	if o.tel == nil {
		o.tel = telemetry.New(nil)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	tools := &flightdemo.Tools{}
	client := toolgate.NewClient(o.model, tools.Tools(), &toolgate.ClientOptions{
		Store:           o.store,
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{o.tel.ModelMiddleware(&telemetry.Model{Agent: "flights", Provider: "toolgate.scripted", Name: "flight-demo"})},
		ToolMiddleware:  []func(toolgate.ToolFunc) toolgate.ToolFunc{o.tel.ToolMiddleware("flights")},
	})
	key := func(k, id string, roles ...string) server.APIKey {
		return server.APIKey{SHA256: server.HashAPIKey(k), Principal: toolgate.Principal{ID: id, Roles: roles}}
	}
	cfg := &server.Config{
		Agents: map[string]*server.Agent{"flights": {
			Client:         client,
			RequesterRoles: []string{"traveller"},
			Approvals:      []server.ApprovalRule{{Tools: []string{"bookFlight"}, Roles: []string{"approver"}}},
		}},
		APIKeys:      []server.APIKey{key(travellerKey, "ada", "traveller"), key(approverKey, "bob", "approver")},
		MaxBodyBytes: 4096,
		Logger:       o.logger,
		Telemetry:    o.tel,
	}
	if o.config != nil {
		o.config(cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv, tools: tools}, o.tel
}

// serve sends req through the handler.
func (f *fixture) serve(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// raw sends a request and returns the status and the body as text.
func (f *fixture) raw(method, path, key, body string) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := f.serve(req)
	return rec.Code, rec.Body.String()
}

// metric returns the value of the series of name with labels: a
// counter's or gauge's value, a histogram's count; -1 when there is none.
func metric(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !sameLabels(m.GetLabel(), labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

func sameLabels(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}

// TestMetricsOfPauseAndDecision checks the metrics after a paused turn,
// its decision, and a late second decision.
func TestMetricsOfPauseAndDecision(t *testing.T) {
	f, tel := newOpsFixture(t, opsOptions{})
	reg := tel.Registry()
	conv, pause := f.pause(travellerKey)
	flights := map[string]string{"agent": "flights"}
	with := func(k, v string) map[string]string {
		m := map[string]string{"agent": "flights"}
		m[k] = v
		return m
	}
	if got := metric(t, reg, "toolgate_turns_total", with("outcome", "paused")); got != 1 {
		t.Errorf("paused turns %v, want 1", got)
	}
	if got := metric(t, reg, "toolgate_pauses_open", flights); got != 1 {
		t.Errorf("open pauses %v, want 1", got)
	}
	if got := metric(t, reg, "toolgate_model_duration_seconds", with("status", "ok")); got != 1 {
		t.Errorf("model calls %v, want 1", got)
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	f.must(409, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"toolgate_turns_total", with("outcome", "paused"), 1},
		{"toolgate_turns_total", with("outcome", "completed"), 1},
		{"toolgate_turn_duration_seconds", with("outcome", "completed"), 1},
		{"toolgate_pauses_open", flights, 0},
		{"toolgate_decisions_total", with("outcome", "allowed"), 1},
		{"toolgate_decisions_total", with("outcome", "conflict"), 1},
		{"toolgate_model_duration_seconds", with("status", "ok"), 2},
		{"toolgate_model_tokens_total", with("type", "input"), -2}, // positive: checked below
		{"toolgate_tool_runs_total", map[string]string{"agent": "flights", "tool": "flightStatus", "status": "ok"}, 1},
		{"toolgate_tool_runs_total", map[string]string{"agent": "flights", "tool": "bookFlight", "status": "ok"}, 1},
		{"toolgate_tool_duration_seconds", map[string]string{"agent": "flights", "tool": "bookFlight"}, 1},
		{"toolgate_http_request_duration_seconds", map[string]string{"route": "/v1/conversations/{id}/pauses/{pause}/decisions", "method": "POST", "code": "200"}, 1},
		{"toolgate_http_request_duration_seconds", map[string]string{"route": "/v1/conversations/{id}/pauses/{pause}/decisions", "method": "POST", "code": "409"}, 1},
	} {
		got := metric(t, reg, c.name, c.labels)
		if c.want == -2 {
			if got <= 0 {
				t.Errorf("%s%v = %v, want > 0", c.name, c.labels, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if f.tools.Book.Load() != 1 {
		t.Errorf("bookFlight ran %d times, want 1", f.tools.Book.Load())
	}

	// The exposition, unauthenticated by default.
	code, text := f.raw("GET", "/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, text)
	}
	for _, want := range []string{
		`toolgate_decisions_total{agent="flights",outcome="allowed"} 1`,
		`toolgate_pauses_open{agent="flights"} 0`,
		"# TYPE toolgate_http_request_duration_seconds histogram",
		"go_goroutines ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
}

// TestMetricsOfDenialAndExpiry checks the decision outcomes denied and
// expired.
func TestMetricsOfDenialAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, tel := newOpsFixture(t, opsOptions{config: func(c *server.Config) { c.PauseTTL = time.Minute }})
		reg := tel.Registry()
		conv, pause := f.pause(travellerKey)
		f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"deny"}]}`)
		f.pause(travellerKey)
		if got := metric(t, reg, "toolgate_pauses_open", map[string]string{"agent": "flights"}); got != 1 {
			t.Errorf("open pauses %v, want 1", got)
		}
		time.Sleep(2 * time.Minute) // the sweeper expires the second pause
		synctest.Wait()
		for outcome, want := range map[string]float64{"denied": 1, "expired": 1, "allowed": -1} {
			if got := metric(t, reg, "toolgate_decisions_total", map[string]string{"agent": "flights", "outcome": outcome}); got != want {
				t.Errorf("decisions %s: %v, want %v", outcome, got, want)
			}
		}
		if got := metric(t, reg, "toolgate_pauses_open", map[string]string{"agent": "flights"}); got != 0 {
			t.Errorf("open pauses %v, want 0", got)
		}
		f.srv.Close()
	})
}

// TestMetricsLabelsBounded checks that hostile methods and paths do not
// make new series.
func TestMetricsLabelsBounded(t *testing.T) {
	f, tel := newOpsFixture(t, opsOptions{})
	for i := range 3 {
		req := httptest.NewRequest("GET", "/v1/no/such/path/"+strings.Repeat("x", i), nil)
		req.Method = "BREW" + strings.Repeat("X", i)
		f.serve(req)
		f.raw("GET", "/nowhere/"+strings.Repeat("y", i), "", "")
	}
	if got := metric(t, tel.Registry(), "toolgate_http_request_duration_seconds", map[string]string{"route": "unmatched", "method": "_OTHER", "code": "404"}); got != 3 {
		t.Errorf("unmatched _OTHER requests: %v, want 3", got)
	}
	if got := metric(t, tel.Registry(), "toolgate_http_request_duration_seconds", map[string]string{"route": "unmatched", "method": "GET", "code": "404"}); got != 3 {
		t.Errorf("unmatched GET requests: %v, want 3", got)
	}
}

// TestMetricsDisabledAndShared checks DisableMetrics, and that two servers
// may share one Telemetry.
func TestMetricsDisabledAndShared(t *testing.T) {
	tel := telemetry.New(nil)
	a, _ := newOpsFixture(t, opsOptions{tel: tel, config: func(c *server.Config) { c.DisableMetrics = true }})
	b, _ := newOpsFixture(t, opsOptions{tel: tel})
	a.must(404, "GET", "/metrics", "", "")
	if slices.Contains(a.srv.Routes(), "GET /metrics") {
		t.Errorf("routes %v hold GET /metrics", a.srv.Routes())
	}
	a.pause(travellerKey)
	b.pause(travellerKey)
	if got := metric(t, tel.Registry(), "toolgate_pauses_open", map[string]string{"agent": "flights"}); got != 2 {
		t.Errorf("open pauses of both servers %v, want 2", got)
	}
}

// pingStore is a store whose pings fail on demand and are counted.
type pingStore struct {
	*memory.Store
	fail  atomic.Bool
	pings atomic.Int32
}

func (s *pingStore) Ping(ctx context.Context) error {
	s.pings.Add(1)
	if s.fail.Load() {
		return errors.New("connection refused by db.internal:5432 password=hunter2")
	}
	return ctx.Err()
}

// readyz returns the status and the checks of GET /readyz, as an
// authenticated caller sees them.
func readyz(t *testing.T, f *fixture) (int, map[string]any) {
	t.Helper()
	return readyzAs(t, f, travellerKey)
}

// readyzAs is readyz with the API key key ("" for none).
func readyzAs(t *testing.T, f *fixture, key string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest("GET", "/readyz", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := f.serve(req)
	var out struct {
		Error  string         `json:"error"`
		Status string         `json:"status"`
		Checks map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("GET /readyz: body %q: %v", rec.Body, err)
	}
	switch {
	case rec.Code == 200 && out.Status != "ready":
		t.Errorf("200 with status %q", out.Status)
	case rec.Code == 503 && (out.Status != "not_ready" || out.Error != "not_ready"):
		t.Errorf("503 with status %q, error %q", out.Status, out.Error)
	}
	if strings.Contains(rec.Body.String(), "hunter2") {
		t.Errorf("GET /readyz tells the store's error: %s", rec.Body)
	}
	return rec.Code, out.Checks
}

func TestReadyz(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		store, err := sqlite.Open(t.Context(), t.TempDir()+"/toolgate.db", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		f, _ := newOpsFixture(t, opsOptions{store: store})
		if code, checks := readyz(t, f); code != 200 || checks["store:flights"] != "ok" || checks["server"] != "ok" {
			t.Errorf("open store: %d %v", code, checks)
		}
		store.Close()
		if code, checks := readyz(t, f); code != 503 || checks["store:flights"] != "failed" || checks["server"] != "ok" {
			t.Errorf("closed store: %d %v, want 503 naming store:flights", code, checks)
		}
	})
	t.Run("shared store pinged once", func(t *testing.T) {
		store := &pingStore{Store: memory.New()}
		var logs bytes.Buffer
		f, _ := newOpsFixture(t, opsOptions{store: store, logger: slog.New(slog.NewJSONHandler(&logs, nil)), config: func(c *server.Config) {
			second := *c.Agents["flights"]
			c.Agents["trains"] = &second
		}})
		if code, checks := readyz(t, f); code != 200 || len(checks) != 3 {
			t.Errorf("ready: %d %v, want 200 with server, store:flights, store:trains", code, checks)
		}
		if n := store.pings.Load(); n != 1 {
			t.Errorf("%d pings, want 1", n)
		}
		store.fail.Store(true)
		code, checks := readyz(t, f)
		if code != 503 || checks["store:flights"] != "failed" || checks["store:trains"] != "failed" {
			t.Errorf("failing store: %d %v", code, checks)
		}
		if !strings.Contains(logs.String(), "the store does not answer") {
			t.Errorf("the failed ping is not logged: %s", logs.String())
		}
	})
	t.Run("no agent names without authentication", func(t *testing.T) {
		store := &pingStore{Store: memory.New()}
		f, _ := newOpsFixture(t, opsOptions{store: store, config: func(c *server.Config) {
			second := *c.Agents["flights"]
			c.Agents["trains"] = &second
		}})
		for _, key := range []string{"", "key-unknown"} {
			code, checks := readyzAs(t, f, key)
			if code != 200 || len(checks) != 2 || checks["stores"] != "ok" || checks["server"] != "ok" {
				t.Errorf("key %q: %d %v, want 200 with server and stores only", key, code, checks)
			}
		}
		store.fail.Store(true)
		if code, checks := readyzAs(t, f, ""); code != 503 || checks["stores"] != "failed" || len(checks) != 2 {
			t.Errorf("failing store: %d %v, want 503 naming stores", code, checks)
		}
	})
	t.Run("closing", func(t *testing.T) {
		f, _ := newOpsFixture(t, opsOptions{})
		if code, checks := readyz(t, f); code != 200 || checks["store:flights"] != "ok" {
			t.Errorf("a store without Ping: %d %v, want ready", code, checks)
		}
		f.srv.Close()
		if code, checks := readyz(t, f); code != 503 || checks["server"] != "closing" {
			t.Errorf("closed server: %d %v, want 503 naming server", code, checks)
		}
	})
}

// TestTraces checks the spans of a paused turn and its decision: their
// names, nesting and gen_ai attributes, and that none holds content.
func TestTraces(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	f, _ := newOpsFixture(t, opsOptions{tel: telemetry.New(&telemetry.Options{TracerProvider: tp})})

	conv, pause := f.pause(travellerKey)
	// A caller's trace context is continued.
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true})
	req := httptest.NewRequest("POST", decisionsPath(conv, pause), strings.NewReader(allowBook))
	req.Header.Set("Authorization", "Bearer "+approverKey)
	req.Header.Set("traceparent", "00-"+parent.TraceID().String()+"-"+parent.SpanID().String()+"-01")
	if rec := f.serve(req); rec.Code != 200 {
		t.Fatalf("decision: %d %s", rec.Code, rec.Body)
	}

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			if strings.Contains(v, "VX205") || strings.Contains(v, "book it") || strings.Contains(v, approverKey) {
				t.Errorf("span %q attribute %s = %q holds content", s.Name, kv.Key, v)
			}
		}
	}
	attrs := func(s tracetest.SpanStub) map[attribute.Key]string {
		m := map[attribute.Key]string{}
		for _, kv := range s.Attributes {
			m[kv.Key] = kv.Value.String()
		}
		return m
	}
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		if len(byName[name]) == 0 {
			names := slices.Collect(func(yield func(string) bool) {
				for n := range byName {
					if !yield(n) {
						return
					}
				}
			})
			t.Fatalf("no span %q among %v", name, names)
		}
		return byName[name][len(byName[name])-1]
	}
	httpSpan := one("POST /v1/conversations/{id}/pauses/{pause}/decisions")
	if httpSpan.SpanKind != trace.SpanKindServer || httpSpan.Parent.SpanID() != parent.SpanID() || httpSpan.SpanContext.TraceID() != parent.TraceID() {
		t.Errorf("HTTP span: kind %v, parent %v, trace %v; want a server span continuing the caller's trace", httpSpan.SpanKind, httpSpan.Parent.SpanID(), httpSpan.SpanContext.TraceID())
	}
	if a := attrs(httpSpan); a["http.route"] != "/v1/conversations/{id}/pauses/{pause}/decisions" || a["http.response.status_code"] != "200" || a["http.request.method"] != "POST" {
		t.Errorf("HTTP span attributes %v", a)
	}
	turns := byName["invoke_agent flights"]
	if len(turns) != 2 {
		t.Fatalf("%d invoke_agent spans, want 2 (the paused turn and the resumed one)", len(turns))
	}
	turn := turns[1]
	if turn.Parent.SpanID() != httpSpan.SpanContext.SpanID() {
		t.Errorf("the turn's span is not in the request's")
	}
	wantTurn := map[attribute.Key]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "flights", "gen_ai.conversation.id": conv, "toolgate.turn.outcome": "completed", "toolgate.turn.resume": "true"}
	for k, v := range wantTurn {
		if got := attrs(turn)[k]; got != v {
			t.Errorf("turn span %s = %q, want %q", k, got, v)
		}
	}
	if got := attrs(turns[0])["toolgate.turn.outcome"]; got != "paused" {
		t.Errorf("first turn's outcome %q, want paused", got)
	}
	if got := attrs(turns[0])["toolgate.turn.awaiting"]; got != "1" {
		t.Errorf("first turn's awaiting %q, want 1", got)
	}

	chats := byName["chat flight-demo"]
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chats))
	}
	chat := attrs(chats[0])
	for k, v := range map[attribute.Key]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "toolgate.scripted", "gen_ai.system": "toolgate.scripted", "gen_ai.request.model": "flight-demo", "gen_ai.response.finish_reasons": `["tool_calls"]`} {
		if chat[k] != v {
			t.Errorf("chat span %s = %q, want %q", k, chat[k], v)
		}
	}
	if chat["gen_ai.usage.input_tokens"] == "" || chat["gen_ai.usage.input_tokens"] == "0" || chat["gen_ai.usage.output_tokens"] == "" {
		t.Errorf("chat span usage: %v", chat)
	}
	if chats[0].SpanKind != trace.SpanKindClient || chats[0].Parent.SpanID() != turns[0].SpanContext.SpanID() {
		t.Errorf("the first chat span is not a client span in the first turn's")
	}

	for _, tool := range []struct{ name, id string }{{"flightStatus", "call_status"}, {"bookFlight", "call_book"}} {
		s := one("execute_tool " + tool.name)
		a := attrs(s)
		if a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != tool.name || a["gen_ai.tool.call.id"] != tool.id || a["gen_ai.conversation.id"] != conv {
			t.Errorf("tool span attributes %v", a)
		}
		if s.Parent.SpanID() != turn.SpanContext.SpanID() {
			t.Errorf("tool span %s is not in the resumed turn's", tool.name)
		}
	}
}

// lockedBuffer is a buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// lines returns the JSON log lines written so far.
func (b *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(b.b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// requestLines returns the request log lines.
func requestLines(t *testing.T, logs *lockedBuffer) []map[string]any {
	var out []map[string]any
	for _, l := range logs.lines(t) {
		if l["msg"] == "http request" {
			out = append(out, l)
		}
	}
	return out
}

// TestRequestLog checks the log line of each request: its fields, its
// level, and that it holds no key, token or content.
func TestRequestLog(t *testing.T) {
	logs := &lockedBuffer{}
	f, _ := newOpsFixture(t, opsOptions{logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	conv, _ := f.pause(travellerKey)
	f.must(401, "GET", "/v1/inbox", "wrong-key", "")
	f.must(200, "GET", "/healthz", "", "")
	req := httptest.NewRequest("GET", "/v1/conversations/"+conv+"?secret=s3cr3t", nil)
	req.Header.Set("Authorization", "Bearer "+travellerKey)
	req.Header.Set("X-Request-Id", "req-42")
	if rec := f.serve(req); rec.Code != 200 || rec.Header().Get("X-Request-Id") != "req-42" {
		t.Fatalf("GET conversation: %d, X-Request-Id %q", rec.Code, rec.Header().Get("X-Request-Id"))
	}

	lines := requestLines(t, logs)
	type want struct{ level, method, route, principal string }
	wants := []want{
		{"INFO", "POST", "/v1/conversations", "ada"},
		{"INFO", "POST", "/v1/conversations/{id}/messages", "ada"},
		{"INFO", "GET", "/v1/inbox", ""},
		{"DEBUG", "GET", "/healthz", ""},
		{"INFO", "GET", "/v1/conversations/{id}", "ada"},
	}
	statuses := []float64{201, 200, 401, 200, 200}
	if len(lines) != len(wants) {
		t.Fatalf("%d request lines, want %d: %v", len(lines), len(wants), lines)
	}
	ids := map[any]bool{}
	for i, l := range lines {
		w := wants[i]
		if l["level"] != w.level || l["method"] != w.method || l["route"] != w.route || l["principal"] != w.principal || l["status"] != statuses[i] {
			t.Errorf("line %d: %v, want %+v status %v", i, l, w, statuses[i])
		}
		if _, ok := l["duration"].(float64); !ok {
			t.Errorf("line %d: no duration: %v", i, l)
		}
		if id, _ := l["request_id"].(string); id == "" || ids[id] {
			t.Errorf("line %d: request_id %v is missing or not unique", i, l["request_id"])
		}
		ids[l["request_id"]] = true
	}
	if lines[4]["request_id"] != "req-42" {
		t.Errorf("the given request id is not logged: %v", lines[4])
	}
	all := func() string {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return logs.b.String()
	}()
	for _, secret := range []string{travellerKey, "wrong-key", "s3cr3t", "VX205", "Bearer"} {
		if strings.Contains(all, secret) {
			t.Errorf("the logs hold %q:\n%s", secret, all)
		}
	}
}

// TestRequestID checks which X-Request-Id values are kept and which are
// replaced.
func TestRequestID(t *testing.T) {
	f, _ := newOpsFixture(t, opsOptions{})
	for _, tt := range []struct {
		name, given string
		kept        bool
	}{
		{"uuid", "3f2c1a9e-5b7d-4c1e-9f3a-0b8d7e6c5a41", true},
		{"dotted", "trace.abc:42_x", true},
		{"none", "", false},
		{"huge", strings.Repeat("a", 100_000), false},
		{"just too long", strings.Repeat("a", 129), false},
		{"spaces", "a b", false},
		{"control", "abc\x00def", false},
		{"non-ASCII", "idé", false},
		{"log forging", "x\nlevel=ERROR msg=forged", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			if tt.given != "" {
				req.Header["X-Request-Id"] = []string{tt.given}
			}
			rec := f.serve(req)
			got := rec.Header().Get("X-Request-Id")
			switch {
			case tt.kept && got != tt.given:
				t.Errorf("X-Request-Id %q, want %q kept", got, tt.given)
			case !tt.kept && (got == tt.given || got == "" || len(got) > 128):
				t.Errorf("X-Request-Id %q, want a new id", got)
			}
		})
	}
}

// blockingModel answers nothing until its context ends.
type blockingModel struct{}

func (blockingModel) Generate(ctx context.Context, _ *toolgate.Prompt) (*toolgate.Response, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (m blockingModel) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		_, err := m.Generate(ctx, p)
		yield(nil, err)
	}
}

// blockingStore is a store whose loads wait for the end of their context
// once block is set.
type blockingStore struct {
	*memory.Store
	block atomic.Bool
}

func (s *blockingStore) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	if s.block.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Load(ctx, id)
}

// TestTimeouts checks that a turn and a read that outlive their timeouts
// are answered 504 at the deadline, and that nothing is left running
// (synctest fails a test whose goroutines outlive it).
func TestTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &lockedBuffer{}
		f, tel := newOpsFixture(t, opsOptions{model: blockingModel{}, logger: slog.New(slog.NewJSONHandler(logs, nil)), config: func(c *server.Config) {
			c.TurnTimeout = 90 * time.Second
		}})
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		start := time.Now()
		out := f.must(504, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"hello"}`)
		if out["error"] != "timeout" {
			t.Errorf("body %v, want error timeout", out)
		}
		if d := time.Since(start); d != 90*time.Second {
			t.Errorf("answered after %v, want the turn timeout, 90s", d)
		}
		if got := metric(t, tel.Registry(), "toolgate_turns_total", map[string]string{"agent": "flights", "outcome": "failed"}); got != 1 {
			t.Errorf("failed turns %v, want 1", got)
		}
		lines := requestLines(t, logs)
		if last := lines[len(lines)-1]; last["level"] != "ERROR" || last["status"] != float64(504) {
			t.Errorf("request line %v, want ERROR 504", last)
		}
		f.srv.Close()
	})
	synctest.Test(t, func(t *testing.T) {
		store := &blockingStore{Store: memory.New()}
		f, _ := newOpsFixture(t, opsOptions{store: store})
		conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
		store.block.Store(true)
		start := time.Now()
		if out := f.must(504, "GET", "/v1/conversations/"+conv, travellerKey, ""); out["error"] != "timeout" {
			t.Errorf("body %v, want error timeout", out)
		}
		if d := time.Since(start); d != server.DefaultRequestTimeout {
			t.Errorf("answered after %v, want the request timeout, %v", d, server.DefaultRequestTimeout)
		}
		f.srv.Close()
	})
}

func TestOpsConfigInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(*server.Config)
		want string
	}{
		{"negative request timeout", func(c *server.Config) { c.RequestTimeout = -time.Second }, "request_timeout -1s is negative"},
		{"negative turn timeout", func(c *server.Config) { c.TurnTimeout = -time.Minute }, "turn_timeout -1m0s is negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &server.Config{Agents: map[string]*server.Agent{"a": {Client: toolgate.NewClient(flightdemo.Model(), nil, nil)}}}
			tt.set(c)
			if _, err := server.New(c); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestEveryPostBodyLimited sends a body over the limit to every POST
// route, as a caller allowed to use it, and wants 413 from each.
func TestEveryPostBodyLimited(t *testing.T) {
	f, _ := newOpsFixture(t, opsOptions{})
	conv, pause := f.pause(travellerKey)
	big := `{"input":"` + strings.Repeat("x", 5000) + `"}`
	n := 0
	for _, r := range f.srv.Routes() {
		method, path, _ := strings.Cut(r, " ")
		if method != "POST" {
			continue
		}
		n++
		key := travellerKey
		if strings.Contains(path, "{pause}") {
			key = approverKey
		}
		path = strings.NewReplacer("{id}", conv, "{pause}", pause).Replace(path)
		code, body := f.raw("POST", path, key, big)
		if code != 413 || !strings.Contains(body, "body_too_large") {
			t.Errorf("POST %s with %d bytes: %d %s, want 413 body_too_large", path, len(big), code, body)
		}
	}
	if n < 3 {
		t.Errorf("%d POST routes, want at least 3", n)
	}
	if f.tools.Book.Load() != 0 {
		t.Error("a tool ran")
	}
}

// TestPausesOpenFromStore: toolgate_pauses_open comes from the store's
// index, so two instances on one database (each with its own metrics)
// report the pauses either of them opened, and stop counting one as soon
// as either resolves it.
func TestPausesOpenFromStore(t *testing.T) {
	path := t.TempDir() + "/toolgate.db"
	var (
		fs   [2]*fixture
		regs [2]*prometheus.Registry
	)
	for i := range fs {
		st, err := sqlite.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rs := mustRecords(t, st)
		var tel *telemetry.Telemetry
		fs[i], tel = newOpsFixture(t, opsOptions{store: st, config: func(c *server.Config) { c.Records = rs }})
		regs[i] = tel.Registry()
	}
	open := func(i int) float64 {
		t.Helper()
		return metric(t, regs[i], "toolgate_pauses_open", map[string]string{"agent": "flights"})
	}
	conv, pause := fs[0].pause(travellerKey)
	fs[0].pause(travellerKey)
	if a, b := open(0), open(1); a != 2 || b != 2 {
		t.Errorf("open pauses after two pauses on the first instance: %v and %v, want 2 on both", a, b)
	}
	fs[1].must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	if a, b := open(1), open(0); b != 1 || a != 1 {
		t.Errorf("open pauses after a decision on the second instance: %v and %v, want 1 on both", b, a)
	}
}
