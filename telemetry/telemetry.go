package telemetry

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
)

// InstrumentationName is the name of the tracer that makes toolgate's spans.
const InstrumentationName = "github.com/toolgate/toolgate"

// The attribute keys of the spans, from the OpenTelemetry gen_ai and HTTP
// semantic conventions, and toolgate's own.
const (
	keyOperation      = attribute.Key("gen_ai.operation.name")
	keyProvider       = attribute.Key("gen_ai.provider.name")
	keySystem         = attribute.Key("gen_ai.system") // the older name of gen_ai.provider.name
	keyRequestModel   = attribute.Key("gen_ai.request.model")
	keyResponseModel  = attribute.Key("gen_ai.response.model")
	keyResponseID     = attribute.Key("gen_ai.response.id")
	keyFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	keyInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	keyAgentName      = attribute.Key("gen_ai.agent.name")
	keyConversationID = attribute.Key("gen_ai.conversation.id")
	keyToolName       = attribute.Key("gen_ai.tool.name")
	keyToolCallID     = attribute.Key("gen_ai.tool.call.id")
	keyToolType       = attribute.Key("gen_ai.tool.type")
	keyErrorType      = attribute.Key("error.type")
	keyTurnOutcome    = attribute.Key("toolgate.turn.outcome")
	keyTurnResume     = attribute.Key("toolgate.turn.resume")
	keyAwaiting       = attribute.Key("toolgate.turn.awaiting")
)

// The outcomes of a turn, the values of the outcome label of
// toolgate_turns_total and of the toolgate.turn.outcome span attribute.
const (
	// OutcomeCompleted: the turn ended with an answer (or a limit, or a
	// return-direct result).
	OutcomeCompleted = "completed"
	// OutcomePaused: the turn paused for a person's decision.
	OutcomePaused = "paused"
	// OutcomeConflict: the turn did not run, because of the state of its
	// conversation: an open pause, a concurrent turn, or a pause already
	// resolved ([toolgate.ErrPauseOpen], [toolgate.ErrConflict],
	// [toolgate.ErrNoOpenPause]).
	OutcomeConflict = "conflict"
	// OutcomeFailed: the turn failed (the model, a store, a timeout).
	OutcomeFailed = "failed"
)

// Telemetry records what toolgate clients and the approval service do: as
// Prometheus metrics in one registry, and as OpenTelemetry spans that
// follow the gen_ai semantic conventions. Its middleware is
// given to a [toolgate.Client] through [toolgate.ClientOptions]; package
// server records its requests, turns and decisions with the same
// Telemetry (server.Config.Telemetry).
//
// Spans and metrics never hold message content, tool arguments or tool
// results: only names, ids, counts, durations and outcomes.
//
// A Telemetry is safe for concurrent use.
type Telemetry struct {
	// fixed at creation
	registry *prometheus.Registry
	tracer   trace.Tracer

	turns     *prometheus.CounterVec   // agent, outcome
	turnTime  *prometheus.HistogramVec // agent, outcome
	modelTime *prometheus.HistogramVec // agent, status
	tokens    *prometheus.CounterVec   // agent, type
	toolRuns  *prometheus.CounterVec   // agent, tool, status
	toolTime  *prometheus.HistogramVec // agent, tool
}

// Options configure a [Telemetry]. A nil *Options means all defaults.
type Options struct {
	// Registry receives the metrics. Metrics of the same name already in
	// it, registered by another Telemetry or by package server, are shared;
	// a metric of the same name but another shape is a programming error
	// and makes [New] panic. nil: a new registry of the Telemetry's own,
	// which also holds the Go runtime and process collectors.
	Registry *prometheus.Registry
	// TracerProvider makes the tracer of the spans. nil: the global one,
	// [otel.GetTracerProvider], which makes no spans until the program
	// sets one.
	TracerProvider trace.TracerProvider
}

// New returns a Telemetry with the metrics registered in opts.Registry.
func New(opts *Options) *Telemetry {
	if opts == nil {
		opts = &Options{}
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	t := &Telemetry{registry: reg, tracer: tp.Tracer(InstrumentationName)}
	t.turns = Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_turns_total",
		Help: "Turns run, resumed turns included, by agent and outcome (completed, paused, conflict, failed).",
	}, []string{"agent", "outcome"}))
	t.turnTime = Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolgate_turn_duration_seconds",
		Help:    "How long turns took, model calls and tool runs included, by agent and outcome.",
		Buckets: slowBuckets,
	}, []string{"agent", "outcome"}))
	t.modelTime = Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolgate_model_duration_seconds",
		Help:    "How long model calls took, by agent and status (ok, error).",
		Buckets: slowBuckets,
	}, []string{"agent", "status"}))
	t.tokens = Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_model_tokens_total",
		Help: "Tokens the models reported, by agent and type (input, output).",
	}, []string{"agent", "type"}))
	t.toolRuns = Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_tool_runs_total",
		Help: "Tool functions run, by agent, tool and status (ok, error). Calls that were denied, paused or refused did not run and are not counted.",
	}, []string{"agent", "tool", "status"}))
	t.toolTime = Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolgate_tool_duration_seconds",
		Help:    "How long tool functions took, by agent and tool.",
		Buckets: fastBuckets,
	}, []string{"agent", "tool"}))
	return t
}

