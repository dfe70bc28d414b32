package telemetry_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/telemetry"
)

// A client whose model calls and tool runs are recorded, and a turn
// recorded with StartTurn.
func Example() {
	tel := telemetry.New(nil)
	weather := toolgate.NewTool(toolgate.ToolDefinition{Name: "weather", Description: "The weather of a city"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "sunny", nil })
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}}},
		scripted.Reply{Text: "It is sunny in Oslo."},
	)
	client := toolgate.NewClient(model, []*toolgate.Tool{weather}, &toolgate.ClientOptions{
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{tel.ModelMiddleware(&telemetry.Model{Agent: "helper"})},
		ToolMiddleware:  []func(toolgate.ToolFunc) toolgate.ToolFunc{tel.ToolMiddleware("helper")},
	})

	ctx, end := tel.StartTurn(context.Background(), &telemetry.Turn{Agent: "helper", ConversationID: "conv-1"})
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "conv-1", Input: "Weather in Oslo?"})
	fmt.Println(end(resp, err), resp.Text())

	families, _ := tel.Registry().Gather()
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), "toolgate_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			n := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				n = float64(h.GetSampleCount())
			}
			fmt.Println(mf.GetName(), labels, n)
		}
	}
	// Output:
	// completed It is sunny in Oslo.
	// toolgate_model_duration_seconds [agent=helper status=error] 0
	// toolgate_model_duration_seconds [agent=helper status=ok] 2
	// toolgate_model_tokens_total [agent=helper type=input] 60
	// toolgate_model_tokens_total [agent=helper type=output] 12
	// toolgate_tool_duration_seconds [agent=helper tool=weather] 1
	// toolgate_tool_runs_total [agent=helper status=ok tool=weather] 1
	// toolgate_turn_duration_seconds [agent=helper outcome=completed] 1
	// toolgate_turns_total [agent=helper outcome=completed] 1
}
