package toolgate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"
)

// Part is one piece of a message's content, in the order the author gave
// it: a [TextPart], a [ReasoningPart], a [RedactedReasoningPart], a
// [ToolCallPart] or a [FilePart]. The set is closed; use a type switch.
//
// Parts that came from a model carry the name of the provider adapter that
// read them (Provider) and whatever that provider needs back on the next
// request (Signature, Opaque). Adapters replay such parts only to their own
// provider, byte for byte; another provider's adapter drops them.
//
// Every part marshals to a JSON object whose "type" field says which kind
// it is ("text", "reasoning", "redacted_reasoning", "tool_call", "file").
type Part interface {
	partType() string
}

// Parts is an ordered list of parts. Its JSON form is an array of the
// parts' objects; decoding it checks each part (see [Part]).
type Parts []Part

// TextPart is text. In a reply that holds parts, the texts of its text
// parts, joined, are the reply's Text.
//
// JSON: {"type":"text","text":"..."} plus "provider", "signature" and
// "opaque" when set.
type TextPart struct {
	Text string
	// Provider names the adapter that read the part; set when Signature
	// or Opaque is.
	Provider string
	// Signature is the provider's opaque signature of the part (Gemini's
	// thoughtSignature on a text part).
	Signature string
	// Opaque holds provider fields that go back with the text, such as
	// the phase of an OpenAI Responses message, as a JSON object (kept
	// without insignificant space). It never holds the text.
	Opaque json.RawMessage
}

// ReasoningPart is the model's reasoning: its thinking, or a summary of
// it, with whatever the provider needs to accept it back. Adapters send it
// back unchanged to the provider that produced it; the privacy guard never
// rewrites it, and it is shown to users and approvers only where a setting
// allows.
//
// JSON: {"type":"reasoning","text":"...","provider":"...","signature":"...",
// "opaque":{...}}; empty fields are omitted.
type ReasoningPart struct {
	// Text is the readable reasoning or its summary; it may be empty
	// (encrypted reasoning).
	Text string
	// Provider names the adapter that read the part.
	Provider string
	// Signature is the provider's signature or encrypted content of the
	// reasoning (Anthropic's signature, Gemini's thoughtSignature, OpenAI's
	// encrypted_content).
	Signature string
	// Opaque is the provider's item as it must be sent back, when the
	// provider wants more than text and signature (an OpenAI Responses
	// reasoning item with its id and summary), as a JSON object (kept
	// without insignificant space).
	Opaque json.RawMessage
}

// RedactedReasoningPart is reasoning the provider withheld: an encrypted
// payload to send back unchanged (Anthropic's redacted_thinking).
//
// JSON: {"type":"redacted_reasoning","provider":"...","data":"..."}.
type RedactedReasoningPart struct {
	Provider string
	Data     string
}

// ToolCallPart places a tool call among a reply's parts. The call itself is
// the reply's ToolCalls[Index]: the call that the gate checks is the call
// that is sent back.
//
// JSON: {"type":"tool_call","index":0} plus "provider", "signature" and
// "opaque" when set.
type ToolCallPart struct {
	Index int
	// Provider names the adapter that read the part; set when Signature
	// or Opaque is.
	Provider string
	// Signature is the provider's per-call signature (Gemini's
	// thoughtSignature on a functionCall part).
	Signature string
	// Opaque holds provider fields of the call item other than its id,
	// name and arguments.
	Opaque json.RawMessage
}

// FilePart is an image or another file, given by its bytes or by a URL,
// with its media type ("image/png", "application/pdf").
//
// JSON: {"type":"file","media_type":"...","data":"<base64>"} or with "url"
// instead of "data", plus "name" when set.
type FilePart struct {
	MediaType string
	// Data is the file's content. Exactly one of Data and URL is set.
	Data []byte
	// URL is an http or https URL the provider fetches the file from.
	URL string
	// Name is the file's name, if it has one.
	Name string
}

// IsImage reports whether the file's media type is an image type.
func (p FilePart) IsImage() bool { return strings.HasPrefix(p.MediaType, "image/") }