// Buckets of the histograms, in seconds: slowBuckets for model calls and
// turns (up to minutes), fastBuckets for tools and requests.
var (
	slowBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320}
	fastBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
)

// HTTPBuckets are the buckets, in seconds, of request duration histograms:
// from a millisecond to two minutes, the length of a slow turn.
func HTTPBuckets() []float64 { return append([]float64(nil), fastBuckets...) }

// Register registers c in reg and returns it, or returns the collector of
// the same description already registered, so that several users of one
// registry share a metric. It panics when reg holds an incompatible
// collector of the same name: a programming error.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("telemetry: " + err.Error())
}

// Registry returns the registry that holds the metrics.
func (t *Telemetry) Registry() *prometheus.Registry { return t.registry }

// Handler returns an [http.Handler] serving the metrics of the registry
// in the Prometheus exposition formats.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Tracer returns the tracer that makes the spans.
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer }

// Model describes the model of an agent, for [Telemetry.ModelMiddleware].
type Model struct {
	// Agent names the agent in metric labels and spans. "": none.
	Agent string
	// Provider is the gen_ai.provider.name of the spans, such as
	// "openai", "anthropic" or "gcp.gemini". "": the attribute is left out.
	Provider string
	// Name is the model requested (gen_ai.request.model), when the
	// prompt's options name none. "": only the prompt's.
	Name string
}

// ModelMiddleware returns model middleware ([toolgate.ClientOptions]) that
// records each model call: a span "chat MODEL" with the gen_ai attributes
// of the request, the response and the token usage, the histogram
// toolgate_model_duration_seconds and the counter
// toolgate_model_tokens_total. m may be nil.
func (t *Telemetry) ModelMiddleware(m *Model) func(next toolgate.ModelFunc) toolgate.ModelFunc {
	var info Model
	if m != nil {
		info = *m
	}
	okTime := t.modelTime.WithLabelValues(info.Agent, "ok")
	errTime := t.modelTime.WithLabelValues(info.Agent, "error")
	in := t.tokens.WithLabelValues(info.Agent, "input")
	out := t.tokens.WithLabelValues(info.Agent, "output")
	return func(next toolgate.ModelFunc) toolgate.ModelFunc {
		return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
			model := info.Name
			if p != nil && p.Options != nil && p.Options.Model != "" {
				model = p.Options.Model
			}
			name := "chat"
			if model != "" {
				name += " " + model
			}
			attrs := make([]attribute.KeyValue, 0, 5)
			attrs = append(attrs, keyOperation.String("chat"))
			if info.Provider != "" {
				attrs = append(attrs, keyProvider.String(info.Provider), keySystem.String(info.Provider))
			}
			if model != "" {
				attrs = append(attrs, keyRequestModel.String(model))
			}
			if info.Agent != "" {
				attrs = append(attrs, keyAgentName.String(info.Agent))
			}
			ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			defer span.End()
			start := time.Now()
			resp, err := next(ctx, p)
			d := time.Since(start).Seconds()
			if err != nil {
				errTime.Observe(d)
				failSpan(span, err, "model_error")
				return resp, err
			}
			okTime.Observe(d)
			if resp == nil {
				return resp, err
			}
			in.Add(float64(max(resp.Usage.InputTokens, 0)))
			out.Add(float64(max(resp.Usage.OutputTokens, 0)))
			if span.IsRecording() {
				span.SetAttributes(
					keyInputTokens.Int64(resp.Usage.InputTokens),
					keyOutputTokens.Int64(resp.Usage.OutputTokens),
				)
				if resp.Model != "" {
					span.SetAttributes(keyResponseModel.String(resp.Model))
				}
				if resp.ID != "" {
					span.SetAttributes(keyResponseID.String(resp.ID))
				}
				if f := resp.FinishReason(); f != "" {
					span.SetAttributes(keyFinishReasons.StringSlice([]string{string(f)}))
				}
			}
			return resp, nil
		}
	}
}

