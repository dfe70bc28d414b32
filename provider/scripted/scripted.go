// Package scripted provides a [toolgate.Model] that replays a script of
// replies and records the prompts it received. It calls no service, so it
// is what tests, examples and the offline demo run on.
//
//	model := scripted.New(
//		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}}},
//		scripted.Reply{Text: "VX205 is on time."},
//	)
//
// Each call of Generate or Stream consumes the next reply; when the script is
// exhausted they fail with [ErrExhausted].
package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate"
)

// ErrExhausted is returned when the model is asked for more replies than the
// script holds.
var ErrExhausted = errors.New("scripted: no reply left in the script")

// Reply is one scripted reply.
type Reply struct {
	// Text is the reply's text.
	Text string
	// ToolCalls are the reply's tool calls; ids may be empty or repeated.
	ToolCalls []toolgate.ToolCall
	// Parts are the reply's ordered parts, as a provider adapter would
	// give them (see [toolgate.AssistantMessage]); nil for a reply of
	// plain text and calls. Stream yields the text of its reasoning parts
	// as [toolgate.Chunk.Reasoning] deltas first and the parts on its last
	// chunk.
	Parts toolgate.Parts
	// FinishReason is reported with the reply. "": tool_calls when there
	// are tool calls, else stop.
	FinishReason toolgate.FinishReason
	// Usage is reported with the reply. Zero: a small made-up count.
	Usage toolgate.Usage
	// Err, when non-nil, is returned instead of the reply (Generate) or
	// after the reply's text (Stream).
	Err error
}

// Model replays a script. It is safe for concurrent use; concurrent calls
// take replies in the order they acquire the model's lock.
type Model struct {
	respond func(*toolgate.Prompt) (Reply, error) // fixed at creation; nil for a script
	mu      sync.Mutex
	replies []Reply            // guarded by mu
	next    int                // guarded by mu
	prompts []*toolgate.Prompt // guarded by mu
}

// New returns a model that replays replies in order.
func New(replies ...Reply) *Model {
	return &Model{replies: slices.Clone(replies)}
}

// NewFunc returns a model that answers each prompt with respond's reply,
// for stories whose replies depend on the conversation (such as the tool
// results a person allowed). respond is called with the model's lock held,
// one prompt at a time; an error it returns is the model's error.
func NewFunc(respond func(p *toolgate.Prompt) (Reply, error)) *Model {
	if respond == nil {
		panic("scripted: NewFunc: nil function")
	}
	return &Model{respond: respond}
}

// Append adds replies to the end of the script.
func (m *Model) Append(replies ...Reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, replies...)
}

// Prompts returns copies of the prompts the model received, in order.
func (m *Model) Prompts() []*toolgate.Prompt {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.prompts)
}

// Remaining reports how many replies are left in the script (0 for a
// model built by NewFunc).
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replies) - m.next
}

// take records the prompt and returns the next reply.
func (m *Model) take(p *toolgate.Prompt) (Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := &toolgate.Prompt{}
	if p != nil {
		cp.Messages = slices.Clone(p.Messages)
		cp.Tools = slices.Clone(p.Tools)
		cp.Options = p.Options
	}
	m.prompts = append(m.prompts, cp)
	if m.respond != nil {
		return m.respond(cp)
	}
	if m.next >= len(m.replies) {
		return Reply{}, fmt.Errorf("%w (%d replies)", ErrExhausted, len(m.replies))
	}
	r := m.replies[m.next]
	m.next++
	return r, nil
}

func (r Reply) finish() toolgate.FinishReason {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return toolgate.FinishToolCalls
	}
	return toolgate.FinishStop
}

func (r Reply) usage(p *toolgate.Prompt) toolgate.Usage {
	if r.Usage != (toolgate.Usage{}) {
		return r.Usage
	}
	n := 0
	if p != nil {
		n = len(p.Messages)
	}
	return toolgate.Usage{InputTokens: int64(10 * (n + 1)), OutputTokens: int64(len(strings.Fields(r.Text)) + 5*len(r.ToolCalls) + 1)}
}

// Generate implements [toolgate.Model].
func (m *Model) Generate(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := m.take(p)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return &toolgate.Response{
		Model: "scripted",
		Generations: []toolgate.Generation{{
			Message:      (&toolgate.AssistantMessage{Text: r.Text, ToolCalls: r.ToolCalls, Parts: r.Parts}).Clone(),
			FinishReason: r.finish(),
		}},
		Usage: r.usage(p),
	}, nil
}

// Stream implements [toolgate.Model]. The text is yielded word by word; each
// tool call is yielded as a first fragment with its id and name and then its
// arguments in two halves, as real providers split them; the last chunk
// carries the finish reason and usage.
func (m *Model) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		r, err := m.take(p)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, part := range r.Parts {
			rp, ok := part.(toolgate.ReasoningPart)
			if !ok {
				continue
			}
			for _, piece := range splitWords(rp.Text) {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(&toolgate.Chunk{Reasoning: piece, Model: "scripted"}, nil) {
					return
				}
			}
		}
		for _, piece := range splitWords(r.Text) {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(&toolgate.Chunk{Text: piece, Model: "scripted"}, nil) {
				return
			}
		}
		if r.Err != nil {
			yield(nil, r.Err)
			return
		}
		for i, c := range r.ToolCalls {
			half := len(c.Arguments) / 2
			parts := []toolgate.ToolCallDelta{
				{Index: i, ID: c.ID, Name: c.Name, Arguments: c.Arguments[:half]},
				{Index: i, Arguments: c.Arguments[half:]},
			}
			for _, d := range parts {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(&toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{d}}, nil) {
					return
				}
			}
		}
		u := r.usage(p)
		last := &toolgate.Chunk{FinishReason: r.finish(), Usage: &u}
		if r.Parts != nil {
			last.Parts = (&toolgate.AssistantMessage{Parts: r.Parts}).Clone().Parts
		}
		yield(last, nil)
	}
}

// splitWords splits s after each space, so that joining the pieces gives s.
func splitWords(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
