package toolgate

// The parts of messages as the client handles them: the user's input, the
// calls a recheck judges, and what the caller is shown.

import (
	"context"
	"fmt"
	"strings"
)

// FileTooLargeError reports a file of a user's input, or one a tool
// attaches ([ToolRequest.AttachFile]), larger than the client's limit
// ([ClientOptions.MaxFileSize]). For a user's input nothing of the turn was
// stored; a tool's file is not attached.
type FileTooLargeError struct {
	// Part is the index of the file in [CallParams.Parts], or among the
	// files the tool attached.
	Part int
	// Size is the file's size in bytes; Limit is the limit.
	Size, Limit int
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("toolgate: file part %d holds %d bytes, more than the limit of %d", e.Part, e.Size, e.Limit)
}

// checkInputParts checks the parts of a user's input: only text and files,
// and no file larger than the client's limit.
func (c *Client) checkInputParts(ps Parts) error {
	if err := checkUserParts(ps); err != nil {
		return fmt.Errorf("toolgate: the user's input: %w", err)
	}
	if c.maxFile < 0 {
		return nil
	}
	for i, p := range ps {
		if f, ok := p.(FilePart); ok && len(f.Data) > c.maxFile {
			return &FileTooLargeError{Part: i, Size: len(f.Data), Limit: c.maxFile}
		}
	}
	return nil
}

// subsetParts returns the parts of a reply restricted to the calls at
// index (ascending positions in the reply's calls): the tool call parts of
// the other calls are left out and the kept ones renumbered, so that the
// result agrees with a reply holding just those calls. Every other part is
// kept, in order. nil parts give nil.
func subsetParts(ps Parts, index []int) Parts {
	if ps == nil {
		return nil
	}
	renumber := make(map[int]int, len(index))
	for j, i := range index {
		renumber[i] = j
	}
	out := make(Parts, 0, len(ps))
	for _, p := range cloneParts(ps) {
		if tc, ok := p.(ToolCallPart); ok {
			j, keep := renumber[tc.Index]
			if !keep {
				continue
			}
			tc.Index = j
			p = tc
		}
		out = append(out, p)
	}
	return out
}

// outParts returns the parts of reply m as the caller of a client with a
// protector sees them, and the text they add up to: text parts rewritten
// by the protector's Output, files and calls in place, reasoning only when
// the client shows it (its text rewritten), and never a provider's
// signature, opaque payload or redacted reasoning. The parts are nil when
// nothing beyond plain text and calls is left; the text is then the
// rewritten text parts joined, which for a reply without parts is its Text
// rewritten whole.
func (t *turn) outParts(ctx context.Context, m *AssistantMessage) (string, Parts, error) {
	if len(m.Parts) == 0 {
		text, err := t.prot.Output(ctx, m.Text)
		return text, nil, err
	}
	var text strings.Builder
	out := make(Parts, 0, len(m.Parts))
	plain := true
	for _, p := range m.Parts {
		switch p := p.(type) {
		case TextPart:
			s, err := t.prot.Output(ctx, p.Text)
			if err != nil {
				return "", nil, err
			}
			text.WriteString(s)
			out = append(out, TextPart{Text: s})
		case ToolCallPart:
			out = append(out, ToolCallPart{Index: p.Index})
		case FilePart:
			plain = false
			out = append(out, cloneParts(Parts{p})[0])
		case ReasoningPart:
			if !t.c.reasoning {
				continue
			}
			s, err := t.prot.Output(ctx, p.Text)
			if err != nil {
				return "", nil, err
			}
			plain = false
			out = append(out, ReasoningPart{Text: s, Provider: p.Provider})
		}
	}
	if plain {
		out = nil
	}
	return text.String(), out, nil
}

// outReasoning returns a rewriter of a model stream's reasoning deltas for
// the caller, and whether the caller sees them at all: always without a
// protector; with one, only when the client shows reasoning, rewritten like
// streamed text.
func (t *turn) outReasoning() (func(ctx context.Context, piece string, final bool) (string, error), bool) {
	if t.prot == nil {
		return nil, true
	}
	if !t.c.reasoning {
		return nil, false
	}
	return t.prot.OutputStream(), true
}
