package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/telemetry"
)

// traced returns a Telemetry with a registry of its own whose spans go to
// the returned exporter.
func traced(t *testing.T) (*telemetry.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return telemetry.New(&telemetry.Options{Registry: prometheus.NewRegistry(), TracerProvider: tp}), exp
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestFailures checks that a failing model and a failing tool fail their
// spans with an error type, never the error's text, and count as errors.
func TestFailures(t *testing.T) {
	tel, exp := traced(t)
	secret := errors.New("card 4111 1111 1111 1111 refused")
	tool := toolgate.NewTool(toolgate.ToolDefinition{Name: "pay", Description: "Pay"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "", secret })
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "pay", Arguments: `{"card":"4111"}`}}},
		scripted.Reply{Err: fmt.Errorf("provider: %w", secret)},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{tool}, &toolgate.ClientOptions{
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{tel.ModelMiddleware(&telemetry.Model{Agent: "shop", Provider: "openai", Name: "m1"})},
		ToolMiddleware:  []func(toolgate.ToolFunc) toolgate.ToolFunc{tel.ToolMiddleware("shop")},
	})
	ctx, end := tel.StartTurn(context.Background(), &telemetry.Turn{Agent: "shop"})
	resp, err := client.Call(ctx, &toolgate.CallParams{Input: "pay"})
	if err == nil {
		t.Fatal("the turn did not fail")
	}
	if got := end(resp, err); got != telemetry.OutcomeFailed {
		t.Errorf("outcome %q, want failed", got)
	}

	want := map[string]string{"execute_tool pay": "tool_error", "invoke_agent shop": "failed"}
	chats := 0
	for _, s := range exp.GetSpans() {
		if s.Name == "chat m1" {
			chats++
			if chats == 2 {
				want["chat m1"] = "model_error"
			} else {
				continue
			}
		}
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected span %q", s.Name)
			continue
		}
		delete(want, s.Name)
		if s.Status.Code != codes.Error || s.Status.Description != w || attr(s, "error.type") != w {
			t.Errorf("span %q: status %v %q, error.type %q; want error %q", s.Name, s.Status.Code, s.Status.Description, attr(s, "error.type"), w)
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "4111") {
				t.Errorf("span %q: %s holds the error's text", s.Name, kv.Key)
			}
		}
		for _, ev := range s.Events {
			t.Errorf("span %q has event %q", s.Name, ev.Name)
		}
	}
	if len(want) > 0 || chats != 2 {
		t.Errorf("missing spans %v; %d chat spans, want 2", want, chats)
	}
	exposition := `
# HELP toolgate_tool_runs_total Tool functions run, by agent, tool and status (ok, error). Calls that were denied, paused or refused did not run and are not counted.
# TYPE toolgate_tool_runs_total counter
toolgate_tool_runs_total{agent="shop",status="error",tool="pay"} 1
# HELP toolgate_turns_total Turns run, resumed turns included, by agent and outcome (completed, paused, conflict, failed).
# TYPE toolgate_turns_total counter
toolgate_turns_total{agent="shop",outcome="failed"} 1
`
	if err := testutil.GatherAndCompare(tel.Registry(), strings.NewReader(exposition), "toolgate_tool_runs_total", "toolgate_turns_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(tel.Registry(), "toolgate_model_duration_seconds"); n != 2 {
		t.Errorf("%d model duration series, want ok and error", n)
	}
}

func TestOutcome(t *testing.T) {
	paused := &toolgate.Response{Awaiting: []string{"c1"}}
	for _, tt := range []struct {
		resp *toolgate.Response
		err  error
		want string
	}{
		{&toolgate.Response{}, nil, telemetry.OutcomeCompleted},
		{nil, nil, telemetry.OutcomeCompleted},
		{paused, nil, telemetry.OutcomePaused},
		{nil, fmt.Errorf("x: %w", toolgate.ErrPauseOpen), telemetry.OutcomeConflict},
		{nil, toolgate.ErrConflict, telemetry.OutcomeConflict},
		{nil, toolgate.ErrNoOpenPause, telemetry.OutcomeConflict},
		{nil, context.DeadlineExceeded, telemetry.OutcomeFailed},
		{paused, errors.New("store down"), telemetry.OutcomeFailed},
	} {
		if got := telemetry.Outcome(tt.resp, tt.err); got != tt.want {
			t.Errorf("Outcome(%v, %v) = %q, want %q", tt.resp, tt.err, got, tt.want)
		}
	}
}

// TestSharedRegistry checks that two Telemetry values on one registry
// share their metrics, and that a clashing metric is refused.
func TestSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := telemetry.New(&telemetry.Options{Registry: reg})
	b := telemetry.New(&telemetry.Options{Registry: reg})
	for _, tel := range []*telemetry.Telemetry{a, b} {
		_, end := tel.StartTurn(context.Background(), nil)
		end(&toolgate.Response{}, nil)
	}
	if got := testutil.ToFloat64(mustCounter(t, reg)); got != 2 {
		t.Errorf("turns %v, want 2 from both", got)
	}

	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolgate_turns_total", Help: "not a counter"}))
	defer func() {
		if recover() == nil {
			t.Error("New with a clashing metric did not panic")
		}
	}()
	telemetry.New(&telemetry.Options{Registry: clash})
}

// mustCounter returns the collector of toolgate_turns_total{agent="",outcome="completed"}
// by registering its twin, which returns the registered one.
func mustCounter(t *testing.T, reg *prometheus.Registry) prometheus.Counter {
	t.Helper()
	vec := telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_turns_total",
		Help: "Turns run, resumed turns included, by agent and outcome (completed, paused, conflict, failed).",
	}, []string{"agent", "outcome"}))
	return vec.WithLabelValues("", "completed")
}

// TestNoTracerProvider checks that without a provider nothing is recorded
// as a span and nothing breaks.
func TestNoTracerProvider(t *testing.T) {
	tel := telemetry.New(nil)
	ctx, end := tel.StartTurn(context.Background(), &telemetry.Turn{Agent: "a"})
	if tel.Tracer() == nil || ctx == nil {
		t.Fatal("no tracer or context")
	}
	mw := tel.ModelMiddleware(nil)(func(context.Context, *toolgate.Prompt) (*toolgate.Response, error) { return nil, nil })
	if resp, err := mw(ctx, nil); resp != nil || err != nil {
		t.Errorf("middleware around a model answering nil: %v, %v", resp, err)
	}
	if got := end(nil, nil); got != telemetry.OutcomeCompleted {
		t.Errorf("outcome %q", got)
	}
}

// BenchmarkMiddleware measures the cost of the model and tool middleware
// per call, with the global (no-op) tracer provider.
func BenchmarkMiddleware(b *testing.B) {
	tel := telemetry.New(nil)
	model := tel.ModelMiddleware(&telemetry.Model{Agent: "a", Provider: "openai", Name: "m"})(func(context.Context, *toolgate.Prompt) (*toolgate.Response, error) {
		return &toolgate.Response{Generations: []toolgate.Generation{{FinishReason: toolgate.FinishStop}}}, nil
	})
	tool := tel.ToolMiddleware("a")(func(context.Context, *toolgate.ToolRequest) (string, error) { return "ok", nil })
	req := &toolgate.ToolRequest{Call: toolgate.ToolCall{ID: "c1", Name: "t"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		model(ctx, &toolgate.Prompt{})
		tool(ctx, req)
	}
}
