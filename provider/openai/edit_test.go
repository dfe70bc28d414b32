package openai_test

import (
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/openai"
)

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
			fakeapi.CheckEditNote(t, s.model(tc.api), s.Server)
		})
	}
}
