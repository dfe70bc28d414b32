package anthropic

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
)

var png = []byte("\x89PNG\r\n\x1a\n....")

// TestFiles: files of a user message become image and document blocks
// after its text, in order; files of a tool result become blocks of the
// tool_result content after its text.
func TestFiles(t *testing.T) {
	f := newFakeAPI(t, jsonAnswer(`{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	prompt := &toolgate.Prompt{Messages: []toolgate.Message{
		&toolgate.UserMessage{Text: "Compare these.", Parts: toolgate.Parts{
			toolgate.FilePart{MediaType: "image/png", Data: png},
			toolgate.FilePart{MediaType: "image/jpeg", URL: "https://example.com/a.jpg"},
			toolgate.TextPart{Text: "And the report:"},
			toolgate.FilePart{MediaType: "application/pdf", URL: "https://example.com/r.pdf", Name: "Report"},
			toolgate.FilePart{MediaType: "application/pdf", Data: []byte("%PDF-1.7")},
			toolgate.FilePart{MediaType: "text/plain; charset=utf-8", Data: []byte("notes"), Name: "notes.txt"},
		}},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "toolu_1", Name: "shot", Arguments: "{}"}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "toolu_1", Name: "shot", Content: "The screen:", Parts: toolgate.Parts{
			toolgate.FilePart{MediaType: "image/png", Data: png},
		}}}},
	}}
	if _, err := f.model(t).Generate(t.Context(), prompt); err != nil {
		t.Fatal(err)
	}
	msgs := f.JSON(0)["messages"].([]any)
	b64 := "iVBORw0KGgouLi4u"
	wantUser := []any{
		map[string]any{"type": "text", "text": "Compare these."},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": b64}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.jpg"}},
		map[string]any{"type": "text", "text": "And the report:"},
		map[string]any{"type": "document", "title": "Report", "source": map[string]any{"type": "url", "url": "https://example.com/r.pdf"}},
		map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjc="}},
		map[string]any{"type": "document", "title": "notes.txt", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "notes"}},
	}
	if diff := cmp.Diff(wantUser, msgs[0].(map[string]any)["content"]); diff != "" {
		t.Errorf("user content (-want +got):\n%s", diff)
	}
	wantResult := []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{
		map[string]any{"type": "text", "text": "The screen:"},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": b64}},
	}}}
	if diff := cmp.Diff(wantResult, msgs[2].(map[string]any)["content"]); diff != "" {
		t.Errorf("tool result content (-want +got):\n%s", diff)
	}
}

// TestFileErrors: a file the API does not take is a *FileError, before
// any request is made.
func TestFileErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		file  toolgate.FilePart
		limit int
	}{
		{"unsupported image type", toolgate.FilePart{MediaType: "image/tiff", Data: []byte("II*")}, 0},
		{"unsupported document type", toolgate.FilePart{MediaType: "application/zip", URL: "https://example.com/a.zip"}, 0},
		{"image too large", toolgate.FilePart{MediaType: "image/png", Data: bytes.Repeat([]byte{1}, MaxImageSize+1)}, MaxImageSize},
		{"document too large", toolgate.FilePart{MediaType: "application/pdf", Data: bytes.Repeat([]byte{1}, MaxDocumentSize+1)}, MaxDocumentSize},
		{"text by URL", toolgate.FilePart{MediaType: "text/plain", URL: "https://example.com/a.txt"}, 0},
		{"text not UTF-8", toolgate.FilePart{MediaType: "text/plain", Data: []byte{0xff, 0xfe}}, 0},
		{"bad media type", toolgate.FilePart{MediaType: "image/", Data: png}, 0},
	} {
		for _, where := range []string{"user", "tool result"} {
			t.Run(tt.name+" in "+where, func(t *testing.T) {
				f := newFakeAPI(t)
				msgs := []toolgate.Message{&toolgate.UserMessage{Text: "Look.", Parts: toolgate.Parts{tt.file}}}
				at := 0
				if where == "tool result" {
					at = 2
					msgs = []toolgate.Message{&toolgate.UserMessage{Text: "Look."},
						&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "toolu_1", Name: "shot", Arguments: "{}"}}},
						&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "toolu_1", Name: "shot", Parts: toolgate.Parts{tt.file}}}}}
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
