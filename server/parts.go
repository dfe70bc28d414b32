package server

// The parts of messages through the API: the files and texts a posted
// message may carry, and how stored messages with parts are shown.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/privacy"
)

// Codes of the answers about posted parts.
const (
	codeInvalidParts    = "invalid_parts"     // 422: a part that a user message cannot hold
	codeFileTooLarge    = "file_too_large"    // 413: a file above Config.MaxFileBytes
	codeMessageTooLarge = "message_too_large" // 413: files above Config.MaxMessageFileBytes together
	codeUnscannedFile   = "unscanned_file"    // 422: the agent's privacy guard refuses files
)

// partsProblem is why posted parts are refused: the status and the body.
type partsProblem struct {
	status  int
	code    string
	message string
}

// messageBodyLimit is the body limit of a message post: the general
// limit plus room for the files, base64-encoded.
func (s *Server) messageBodyLimit() int64 {
	files := s.cfg.MaxMessageFileBytes
	if files > (math.MaxInt64-s.cfg.MaxBodyBytes)/4*3-2 {
		return math.MaxInt64 // limited by the file limits alone
	}
	return s.cfg.MaxBodyBytes + (files+2)/3*4
}

// postedParts decodes the "parts" of a posted message: an array of text
// parts ({"type":"text","text":"..."}) and file parts carrying their bytes
// ({"type":"file","media_type":"image/png","data":"<base64>","name":"..."}).
// A file by URL, a part of another kind or a file above the limits is
// refused. raw empty or null gives nil.
func (s *Server) postedParts(raw []byte) (toolgate.Parts, *partsProblem) {
	if len(raw) == 0 {
		return nil, nil
	}
	var ps toolgate.Parts
	if err := ps.UnmarshalJSON(raw); err != nil {
		return nil, &partsProblem{http.StatusUnprocessableEntity, codeInvalidParts, strings.TrimPrefix(err.Error(), "toolgate: ")}
	}
	var total int64
	for i, p := range ps {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Provider != "" || p.Signature != "" || p.Opaque != nil {
				return nil, &partsProblem{http.StatusUnprocessableEntity, codeInvalidParts, fmt.Sprintf("part %d: a text part of a message has only its text", i)}
			}
		case toolgate.FilePart:
			if p.URL != "" {
				return nil, &partsProblem{http.StatusUnprocessableEntity, codeInvalidParts, fmt.Sprintf("part %d: a file part carries its bytes in data, not a url", i)}
			}
			n := int64(len(p.Data))
			if n > s.cfg.MaxFileBytes {
				return nil, &partsProblem{http.StatusRequestEntityTooLarge, codeFileTooLarge, fmt.Sprintf("part %d: the file holds %d bytes, more than the limit of %d", i, n, s.cfg.MaxFileBytes)}
			}
			if total += n; total > s.cfg.MaxMessageFileBytes {
				return nil, &partsProblem{http.StatusRequestEntityTooLarge, codeMessageTooLarge, fmt.Sprintf("the files of the message hold more than the limit of %d bytes", s.cfg.MaxMessageFileBytes)}
			}
		default:
			return nil, &partsProblem{http.StatusUnprocessableEntity, codeInvalidParts, fmt.Sprintf("part %d: a message holds only text and file parts", i)}
		}
	}
	return ps, nil
}

// callPartsProblem returns the answer to a turn refused for its parts by
// the agent's client or privacy guard.
func callPartsProblem(err error) (*partsProblem, bool) {
	var fe *toolgate.FileTooLargeError
	switch {
	case errors.As(err, &fe):
		return &partsProblem{http.StatusRequestEntityTooLarge, codeFileTooLarge, fmt.Sprintf("part %d: the file holds %d bytes, more than the agent's limit of %d", fe.Part, fe.Size, fe.Limit)}, true
	case errors.Is(err, privacy.ErrUnscannedFile):
		return &partsProblem{http.StatusUnprocessableEntity, codeUnscannedFile, "the agent does not accept files: they cannot be checked for personal data"}, true
	}
	return nil, false
}