func (TextPart) partType() string              { return "text" }
func (ReasoningPart) partType() string         { return "reasoning" }
func (RedactedReasoningPart) partType() string { return "redacted_reasoning" }
func (ToolCallPart) partType() string          { return "tool_call" }
func (FilePart) partType() string              { return "file" }

// partJSON is the wire form of every part kind.
type partJSON struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Index     *int            `json:"index,omitempty"`
	Provider  string          `json:"provider,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	Opaque    json.RawMessage `json:"opaque,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
	URL       string          `json:"url,omitempty"`
	Name      string          `json:"name,omitempty"`
}

// MarshalJSON implements [json.Marshaler].
func (ps Parts) MarshalJSON() ([]byte, error) {
	if ps == nil {
		return []byte("null"), nil
	}
	out := make([]partJSON, len(ps))
	for i, p := range ps {
		if err := checkPart(p); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		out[i] = toPartJSON(p)
	}
	return json.Marshal(out)
}

// UnmarshalJSON implements [json.Unmarshaler]. An unknown part type, a
// field of another kind's part, or a part that [FilePart] rules forbid is an
// error wrapping [ErrInvalidMessage].
func (ps *Parts) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*ps = nil
		return nil
	}
	// One pass over all the parts: each kind's own fields are checked
	// after, and a field no kind has is refused by the decoder. Parts
	// that do not decode are read again one by one, for an error that
	// names the part and the problem.
	var vs []partJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vs); err != nil {
		return partsError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return partsError(data, fmt.Errorf("data after the array"))
	}
	out := make(Parts, len(vs))
	for i := range vs {
		if vs[i].Type == "" {
			return partsError(data, fmt.Errorf("part %d: missing type", i))
		}
		p, err := decodePart(&vs[i])
		if err != nil {
			return fmt.Errorf("%w: part %d: %v", ErrInvalidMessage, i, err)
		}
		out[i] = p
	}
	*ps = out
	return nil
}

// partsError returns the error of a parts array that failed to decode in
// one pass (with err): that of its first part that does not decode on its
// own, or err.
func partsError(data []byte, err error) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Errorf("%w: parts: %v", ErrInvalidMessage, err)
	}
	for i, raw := range raws {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("%w: part %d: not a JSON object", ErrInvalidMessage, i)
		}
		var v partJSON
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%w: part %d: %v", ErrInvalidMessage, i, err)
		}
		if _, err := decodePart(&v); err != nil {
			return fmt.Errorf("%w: part %d: %v", ErrInvalidMessage, i, err)
		}
	}
	return fmt.Errorf("%w: parts: %v", ErrInvalidMessage, err)
}

func toPartJSON(p Part) partJSON {
	switch p := p.(type) {
	case TextPart:
		return partJSON{Type: "text", Text: p.Text, Provider: p.Provider, Signature: p.Signature, Opaque: p.Opaque}
	case ReasoningPart:
		return partJSON{Type: "reasoning", Text: p.Text, Provider: p.Provider, Signature: p.Signature, Opaque: p.Opaque}
	case RedactedReasoningPart:
		return partJSON{Type: "redacted_reasoning", Provider: p.Provider, Data: p.Data}
	case ToolCallPart:
		i := p.Index
		return partJSON{Type: "tool_call", Index: &i, Provider: p.Provider, Signature: p.Signature, Opaque: p.Opaque}
	case FilePart:
		v := partJSON{Type: "file", MediaType: p.MediaType, URL: p.URL, Name: p.Name}
		if len(p.Data) > 0 {
			v.Data = base64.StdEncoding.EncodeToString(p.Data)
		}
		return v
	}
	panic("unreachable: checked by checkPart")
}

