package toolgate_test

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate"
)

// newPartsScenarioModel is the loop scenario's model as a reasoning model
// answers: each reply opens with signed reasoning, and each call carries a
// signature of its own.
func newPartsScenarioModel() *scenarioModel {
	m := newScenarioModel()
	calls := &toolgate.AssistantMessage{ToolCalls: loopCalls, Parts: toolgate.Parts{
		toolgate.ReasoningPart{Text: "The user wants the flight's status, the weather and two seats.", Provider: "anthropic", Signature: "EqQBCkYIBxgCKkB4c2lnbmF0dXJl"},
	}}
	for i := range loopCalls {
		calls.Parts = append(calls.Parts, toolgate.ToolCallPart{Index: i, Provider: "gemini", Signature: "c2lnbmF0dXJl"})
	}
	answer := &toolgate.AssistantMessage{Text: "VX205 is on time and booked.", Parts: toolgate.Parts{
		toolgate.ReasoningPart{Text: "All three calls succeeded.", Provider: "anthropic", Signature: "EqQBCkYIBxgCKkB4c2ln"},
		toolgate.TextPart{Text: "VX205 is on time and booked."},
	}}
	m.calls.Generations[0].Message = calls
	m.answer.Generations[0].Message = answer
	return m
}

// BenchmarkLoopParts runs the loop scenario's turn and pause+resume with
// plain replies and with replies holding reasoning parts, so that the cost
// of parts is read from one run and a plain reply is seen to pay nothing
// for them.
func BenchmarkLoopParts(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"turn/plain", (&loopClient{}).turn},
		{"turn/parts", (&loopClient{parts: true}).turn},
		{"pause-resume/plain", (&loopClient{gated: true}).pauseResume},
		{"pause-resume/parts", (&loopClient{gated: true, parts: true}).pauseResume},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