// partView is a part as the API shows it: text, a call's place, a file's
// metadata (never its bytes), and readable reasoning where the agent shows
// it. Signatures, opaque provider fields and redacted reasoning are never
// shown.
type partView struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Index     *int   `json:"index,omitempty"`
	Provider  string `json:"provider,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Name      string `json:"name,omitempty"`
	Size      int    `json:"size,omitempty"`
	URL       string `json:"url,omitempty"`
}

func viewParts(ps toolgate.Parts, reasoning bool) []partView {
	out := make([]partView, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case toolgate.TextPart:
			out = append(out, partView{Type: "text", Text: p.Text})
		case toolgate.ToolCallPart:
			i := p.Index
			out = append(out, partView{Type: "tool_call", Index: &i})
		case toolgate.FilePart:
			out = append(out, partView{Type: "file", MediaType: p.MediaType, Name: p.Name, Size: len(p.Data), URL: p.URL})
		case toolgate.ReasoningPart:
			if reasoning && p.Text != "" {
				out = append(out, partView{Type: "reasoning", Text: p.Text, Provider: p.Provider})
			}
		}
	}
	return out
}

// messageView is a stored message with parts as the API shows it: the
// message's JSON form with its parts (and its results' parts) replaced by
// their views.
type messageView struct {
	m         toolgate.Message
	reasoning bool
}

func (v messageView) MarshalJSON() ([]byte, error) {
	switch m := v.m.(type) {
	case *toolgate.UserMessage:
		return withParts(&toolgate.UserMessage{Text: m.Text}, viewParts(m.Parts, false))
	case *toolgate.AssistantMessage:
		return withParts(&toolgate.AssistantMessage{Text: m.Text, ToolCalls: m.ToolCalls}, viewParts(m.Parts, v.reasoning))
	case *toolgate.ToolMessage:
		type resultView struct {
			toolgate.ToolResult
			Parts []partView `json:"parts,omitempty"`
		}
		out := struct {
			Role    toolgate.Role `json:"role"`
			Results []resultView  `json:"results"`
		}{Role: toolgate.RoleTool, Results: make([]resultView, len(m.Results))}
		for i, r := range m.Results {
			ps := r.Parts
			r.Parts = nil
			out.Results[i] = resultView{ToolResult: r}
			if ps != nil {
				out.Results[i].Parts = viewParts(ps, false)
			}
		}
		return json.Marshal(out)
	}
	return json.Marshal(v.m)
}

// withParts returns the JSON form of m (which has no parts) with "parts"
// added as its last member.
func withParts(m toolgate.Message, parts []partView) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	p, err := json.Marshal(parts)
	if err != nil {
		return nil, err
	}
	// b is a JSON object with at least its role: insert before its '}'.
	out := make([]byte, 0, len(b)+len(p)+10)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"parts":`...)
	out = append(out, p...)
	return append(out, '}'), nil
}

// hasParts reports whether m holds parts, itself or in a result.
func hasParts(m toolgate.Message) bool {
	switch m := m.(type) {
	case *toolgate.UserMessage:
		return m.Parts != nil
	case *toolgate.AssistantMessage:
		return m.Parts != nil
	case *toolgate.ToolMessage:
		for _, r := range m.Results {
			if r.Parts != nil {
				return true
			}
		}
	}
	return false
}

// viewContent returns msgs for an answer: messages without parts as they
// are, the others as their views (see [messageView]); reasoning is shown
// when the agent shows it.
func viewContent(msgs []toolgate.Message, reasoning bool) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		if hasParts(m) {
			out[i] = messageView{m: m, reasoning: reasoning}
		} else {
			out[i] = m
		}
	}
	return out
}

// viewReasoning returns msgs with the text of the replies' reasoning parts
// rewritten for p as the rest of the view is: tokenized through the
// agent's privacy guard (which passes reasoning to the model unchanged and
// so does not tokenize it), or, with reveal, restored. Without a guard, or
// when the agent does not show reasoning, msgs is returned. msgs is not
// changed.
func (s *Server) viewReasoning(ctx context.Context, c *conversation, p *toolgate.Principal, msgs []toolgate.Message, reveal bool) ([]toolgate.Message, error) {
	a := s.cfg.Agents[c.Agent]
	if a.Privacy == nil || !a.ShowReasoning {
		return msgs, nil
	}
	var texts []string
	for _, m := range msgs {
		if am, ok := m.(*toolgate.AssistantMessage); ok {
			for _, part := range am.Parts {
				if rp, ok := part.(toolgate.ReasoningPart); ok {
					texts = append(texts, rp.Text)
				}
			}
		}
	}
	if len(texts) == 0 {
		return msgs, nil
	}
	var shown []string
	if reveal {
		rw, err := a.Privacy.ConversationRewriter(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		shown = make([]string, len(texts))
		for i, t := range texts {
			shown[i] = rw.Restore(t, privacy.AllTypes())
		}
	} else {
		// As JSON strings, so that the guard tokenizes them as text.
		quoted := make([]string, len(texts))
		for i, t := range texts {
			b, _ := json.Marshal(t)
			quoted[i] = string(b)
		}
		var err error
		if shown, err = s.tokenize(ctx, c, p, quoted); err != nil {
			return nil, err
		}
		for i := range shown {
			if err := json.Unmarshal([]byte(shown[i]), &shown[i]); err != nil {
				return nil, errPrivacyChangedCalls
			}
		}
	}
	out := make([]toolgate.Message, len(msgs))
	n := 0
	for i, m := range msgs {
		out[i] = m
		am, ok := m.(*toolgate.AssistantMessage)
		if !ok || am.Parts == nil {
			continue
		}
		cp := am.Clone()
		for j, part := range cp.Parts {
			if rp, ok := part.(toolgate.ReasoningPart); ok {
				rp.Text = shown[n]
				cp.Parts[j] = rp
				n++
			}
		}
		out[i] = cp
	}
	return out, nil
}
