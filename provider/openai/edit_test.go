package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/openai"
)

// editedPrompt is a prompt whose last tool result ran with arguments an
// approver edited, and the wire text its note must reach the model as.
func editedPrompt() (*toolgate.Prompt, string) {
	edit := `{"box":3}`
	p := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Ship box 1."},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_1", Name: "ship", Arguments: `{"box":1}`}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "call_1", Name: "ship", Status: toolgate.ResultOK,
			Content: toolgate.EditNote + edit + "\n" + `"shipped"`, EditedArguments: edit}}},
	}}
	wire, _ := json.Marshal(toolgate.EditNote + edit)
	return p, strings.Trim(string(wire), `"`)
}

// TestEditNoteReachesModel: the note of an edited call is part of the
// tool result the model reads, in both APIs.
func TestEditNoteReachesModel(t *testing.T) {
	for _, tc := range []struct {
		api    openai.API
		answer string
	}{
		{openai.ChatCompletions, completion("ok", "stop")},
		{openai.Responses, response("completed", "ok")},
	} {
		t.Run(tc.api.String(), func(t *testing.T) {
			s := newServer(t, jsonReply(200, tc.answer))
			p, note := editedPrompt()
			if _, err := s.model(tc.api).Generate(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if body := string(s.received()[0].Body); !strings.Contains(body, note) {
				t.Errorf("the request does not carry the edit note %q:\n%s", note, body)
			}
		})
	}
}
