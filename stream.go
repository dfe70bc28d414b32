package toolgate

import (
	"fmt"
	"iter"
	"slices"
	"strings"
)

// maxStreamedCalls bounds the tool-call index a stream may use, so that a
// hostile or broken stream cannot make the client allocate without limit.
const maxStreamedCalls = 512

// accumulator builds a reply (or a whole turn's last reply) from chunks.
type accumulator struct {
	text      strings.Builder
	calls     []callBuilder // by index, from deltas
	toolCalls []ToolCall    // complete calls (client streams)
	parts     Parts
	results   []ToolResult
	finish    FinishReason
	awaiting  []string
	pauseID   string
	misled    []string
	usage     Usage
	id, model string
}

// callBuilder assembles one call. It holds a byte slice, not a
// strings.Builder, because the slice of builders grows by copying.
type callBuilder struct {
	seen     bool
	id, name string
	args     []byte
}

func (a *accumulator) add(c *Chunk) error {
	if c == nil {
		return nil
	}
	a.text.WriteString(c.Text)
	for _, d := range c.ToolCallDeltas {
		if d.Index < 0 || d.Index >= maxStreamedCalls {
			return fmt.Errorf("%w: tool call index %d out of range [0, %d)", ErrBadStream, d.Index, maxStreamedCalls)
		}
		if d.Index >= len(a.calls) {
			a.calls = slices.Grow(a.calls, d.Index+1-len(a.calls))[:d.Index+1]
		}
		b := &a.calls[d.Index]
		b.seen = true
		if d.ID != "" {
			b.id = d.ID
		}
		if d.Name != "" {
			b.name = d.Name
		}
		b.args = append(b.args, d.Arguments...)
	}
	if len(c.ToolCalls) > 0 {
		a.toolCalls = append(a.toolCalls, c.ToolCalls...)
	}
	a.parts = append(a.parts, c.Parts...)
	a.results = append(a.results, c.Results...)
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	if len(c.Awaiting) > 0 {
		a.awaiting = slices.Clone(c.Awaiting)
	}
	if c.PauseID != "" {
		a.pauseID = c.PauseID
	}
	if len(c.MisleadingIDs) > 0 {
		a.misled = slices.Clone(c.MisleadingIDs)
	}
	if c.Usage != nil {
		a.usage = a.usage.Add(*c.Usage)
	}
	if c.ID != "" {
		a.id = c.ID
	}
	if c.Model != "" {
		a.model = c.Model
	}
	return nil
}

// reply returns the assistant message built so far.
func (a *accumulator) reply() *AssistantMessage {
	m := &AssistantMessage{Text: a.text.String()}
	for i := range a.calls {
		if b := &a.calls[i]; b.seen {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: b.id, Name: b.name, Arguments: string(b.args)})
		}
	}
	m.ToolCalls = append(m.ToolCalls, a.toolCalls...)
	m.Parts = a.parts
	if len(a.toolCalls) > 0 && len(a.parts) > 0 {
		// The last chunk of a paused client stream: its parts are the
		// paused reply's, whose text is theirs (the stream's text is that
		// of every round).
		var text strings.Builder
		for _, p := range a.parts {
			if tp, ok := p.(TextPart); ok {
				text.WriteString(tp.Text)
			}
		}
		m.Text = text.String()
	}
	return m
}

func (a *accumulator) response() *Response {
	reply := a.reply()
	finish := a.finish
	if finish == "" {
		finish = FinishStop
		if reply.HasToolCalls() {
			finish = FinishToolCalls
		}
	}
	return &Response{
		ID:            a.id,
		Model:         a.model,
		Generations:   []Generation{{Message: reply, FinishReason: finish}},
		Usage:         a.usage,
		Awaiting:      a.awaiting,
		PauseID:       a.pauseID,
		MisleadingIDs: a.misled,
		Results:       a.results,
	}
}

// Collect reads a stream to its end and returns the response it makes up:
// the text joined, tool-call fragments assembled in index order, complete
// tool calls, the finish reason, the awaiting keys, pause id and misleading
// ids of a paused turn, the parts in order and the summed usage; parts
// that disagree with the text and calls are an error wrapping
// [ErrBadStream]. It works on model streams and on [Client] streams; the
// response of a paused client stream is [Response.Paused], like the one of
// [Client.Call].
func Collect(stream iter.Seq2[*Chunk, error]) (*Response, error) {
	var a accumulator
	for c, err := range stream {
		if err != nil {
			return nil, err
		}
		if err := a.add(c); err != nil {
			return nil, err
		}
	}
	resp := a.response()
	if err := checkAssistantParts(resp.Message()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadStream, err)
	}
	return resp, nil
}
