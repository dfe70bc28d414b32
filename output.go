package toolgate

// What a turn shows its caller: streamed chunks and the response, as the
// protector rewrites them.

import (
	"context"
	"errors"
	"slices"
)

// emitText yields streamed text to the caller, rewritten by the protector.
func (t *turn) emitText(ctx context.Context, text string) error {
	if t.outStream != nil {
		var err error
		if text, err = t.outStream(ctx, text, false); err != nil {
			return err
		}
		if text == "" {
			return nil
		}
	}
	if !t.emit(&Chunk{Text: text}) {
		return errStreamStopped
	}
	return nil
}

// emitReasoning yields a reasoning delta to the caller, rewritten by
// rewrite when it is not nil (final flushes it).
func (t *turn) emitReasoning(ctx context.Context, rewrite func(context.Context, string, bool) (string, error), piece string, final bool) error {
	if rewrite != nil {
		var err error
		if piece, err = rewrite(ctx, piece, final); err != nil {
			return err
		}
	}
	if piece == "" {
		return nil
	}
	if !t.emit(&Chunk{Reasoning: piece}) {
		return errStreamStopped
	}
	return nil
}

// emitResults yields a round's results to a streaming caller.
func (t *turn) emitResults(ctx context.Context, rs []ToolResult) error {
	if t.emit == nil {
		return nil
	}
	rs, err := t.outResults(ctx, rs)
	if err != nil {
		return err
	}
	if !t.emit(&Chunk{Results: rs}) {
		return errStreamStopped
	}
	return nil
}

// outResults returns copies of rs with their content rewritten for the
// caller.
func (t *turn) outResults(ctx context.Context, rs []ToolResult) ([]ToolResult, error) {
	if t.prot == nil || len(rs) == 0 {
		return rs, nil
	}
	// Results are not the model's text: the caller sees them as the model
	// would (tokenized), in the output mode.
	msgs, err := t.prot.Messages(ctx, []Message{&ToolMessage{Results: rs}})
	if err != nil {
		return nil, err
	}
	var tm *ToolMessage
	if len(msgs) == 1 {
		tm, _ = msgs[0].(*ToolMessage)
	}
	if tm == nil || len(tm.Results) != len(rs) {
		return nil, errors.New("toolgate: the protector changed the shape of a tool message")
	}
	out := slices.Clone(rs)
	for i := range out {
		c, err := t.prot.Output(ctx, tm.Results[i].Content)
		if err != nil {
			return nil, err
		}
		out[i].Content = c
	}
	return out, nil
}

// outCalls returns copies of calls with their arguments rewritten for the
// caller.
func (t *turn) outCalls(ctx context.Context, calls []ToolCall) ([]ToolCall, error) {
	if t.prot == nil || len(calls) == 0 {
		return calls, nil
	}
	out := slices.Clone(calls)
	for i := range out {
		a, err := t.prot.Output(ctx, out[i].Arguments)
		if err != nil {
			return nil, err
		}
		out[i].Arguments = a
	}
	return out, nil
}

// finish runs a blocking turn, rewrites its response for the caller and
// ends the protector's request.
func (t *turn) finish(ctx context.Context, run func(context.Context) (*Response, error)) (*Response, error) {
	resp, err := run(ctx)
	if err == nil && t.prot != nil {
		resp, err = t.output(ctx, resp)
	}
	if endErr := t.end(ctx); err == nil {
		err = endErr
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// output returns resp with the texts the caller sees rewritten by the
// protector. Stored messages are not changed: the generations get copies.
func (t *turn) output(ctx context.Context, resp *Response) (*Response, error) {
	out := *resp
	out.Generations = slices.Clone(resp.Generations)
	for i, g := range out.Generations {
		if g.Message == nil {
			continue
		}
		m := *g.Message
		var err error
		if g.FinishReason == FinishReturnDirect {
			// The text is a tool's result, shown like one.
			var rs []ToolResult
			if rs, err = t.outResults(ctx, []ToolResult{{Content: m.Text}}); err == nil {
				m.Text = rs[0].Content
			}
		} else {
			m.Text, m.Parts, err = t.outParts(ctx, &m)
		}
		if err != nil {
			return nil, err
		}
		if m.ToolCalls, err = t.outCalls(ctx, m.ToolCalls); err != nil {
			return nil, err
		}
		out.Generations[i].Message = &m
	}
	var err error
	if out.Results, err = t.outResults(ctx, resp.Results); err != nil {
		return nil, err
	}
	if out.Metadata, err = t.outMetadata(ctx, resp.Metadata); err != nil {
		return nil, err
	}
	return &out, nil
}

// outMetadata returns a copy of md with its values rewritten for the
// caller.
func (t *turn) outMetadata(ctx context.Context, md map[string]string) (map[string]string, error) {
	if len(md) == 0 {
		return md, nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		s, err := t.prot.Output(ctx, v)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// end ends the protector's request, whatever happened to the turn.
func (t *turn) end(ctx context.Context) error {
	if t.prot == nil {
		return nil
	}
	return t.prot.End(context.WithoutCancel(ctx))
}
