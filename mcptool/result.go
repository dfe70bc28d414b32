package mcptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// ToolError is the error a tool returns when the server answered the call
// with an error result (isError). Its text is the result's content, mapped
// like a successful result, so the model reads what the server said.
// Check for it with errors.As.
type ToolError struct {
	// Tool is the name the model sees.
	Tool string
	// Content is the result's content as text.
	Content string
}

func (e *ToolError) Error() string {
	if e.Content == "" {
		return fmt.Sprintf("tool %s failed without a message", e.Tool)
	}
	return e.Content
}

// resultText maps a call's result to the text the model reads:
//   - text content is joined with newlines;
//   - structured content is written as JSON, after the content, unless a
//     text part already holds the same JSON value (servers are asked to
//     repeat structured results as text), which is then not repeated;
//   - other content is described in brackets: images and audio by media
//     type and size, resource links by name and URI, embedded resources by
//     URI, with their text when they have some.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var structured, canon []byte
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			b = fmt.Appendf(nil, "[structured content that cannot be written as JSON: %v]", err)
		} else {
			canon = canonicalJSON(b)
		}
		structured = b
	}
	var sb strings.Builder
	add := func(s string) {
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
	}
	dup := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case nil:
		case *mcp.TextContent:
			if canon != nil && !dup && sameJSON(c.Text, canon) {
				dup = true
			}
			add(c.Text)
		case *mcp.ImageContent:
			add(fmt.Sprintf("[image: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.AudioContent:
			add(fmt.Sprintf("[audio: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			add(fmt.Sprintf("[resource link: %s %s]", orUnknown(c.Name), c.URI))
		case *mcp.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				add("[resource: empty]")
			case r.Text != "":
				add(fmt.Sprintf("[resource: %s]\n%s", r.URI, r.Text))
			default:
				add(fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob)))
			}
		default:
			add(fmt.Sprintf("[content of type %T]", c))
		}
	}
	if structured != nil && !dup {
		add(string(structured))
	}
	return sb.String()
}

// attachImages attaches the result's images to the call's result, for
// the models that read images in tool results; the text keeps describing
// them. An image the client refuses (too large, no valid media type) stays
// a description only. Audio and other binary content are not attached:
// few models' APIs take them in tool results.
func attachImages(req *toolgate.ToolRequest, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok && len(img.Data) > 0 && strings.HasPrefix(img.MIMEType, "image/") {
			_ = req.AttachFile(toolgate.FilePart{MediaType: img.MIMEType, Data: img.Data})
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// canonicalJSON returns the compact JSON of the value b holds, object keys
// sorted, or nil when b is not JSON.
func canonicalJSON(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil
	}
	c, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return c
}

// sameJSON reports whether text holds JSON for the value whose canonical
// JSON is want.
func sameJSON(text string, want []byte) bool {
	t := bytes.TrimSpace([]byte(text))
	if len(t) == 0 || !json.Valid(t) {
		return false
	}
	return bytes.Equal(canonicalJSON(t), want)
}

// maxSchemaBytes caps the size of an input schema a server may send.
const maxSchemaBytes = 256 << 10

// Errors that say why a tool of a server is not exposed (see [Issue]).
var (
	// ErrInvalidName: the tool's name, with the prefix, is not a valid
	// toolgate tool name (see [toolgate.ValidToolName]).
	ErrInvalidName = errors.New("invalid tool name")
	// ErrDuplicateName: the server listed two tools of the same name; the
	// first is exposed.
	ErrDuplicateName = errors.New("duplicate tool name")
	// ErrInvalidSchema: the tool's input schema does not decode into a
	// JSON schema, does not resolve, is not of type "object", or is larger
	// than 256 KiB.
	ErrInvalidSchema = errors.New("invalid input schema")
)

// decodeSchema turns a server's input schema (any JSON value) into a
// schema for the model. A nil value gives a nil schema (any object). A
// schema without a type is taken as an object schema.
func decodeSchema(v any) (*jsonschema.Schema, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return decodeSchemaJSON(b)
}

func decodeSchemaJSON(b []byte) (*jsonschema.Schema, error) {
	if len(b) > maxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidSchema, len(b), maxSchemaBytes)
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil, nil
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	switch {
	case s.Type == "object":
	case s.Type == "" && len(s.Types) == 0:
		s.Type = "object"
	default:
		return nil, fmt.Errorf("%w: type %q, want \"object\"", ErrInvalidSchema, typeOf(s))
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return s, nil
}

func typeOf(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	return strings.Join(s.Types, ",")
}