// decodePart makes the part that v, one element of a parts array, holds.
func decodePart(v *partJSON) (Part, error) {
	v.Opaque = compactOpaque(v.Opaque)
	// Each kind allows only its own fields.
	var extra []string
	has := func(name string, set bool) {
		if set {
			extra = append(extra, name)
		}
	}
	var p Part
	switch v.Type {
	case "text", "reasoning":
		has("index", v.Index != nil)
		has("data", v.Data != "")
		has("media_type", v.MediaType != "")
		has("url", v.URL != "")
		has("name", v.Name != "")
		if v.Type == "text" {
			p = TextPart{Text: v.Text, Provider: v.Provider, Signature: v.Signature, Opaque: v.Opaque}
		} else {
			p = ReasoningPart{Text: v.Text, Provider: v.Provider, Signature: v.Signature, Opaque: v.Opaque}
		}
	case "redacted_reasoning":
		has("text", v.Text != "")
		has("index", v.Index != nil)
		has("signature", v.Signature != "")
		has("opaque", v.Opaque != nil)
		has("media_type", v.MediaType != "")
		has("url", v.URL != "")
		has("name", v.Name != "")
		p = RedactedReasoningPart{Provider: v.Provider, Data: v.Data}
	case "tool_call":
		has("text", v.Text != "")
		has("data", v.Data != "")
		has("media_type", v.MediaType != "")
		has("url", v.URL != "")
		has("name", v.Name != "")
		if v.Index == nil {
			return nil, fmt.Errorf("tool_call part without index")
		}
		p = ToolCallPart{Index: *v.Index, Provider: v.Provider, Signature: v.Signature, Opaque: v.Opaque}
	case "file":
		has("text", v.Text != "")
		has("index", v.Index != nil)
		has("provider", v.Provider != "")
		has("signature", v.Signature != "")
		has("opaque", v.Opaque != nil)
		f := FilePart{MediaType: v.MediaType, URL: v.URL, Name: v.Name}
		if v.Data != "" {
			b, err := base64.StdEncoding.DecodeString(v.Data)
			if err != nil {
				return nil, fmt.Errorf("file part data is not base64: %v", err)
			}
			f.Data = b
		}
		p = f
	case "":
		return nil, fmt.Errorf("missing type")
	default:
		return nil, fmt.Errorf("unknown part type %q", v.Type)
	}
	if len(extra) > 0 {
		return nil, fmt.Errorf("%s part with field %s", v.Type, strings.Join(extra, ", "))
	}
	if err := checkPart(p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkPart reports what makes a part unusable whatever message holds it.
func checkPart(p Part) error {
	switch p := p.(type) {
	case nil:
		return fmt.Errorf("nil part")
	case TextPart:
		return checkOpaque(p.Opaque)
	case ReasoningPart:
		if p.Provider == "" {
			return fmt.Errorf("reasoning part without provider")
		}
		return checkOpaque(p.Opaque)
	case RedactedReasoningPart:
		if p.Provider == "" || p.Data == "" {
			return fmt.Errorf("redacted reasoning part needs provider and data")
		}
	case ToolCallPart:
		if p.Index < 0 {
			return fmt.Errorf("tool_call part with negative index %d", p.Index)
		}
		return checkOpaque(p.Opaque)
	case FilePart:
		return checkFile(p)
	default:
		return fmt.Errorf("unknown part %T", p)
	}
	return nil
}

func checkOpaque(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return fmt.Errorf("opaque is not a JSON object")
	}
	return nil
}

// compactOpaque returns the opaque object without insignificant space, the
// form it is kept in once decoded.
func compactOpaque(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw // invalid: checkOpaque reports it
	}
	return b.Bytes()
}

func checkFile(p FilePart) error {
	mt, _, err := mime.ParseMediaType(p.MediaType)
	if err != nil || !strings.Contains(mt, "/") {
		return fmt.Errorf("file part with invalid media type %q", p.MediaType)
	}
	switch {
	case len(p.Data) > 0 && p.URL != "":
		return fmt.Errorf("file part with both data and url")
	case len(p.Data) == 0 && p.URL == "":
		return fmt.Errorf("file part without data or url")
	case p.URL != "":
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("file part url must be an absolute http or https URL")
		}
	}
	return nil
}

