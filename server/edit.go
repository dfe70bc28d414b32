package server

import (
	"bytes"
	"encoding/json"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
)

// EditRecord is one call a person allowed with edited arguments: what the
// model asked for and what ran instead.
type EditRecord = records.Edit

// decision returns the toolgate decision of a request's decision. An
// allow's arguments are the approver's edit ("arguments": null is none);
// whether they are acceptable is checked with the other rules
// ([toolgate.Client.CheckDecisions]), so that a bad edit gets 422
// invalid_decisions with its problem.
func (d decisionIn) decision() toolgate.Decision {
	args := json.RawMessage(d.Arguments)
	if string(bytes.TrimSpace(args)) == "null" {
		args = nil
	}
	switch {
	case d.Verdict == toolgate.VerdictDeny && len(args) == 0:
		return toolgate.Deny(d.Key, d.Message)
	case d.Verdict == toolgate.VerdictAllow && d.Message == "":
		return toolgate.AllowWithArguments(d.Key, args)
	}
	return toolgate.Decision{Key: d.Key, Verdict: d.Verdict, Message: d.Message, Arguments: args}
}

// edits returns the edit records of decisions on reply, in call order.
func edits(reply *toolgate.AssistantMessage, decisions []toolgate.Decision) []EditRecord {
	var out []EditRecord
	keys := reply.CallKeys()
	for i, call := range reply.ToolCalls {
		for _, d := range decisions {
			if d.Key == keys[i] && d.Verdict == toolgate.VerdictAllow && len(d.Arguments) > 0 {
				out = append(out, EditRecord{Key: d.Key, Tool: call.Name, Original: call.Arguments, Edited: d.Arguments})
			}
		}
	}
	return out
}
