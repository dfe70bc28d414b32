package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate"
)

// The provider tags of the parts this package reads (see [toolgate.Part]).
// A part is replayed only to the API whose tag it carries.
const (
	// ProviderResponses tags the parts read from the Responses API.
	ProviderResponses = "openai.responses"
	// ProviderChat tags the parts read from the Chat Completions API.
	ProviderChat = "openai.chat"
)

// DefaultMaxFileBytes is the limit on the inline file bytes of one request
// when [Options.MaxFileBytes] is 0: 50 MiB, the image bytes OpenAI takes
// in one request (Images and vision guide, image input requirements).
const DefaultMaxFileBytes = 50 << 20

var (
	// ErrFileTooLarge: the inline files (images and other files given by
	// their bytes) of a prompt add up to more than [Options.MaxFileBytes].
	// The request is not sent.
	ErrFileTooLarge = errors.New("openai: files too large")
	// ErrUnsupportedFile: the API cannot take a file part as given, such
	// as a file other than an image given by URL to Chat Completions, which
	// takes such files only by their bytes. The request is not sent.
	ErrUnsupportedFile = errors.New("openai: unsupported file")
)

// fileBudget counts the inline file bytes of one request.
type fileBudget struct {
	limit int64 // < 0: none
	used  int64
}

func newFileBudget(limit int64) *fileBudget {
	if limit == 0 {
		limit = DefaultMaxFileBytes
	}
	return &fileBudget{limit: limit}
}

// take counts a file of msg's part; it fails once the files are over the
// limit.
func (b *fileBudget) take(msg, part int, f toolgate.FilePart) error {
	b.used += int64(len(f.Data))
	if b.limit >= 0 && b.used > b.limit {
		return fmt.Errorf("%w: message %d part %d: the inline files of the request exceed %d bytes", ErrFileTooLarge, msg, part, b.limit)
	}
	return nil
}

// dataURL returns f's bytes as a data URL, or its URL.
func dataURL(f toolgate.FilePart) string {
	if f.URL != "" {
		return f.URL
	}
	return "data:" + f.MediaType + ";base64," + base64.StdEncoding.EncodeToString(f.Data)
}

// fileName returns the name sent with a file: its own, or "file".
func fileName(f toolgate.FilePart) string {
	if f.Name != "" {
		return f.Name
	}
	return "file"
}

// userFiles checks the parts of a user message or tool result: only text
// and files, each file valid (the same rules as [toolgate.Parts] decoding).
func userFiles(msg int, ps toolgate.Parts) error {
	for j, p := range ps {
		switch p := p.(type) {
		case toolgate.TextPart:
		case toolgate.FilePart:
			if err := checkFile(p); err != nil {
				return fmt.Errorf("%w: message %d part %d: %v", ErrUnsupportedFile, msg, j, err)
			}
		default:
			return fmt.Errorf("openai: %w: message %d part %d: a %T cannot be sent in a user message or tool result", toolgate.ErrInvalidMessage, msg, j, p)
		}
	}
	return nil
}

// checkFile reports a file part that holds neither or both of data and URL,
// or no media type.
func checkFile(f toolgate.FilePart) error {
	switch {
	case f.MediaType == "":
		return errors.New("file without media type")
	case len(f.Data) > 0 && f.URL != "":
		return errors.New("file with both data and url")
	case len(f.Data) == 0 && f.URL == "":
		return errors.New("file without data or url")
	}
	return nil
}

// objectFields decodes a JSON object into its fields; a value that is not
// an object gives nil.
func objectFields(raw []byte) map[string]json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// opaqueString returns the string field key of an opaque object, or "".
func opaqueString(opaque json.RawMessage, key string) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(opaque, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v[key], &s) != nil {
		return ""
	}
	return s
}

// compactObject marshals fields as a compact JSON object with sorted keys;
// no fields give nil.
func compactObject(fields map[string]json.RawMessage) json.RawMessage {
	if len(fields) == 0 {
		return nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return b
}
