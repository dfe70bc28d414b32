package serve_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
)

// TestConfigOpsKeys checks the operations keys of a configuration file:
// their values reach the server, and bad ones are reported with their
// position.
func TestConfigOpsKeys(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		fc, err := serve.LoadConfig(writeConfig(t, validConfig+"timeouts:\n\trequest: 5s\n\tturn: 1m\nmetrics:\n\troles: [approver]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if fc.Timeouts.Request.String() != "5s" || fc.Timeouts.Turn.String() != "1m0s" {
			t.Errorf("timeouts %+v", fc.Timeouts)
		}
		f := build(t, fc)
		c := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)
		conv := c["id"].(string)
		out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"`+flightdemo.Input+`"}`)
		pause := out["pause"].(map[string]any)["id"].(string)
		f.must(200, "POST", decisionsPath(conv, pause), exampleApproverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
		// The metrics need an approver, and hold the model calls and tool
		// runs of the agent, whose client got the telemetry's middleware.
		if code, _ := f.raw("GET", "/metrics", "", ""); code != 401 {
			t.Errorf("GET /metrics without a key: %d, want 401", code)
		}
		if code, _ := f.raw("GET", "/metrics", exampleTravellerKey, ""); code != 403 {
			t.Errorf("GET /metrics as a traveller: %d, want 403", code)
		}
		code, text := f.raw("GET", "/metrics", exampleApproverKey, "")
		if code != 200 {
			t.Fatalf("GET /metrics as an approver: %d %s", code, text)
		}
		for _, want := range []string{
			`toolgate_model_duration_seconds_count{agent="flights",status="ok"} 2`,
			`toolgate_tool_runs_total{agent="flights",status="ok",tool="flightStatus"} 1`,
			`toolgate_tool_runs_total{agent="flights",status="ok",tool="bookFlight"} 1`,
			`toolgate_turns_total{agent="flights",outcome="paused"} 1`,
			`toolgate_turns_total{agent="flights",outcome="completed"} 1`,
			`toolgate_decisions_total{agent="flights",outcome="allowed"} 1`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s:\n%s", want, text)
			}
		}
	})
	t.Run("disabled", func(t *testing.T) {
		fc, err := serve.LoadConfig(writeConfig(t, validConfig+"metrics:\n\tdisabled: true\n"))
		if err != nil {
			t.Fatal(err)
		}
		f := build(t, fc)
		f.must(404, "GET", "/metrics", "", "")
	})
	for _, tt := range []struct {
		name, add string
		line, col int
		path, msg string
	}{
		{"negative request timeout", "timeouts:\n\trequest: -1s\n", 23, 12, "timeouts.request", "must not be negative"},
		{"negative turn timeout", "timeouts:\n\tturn: -2m\n", 23, 9, "timeouts.turn", "must not be negative"},
		{"not a duration", "timeouts:\n\tturn: forever\n", 23, 9, "timeouts.turn", "want a duration"},
		{"roles of disabled metrics", "metrics:\n\tdisabled: true\n\troles: [ops]\n", 24, 10, "metrics.roles", "disabled"},
		{"unknown key", "metrics:\n\ttoken: x\n", 23, 3, "metrics", `unknown key "token"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := serve.LoadConfig(writeConfig(t, validConfig+tt.add))
			var ce *serve.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			for _, p := range ce.Problems {
				if p.Line == tt.line && p.Column == tt.col && p.Path == tt.path && strings.Contains(p.Message, tt.msg) {
					return
				}
			}
			t.Errorf("got problems %+v, want one at %d:%d, path %q, saying %q", ce.Problems, tt.line, tt.col, tt.path, tt.msg)
		})
	}
}
