package anthropic

import (
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// TestEditNoteReachesModel: the note of an edited call is part of the
// tool result the model reads.
func TestEditNoteReachesModel(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(`{"id":"msg_f","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Shipped box 3."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":4}}`))
	fakeapi.CheckEditNote(t, f.model(t), f.Server)
}