// ToolMiddleware returns tool middleware ([toolgate.ClientOptions]) that
// records each tool run of agent: a span "execute_tool TOOL" with the
// tool's name and the call's id, the counter toolgate_tool_runs_total and
// the histogram toolgate_tool_duration_seconds. A tool's error fails the
// span with error.type "tool_error"; the error's text, which may quote the
// arguments, is not recorded.
func (t *Telemetry) ToolMiddleware(agent string) func(next toolgate.ToolFunc) toolgate.ToolFunc {
	return func(next toolgate.ToolFunc) toolgate.ToolFunc {
		return func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
			tool := req.Call.Name
			attrs := []attribute.KeyValue{keyOperation.String("execute_tool"), keyToolName.String(tool), keyToolType.String("function")}
			if req.Call.ID != "" {
				attrs = append(attrs, keyToolCallID.String(req.Call.ID))
			}
			if agent != "" {
				attrs = append(attrs, keyAgentName.String(agent))
			}
			if req.ConversationID != "" {
				attrs = append(attrs, keyConversationID.String(req.ConversationID))
			}
			ctx, span := t.tracer.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
			defer span.End()
			start := time.Now()
			out, err := next(ctx, req)
			t.toolTime.WithLabelValues(agent, tool).Observe(time.Since(start).Seconds())
			status := "ok"
			if err != nil {
				status = "error"
				failSpan(span, err, "tool_error")
			}
			t.toolRuns.WithLabelValues(agent, tool, status).Inc()
			return out, err
		}
	}
}

// Turn describes a turn for [Telemetry.StartTurn].
type Turn struct {
	// Agent names the agent. "": none.
	Agent string
	// ConversationID is the turn's conversation. "": none.
	ConversationID string
	// Resume is true for a turn that resumes a pause.
	Resume bool
}

// StartTurn starts recording a turn: a span "invoke_agent AGENT" that the
// model and tool spans of the turn nest in when they are given the
// returned context. The returned end function records the turn's outcome
// (see [Outcome]) in the span, toolgate_turns_total and
// toolgate_turn_duration_seconds, ends the span and returns the outcome;
// call it exactly once. tr may be nil.
func (t *Telemetry) StartTurn(ctx context.Context, tr *Turn) (context.Context, func(*toolgate.Response, error) string) {
	var info Turn
	if tr != nil {
		info = *tr
	}
	name := "invoke_agent"
	attrs := []attribute.KeyValue{keyOperation.String("invoke_agent")}
	if info.Agent != "" {
		name += " " + info.Agent
		attrs = append(attrs, keyAgentName.String(info.Agent))
	}
	if info.ConversationID != "" {
		attrs = append(attrs, keyConversationID.String(info.ConversationID))
	}
	if info.Resume {
		attrs = append(attrs, keyTurnResume.Bool(true))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	start := time.Now()
	return ctx, func(resp *toolgate.Response, err error) string {
		outcome := Outcome(resp, err)
		t.turns.WithLabelValues(info.Agent, outcome).Inc()
		t.turnTime.WithLabelValues(info.Agent, outcome).Observe(time.Since(start).Seconds())
		span.SetAttributes(keyTurnOutcome.String(outcome))
		switch {
		case err != nil:
			failSpan(span, err, outcome)
		case resp != nil:
			span.SetAttributes(keyInputTokens.Int64(resp.Usage.InputTokens), keyOutputTokens.Int64(resp.Usage.OutputTokens))
			if f := resp.FinishReason(); f != "" {
				span.SetAttributes(keyFinishReasons.StringSlice([]string{string(f)}))
			}
			if resp.Paused() {
				span.SetAttributes(keyAwaiting.Int(len(resp.Awaiting)))
			}
		}
		span.End()
		return outcome
	}
}

// Outcome classifies the result of a turn: [OutcomePaused],
// [OutcomeCompleted], [OutcomeConflict] or [OutcomeFailed].
func Outcome(resp *toolgate.Response, err error) string {
	switch {
	case errors.Is(err, toolgate.ErrPauseOpen), errors.Is(err, toolgate.ErrConflict), errors.Is(err, toolgate.ErrNoOpenPause):
		return OutcomeConflict
	case err != nil:
		return OutcomeFailed
	case resp.Paused():
		return OutcomePaused
	}
	return OutcomeCompleted
}

// failSpan marks span failed with an error.type naming the kind of
// failure, never the error's text, which may quote content.
func failSpan(span trace.Span, err error, kind string) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	case errors.Is(err, context.Canceled):
		kind = "canceled"
	}
	span.SetAttributes(keyErrorType.String(kind))
	span.SetStatus(codes.Error, kind)
}
