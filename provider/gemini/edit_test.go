package gemini

import (
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// TestEditNoteReachesModel: the note of an edited call is part of the
// tool result the model reads.
func TestEditNoteReachesModel(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(simpleResponse))
	fakeapi.CheckEditNote(t, f.model(t), f.Server)
}
