package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
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
// tool result the model reads.
func TestEditNoteReachesModel(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(`{"id":"msg_f","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Shipped box 3."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":4}}`))
	p, note := editedPrompt()
	if _, err := f.model(t).Generate(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	body := string(f.Body(0))
	if !strings.Contains(body, note) {
		t.Errorf("the request does not carry the edit note %q:\n%s", note, body)
	}
}