// Content returns the reply's content in order: its Parts when it has any,
// otherwise a [TextPart] with its Text (when not empty) followed by one
// [ToolCallPart] per call. The result is the message's own slice when it
// has parts; do not modify it.
func (m *AssistantMessage) Content() []Part {
	if m == nil {
		return nil
	}
	if len(m.Parts) > 0 {
		return m.Parts
	}
	out := make([]Part, 0, 1+len(m.ToolCalls))
	if m.Text != "" {
		out = append(out, TextPart{Text: m.Text})
	}
	for i := range m.ToolCalls {
		out = append(out, ToolCallPart{Index: i})
	}
	return out
}

// Content returns the message's content in order: a [TextPart] with its
// Text (when not empty) followed by its Parts.
func (m *UserMessage) Content() []Part {
	if m == nil {
		return nil
	}
	out := make([]Part, 0, 1+len(m.Parts))
	if m.Text != "" {
		out = append(out, TextPart{Text: m.Text})
	}
	return append(out, m.Parts...)
}

// Clone returns a deep copy of the reply: its calls, parts, opaque
// payloads and file bytes are its own.
func (m *AssistantMessage) Clone() *AssistantMessage {
	if m == nil {
		return nil
	}
	c := &AssistantMessage{Text: m.Text}
	if m.ToolCalls != nil {
		c.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
	}
	c.Parts = cloneParts(m.Parts)
	return c
}

func cloneParts(ps Parts) Parts {
	if ps == nil {
		return nil
	}
	out := make(Parts, len(ps))
	for i, p := range ps {
		switch p := p.(type) {
		case TextPart:
			p.Opaque = bytes.Clone(p.Opaque)
			out[i] = p
		case ReasoningPart:
			p.Opaque = bytes.Clone(p.Opaque)
			out[i] = p
		case ToolCallPart:
			p.Opaque = bytes.Clone(p.Opaque)
			out[i] = p
		case FilePart:
			p.Data = bytes.Clone(p.Data)
			out[i] = p
		default:
			out[i] = p
		}
	}
	return out
}

// checkAssistantParts reports whether a reply's parts agree with its text
// and calls: the text parts joined are its Text, and its tool call parts
// name each call once, in call order. A reply without parts always agrees.
func checkAssistantParts(m *AssistantMessage) error {
	if len(m.Parts) == 0 {
		return nil
	}
	var text strings.Builder
	next := 0
	for i, p := range m.Parts {
		if err := checkPart(p); err != nil {
			return fmt.Errorf("%w: part %d: %v", ErrInvalidMessage, i, err)
		}
		switch p := p.(type) {
		case TextPart:
			text.WriteString(p.Text)
		case ToolCallPart:
			if p.Index != next {
				return fmt.Errorf("%w: part %d: tool call part %d, want %d (each call once, in order)", ErrInvalidMessage, i, p.Index, next)
			}
			next++
		}
	}
	if next != len(m.ToolCalls) {
		return fmt.Errorf("%w: %d tool call parts for %d tool calls", ErrInvalidMessage, next, len(m.ToolCalls))
	}
	if text.String() != m.Text {
		return fmt.Errorf("%w: the text parts do not add up to the reply's text", ErrInvalidMessage)
	}
	return nil
}

// checkUserParts reports a part a user message may not hold: only text
// without provider data, and files.
func checkUserParts(ps Parts) error {
	for i, p := range ps {
		if err := checkPart(p); err != nil {
			return fmt.Errorf("%w: part %d: %v", ErrInvalidMessage, i, err)
		}
		switch p := p.(type) {
		case TextPart:
			if p.Provider != "" || p.Signature != "" || p.Opaque != nil {
				return fmt.Errorf("%w: part %d: a user's text part has no provider data", ErrInvalidMessage, i)
			}
		case FilePart:
		default:
			return fmt.Errorf("%w: part %d: a %s part cannot be in a user message or tool result", ErrInvalidMessage, i, p.partType())
		}
	}
	return nil
}
