package gemini

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
)

var png = []byte("\x89PNG\r\n\x1a\n....")

const pngBase64 = "iVBORw0KGgouLi4u"

// TestFiles: files of a user message become inlineData and fileData parts
// after its text, in order; files of a tool result that a functionResponse
// takes go into its parts, other files and text follow the function
// responses as parts of their own.
func TestFiles(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(simpleResponse))
	prompt := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Compare these.", Parts: toolgate.Parts{
			toolgate.FilePart{MediaType: "image/png", Data: png, Name: "a.png"},
			toolgate.TextPart{Text: "And the report:"},
			toolgate.FilePart{MediaType: "application/pdf", URL: "https://generativelanguage.googleapis.com/v1beta/files/abc"},
		}},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "shot", Arguments: "{}"}, {ID: "c2", Name: "record", Arguments: "{}"}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "c1", Name: "shot", Content: "The screen:", Parts: toolgate.Parts{toolgate.FilePart{MediaType: "image/png", Data: png}}},
			{CallID: "c2", Name: "record", Content: "The sound:", Parts: toolgate.Parts{
				toolgate.FilePart{MediaType: "audio/wav", Data: []byte("RIFF")},
				toolgate.TextPart{Text: "(two seconds)"},
			}},
		}},
	}}
	if _, err := f.model(t).Generate(t.Context(), prompt); err != nil {
		t.Fatal(err)
	}
	contents := f.JSON(0)["contents"].([]any)
	wantUser := map[string]any{"role": "user", "parts": []any{
		map[string]any{"text": "Compare these."},
		map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": pngBase64}},
		map[string]any{"text": "And the report:"},
		map[string]any{"fileData": map[string]any{"mimeType": "application/pdf", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
	}}
	if diff := cmp.Diff(wantUser, contents[0]); diff != "" {
		t.Errorf("user content (-want +got):\n%s", diff)
	}
	wantResults := map[string]any{"role": "user", "parts": []any{
		map[string]any{"functionResponse": map[string]any{"id": "c1", "name": "shot", "response": map[string]any{"output": "The screen:"},
			"parts": []any{map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": pngBase64}}}}},
		map[string]any{"functionResponse": map[string]any{"id": "c2", "name": "record", "response": map[string]any{"output": "The sound:"}}},
		map[string]any{"inlineData": map[string]any{"mimeType": "audio/wav", "data": "UklGRg=="}},
		map[string]any{"text": "(two seconds)"},
	}}
	if diff := cmp.Diff(wantResults, contents[2]); diff != "" {
		t.Errorf("tool results content (-want +got):\n%s", diff)
	}
}

// TestFileErrors: a file the API does not take, or inline files over the
// request limit, are a *FileError before any request is made.
func TestFileErrors(t *testing.T) {
	half := bytes.Repeat([]byte{1}, MaxInlineSize/2+1)
	for _, tt := range []struct {
		name  string
		files toolgate.Parts
		limit int
	}{
		{"unsupported type", toolgate.Parts{toolgate.FilePart{MediaType: "application/zip", Data: []byte("PK")}}, 0},
		{"bad media type", toolgate.Parts{toolgate.FilePart{MediaType: "image/", Data: png}}, 0},
		{"inline files too large together", toolgate.Parts{
			toolgate.FilePart{MediaType: "image/png", Data: half},
			toolgate.FilePart{MediaType: "application/pdf", Data: half},
		}, MaxInlineSize},
	} {
		for _, where := range []string{"user", "tool result"} {
			t.Run(tt.name+" in "+where, func(t *testing.T) {
				f := newFakeAPI(t)
				msgs := []toolgate.Message{&toolgate.UserMessage{Text: "Look.", Parts: tt.files}}
				at := 0
				if where == "tool result" {
					at = 2
					msgs = []toolgate.Message{&toolgate.UserMessage{Text: "Look."},
						&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "shot", Arguments: "{}"}}},
						&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "shot", Parts: tt.files}}}}
				}
				_, err := f.model(t).Generate(t.Context(), &toolgate.Prompt{Messages: msgs})
				var fe *FileError
				if !errors.As(err, &fe) || !errors.Is(err, toolgate.ErrInvalidMessage) {
					t.Fatalf("got %v, want a *FileError", err)
				}
				if fe.Message != at || fe.Limit != tt.limit {
					t.Errorf("got %+v, want message %d, limit %d", fe, at, tt.limit)
				}
				if f.Count() != 0 {
					t.Error("a request was made")
				}
			})
		}
	}
}
