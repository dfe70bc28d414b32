package gemini

import (
	"fmt"
	"mime"
	"strings"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
)

// MaxInlineSize is the most file bytes, in all, a request carries inline:
// the API's limit for a request with inline data. Larger files go through
// the Files API and are given by their URI.
const MaxInlineSize = 20 << 20

// FileError reports a [toolgate.FilePart] the Gemini API does not take: a
// media type it does not read, or inline files larger than its limit. It
// wraps [toolgate.ErrInvalidMessage].
type FileError struct {
	// Message is the index of the message in the prompt.
	Message int
	// MediaType is the file's media type.
	MediaType string
	// Size is the size in bytes of the request's inline files up to and
	// with this one; 0 for a file given by URL.
	Size int
	// Limit is the API's limit in bytes ([MaxInlineSize]); 0 when the
	// media type is what the API does not take.
	Limit int
}

func (e *FileError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("gemini: message %d: %d bytes of inline files (up to this %s file) are more than the API's limit of %d bytes", e.Message, e.Size, e.MediaType, e.Limit)
	}
	return fmt.Sprintf("gemini: message %d: the API does not take a %s file (images, audio, video, text and PDF)", e.Message, e.MediaType)
}

// Unwrap returns [toolgate.ErrInvalidMessage].
func (e *FileError) Unwrap() error { return toolgate.ErrInvalidMessage }

// inline counts the bytes of inline files of one request.
type inline struct{ size int }

// mediaType returns the type of a file part when the API reads it: images,
// audio, video, text and PDF.
func mediaType(msg int, f toolgate.FilePart) (string, error) {
	mt, _, err := mime.ParseMediaType(f.MediaType)
	if err != nil {
		return "", &FileError{Message: msg, MediaType: f.MediaType}
	}
	top, _, _ := strings.Cut(mt, "/")
	switch {
	case top == "image", top == "audio", top == "video", top == "text", mt == "application/pdf":
		return mt, nil
	}
	return "", &FileError{Message: msg, MediaType: mt}
}

// add counts a file of message msg.
func (in *inline) add(msg int, mt string, data []byte) error {
	in.size += len(data)
	if in.size > MaxInlineSize {
		return &FileError{Message: msg, MediaType: mt, Size: in.size, Limit: MaxInlineSize}
	}
	return nil
}

// filePart maps a file part of message msg to an inlineData part (bytes)
// or a fileData part (a URL: a Files API URI, or a URL the API fetches).
// The file name is not sent: the Gemini API has no field for it.
func (in *inline) filePart(msg int, f toolgate.FilePart) (*genai.Part, error) {
	mt, err := mediaType(msg, f)
	if err != nil {
		return nil, err
	}
	if f.URL != "" {
		return &genai.Part{FileData: &genai.FileData{FileURI: f.URL, MIMEType: mt}}, nil
	}
	if err := in.add(msg, mt, f.Data); err != nil {
		return nil, err
	}
	return &genai.Part{InlineData: &genai.Blob{Data: f.Data, MIMEType: mt}}, nil
}

// userParts converts a user message's content: its text, then its parts.
func (in *inline) userParts(msg int, m *toolgate.UserMessage) ([]*genai.Part, error) {
	if len(m.Parts) == 0 {
		return []*genai.Part{{Text: m.Text}}, nil
	}
	var out []*genai.Part
	for _, p := range m.Content() {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Text != "" {
				out = append(out, &genai.Part{Text: p.Text})
			}
		case toolgate.FilePart:
			part, err := in.filePart(msg, p)
			if err != nil {
				return nil, err
			}
			out = append(out, part)
		default:
			return nil, fmt.Errorf("gemini: message %d: %w: a user message cannot hold a %T", msg, toolgate.ErrInvalidMessage, p)
		}
	}
	if len(out) == 0 {
		out = append(out, &genai.Part{Text: m.Text})
	}
	return out, nil
}

// functionResponseType reports whether the API takes files of media type
// mt inside a functionResponse (multimodal function responses).
func functionResponseType(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain":
		return true
	}
	return false
}

// resultParts converts the parts of one tool result: files of the types a
// functionResponse takes go into its parts; other files and text go as
// parts of their own after the message's function responses (returned as
// after), which every model reads.
func (in *inline) resultParts(msg int, fr *genai.FunctionResponse, parts toolgate.Parts) (after []*genai.Part, err error) {
	for _, p := range parts {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Text != "" {
				after = append(after, &genai.Part{Text: p.Text})
			}
		case toolgate.FilePart:
			mt, err := mediaType(msg, p)
			if err != nil {
				return nil, err
			}
			if !functionResponseType(mt) {
				part, err := in.filePart(msg, p)
				if err != nil {
					return nil, err
				}
				after = append(after, part)
				continue
			}
			if p.URL != "" {
				fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{FileURI: p.URL, MIMEType: mt}})
				continue
			}
			if err := in.add(msg, mt, p.Data); err != nil {
				return nil, err
			}
			fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{Data: p.Data, MIMEType: mt}})
		default:
			return nil, fmt.Errorf("gemini: message %d: %w: a tool result cannot hold a %T", msg, toolgate.ErrInvalidMessage, p)
		}
	}
	return after, nil
}
