package anthropic

import (
	"encoding/base64"
	"fmt"
	"mime"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolgate/toolgate"
)

// MaxImageSize is the largest image, in bytes, the Messages API takes
// inline (base64).
const MaxImageSize = 5 << 20

// MaxDocumentSize is the largest PDF or text document, in bytes, sent
// inline: the API's limit for a whole request, which no one document may
// exceed.
const MaxDocumentSize = 32 << 20

// FileError reports a [toolgate.FilePart] the Messages API does not take:
// a media type it does not read, or a file larger than its limit. It
// wraps [toolgate.ErrInvalidMessage].
type FileError struct {
	// Message is the index of the message in the prompt.
	Message int
	// MediaType is the file's media type.
	MediaType string
	// Size is the file's size in bytes; 0 for a file given by URL.
	Size int
	// Limit is the API's limit in bytes for this kind of file; 0 when the
	// media type (or, for text, a URL or content that is not UTF-8) is
	// what the API does not take.
	Limit int
}

func (e *FileError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("anthropic: message %d: a %s file of %d bytes is larger than the API's limit of %d bytes", e.Message, e.MediaType, e.Size, e.Limit)
	}
	return fmt.Sprintf("anthropic: message %d: the API does not take a %s file in this form (images: JPEG, PNG, GIF, WebP; documents: PDF, UTF-8 plain text given by its bytes)", e.Message, e.MediaType)
}

// Unwrap returns [toolgate.ErrInvalidMessage].
func (e *FileError) Unwrap() error { return toolgate.ErrInvalidMessage }

// fileBlock is a file as the API takes it: an image block or a document
// block.
type fileBlock struct {
	image    *sdk.ImageBlockParam
	document *sdk.DocumentBlockParam
}

// convertFile maps a file part of message msg: images (JPEG, PNG, GIF,
// WebP) to image blocks, PDFs to document blocks, both with a base64 or a
// url source, and plain text given by its bytes to a document block with
// a text source. The file's name, when set, is a document's title.
func convertFile(msg int, f toolgate.FilePart) (fileBlock, error) {
	mt, _, err := mime.ParseMediaType(f.MediaType)
	if err != nil {
		return fileBlock{}, &FileError{Message: msg, MediaType: f.MediaType}
	}
	bad := &FileError{Message: msg, MediaType: mt, Size: len(f.Data)}
	switch mt {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		b := &sdk.ImageBlockParam{}
		if f.URL != "" {
			b.Source.OfURL = &sdk.URLImageSourceParam{URL: f.URL}
		} else {
			if len(f.Data) > MaxImageSize {
				bad.Limit = MaxImageSize
				return fileBlock{}, bad
			}
			b.Source.OfBase64 = &sdk.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(f.Data), MediaType: sdk.Base64ImageSourceMediaType(mt)}
		}
		return fileBlock{image: b}, nil
	case "application/pdf", "text/plain":
		if len(f.Data) > MaxDocumentSize {
			bad.Limit = MaxDocumentSize
			return fileBlock{}, bad
		}
		b := &sdk.DocumentBlockParam{}
		switch {
		case mt == "text/plain" && (f.URL != "" || !utf8.Valid(f.Data)):
			return fileBlock{}, bad
		case mt == "text/plain":
			b.Source.OfText = &sdk.PlainTextSourceParam{Data: string(f.Data)}
		case f.URL != "":
			b.Source.OfURL = &sdk.URLPDFSourceParam{URL: f.URL}
		default:
			b.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(f.Data)}
		}
		if f.Name != "" {
			b.Title = param.NewOpt(f.Name)
		}
		return fileBlock{document: b}, nil
	}
	return fileBlock{}, bad
}

// userBlocks converts a user message's content (its text, then its parts)
// to content blocks. A message with no content is one empty text block, as
// before parts existed.
func userBlocks(i int, m *toolgate.UserMessage) ([]sdk.ContentBlockParamUnion, error) {
	if len(m.Parts) == 0 {
		return []sdk.ContentBlockParamUnion{sdk.NewTextBlock(m.Text)}, nil
	}
	var blocks []sdk.ContentBlockParamUnion
	for _, p := range m.Content() {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Text))
			}
		case toolgate.FilePart:
			fb, err := convertFile(i, p)
			if err != nil {
				return nil, err
			}
			if fb.image != nil {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfImage: fb.image})
			} else {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfDocument: fb.document})
			}
		default:
			return nil, fmt.Errorf("anthropic: message %d: %w: a user message cannot hold a %T", i, toolgate.ErrInvalidMessage, p)
		}
	}
	if len(blocks) == 0 {
		blocks = append(blocks, sdk.NewTextBlock(m.Text))
	}
	return blocks, nil
}

// resultFiles converts the parts of a tool result (text and files) to
// tool_result content.
func resultFiles(i int, parts toolgate.Parts) ([]sdk.ToolResultBlockParamContentUnion, error) {
	var out []sdk.ToolResultBlockParamContentUnion
	for _, p := range parts {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Text != "" {
				out = append(out, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: p.Text}})
			}
		case toolgate.FilePart:
			fb, err := convertFile(i, p)
			if err != nil {
				return nil, err
			}
			if fb.image != nil {
				out = append(out, sdk.ToolResultBlockParamContentUnion{OfImage: fb.image})
			} else {
				out = append(out, sdk.ToolResultBlockParamContentUnion{OfDocument: fb.document})
			}
		default:
			return nil, fmt.Errorf("anthropic: message %d: %w: a tool result cannot hold a %T", i, toolgate.ErrInvalidMessage, p)
		}
	}
	return out, nil
}
