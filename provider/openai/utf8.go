package openai

import (
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate"
)

// validUTF8 replaces the invalid UTF-8 of a reply read from the API (the
// SDK keeps a string's bytes as sent) with U+FFFD, the character JSON
// would store instead, so that the reply kept in memory is the reply the
// store gives back. When the reply has parts, its text is their texts
// joined again, so that the two agree.
func validUTF8(m *toolgate.AssistantMessage) {
	if m == nil {
		return
	}
	m.Text = validString(m.Text)
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		c.ID, c.Name, c.Arguments = validString(c.ID), validString(c.Name), validString(c.Arguments)
	}
	if len(m.Parts) == 0 {
		return
	}
	var text strings.Builder
	for i, p := range m.Parts {
		switch p := p.(type) {
		case toolgate.TextPart:
			p.Text = validString(p.Text)
			text.WriteString(p.Text)
			m.Parts[i] = p
		case toolgate.ReasoningPart:
			p.Text, p.Signature = validString(p.Text), validString(p.Signature)
			m.Parts[i] = p
		}
	}
	m.Text = text.String()
}

func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
