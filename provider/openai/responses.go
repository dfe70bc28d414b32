package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
)

// errNoStop: the Responses API has no stop sequences.
var errNoStop = errors.New("openai: the Responses API does not support stop sequences (ModelOptions.Stop)")

// responsesParams builds a Responses API request for p.
func (m *Model) responsesParams(p *toolgate.Prompt) (responses.ResponseNewParams, error) {
	var params responses.ResponseNewParams
	if err := checkPrompt(p); err != nil {
		return params, err
	}
	params.Model = m.modelName(p)
	items := make(responses.ResponseInputParam, 0, len(p.Messages)+4)
	message := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		msg := &responses.EasyInputMessageParam{Role: role}
		msg.Content.OfString = sdk.String(text)
		return responses.ResponseInputItemUnionParam{OfMessage: msg}
	}
	var calls []toolgate.ToolCall // of the last reply
	var ids []string
	budget := newFileBudget(m.files)
	for i, msg := range p.Messages {
		switch msg := msg.(type) {
		case *toolgate.SystemMessage:
			items = append(items, message(responses.EasyInputMessageRoleSystem, msg.Text))
		case *toolgate.UserMessage:
			item, err := userItem(i, msg, budget)
			if err != nil {
				return params, err
			}
			items = append(items, item)
		case *toolgate.AssistantMessage:
			calls, ids = msg.ToolCalls, wireIDs(i, msg.ToolCalls)
			items = append(items, m.assistantItems(msg, ids)...)
		case *toolgate.ToolMessage:
			rids := resultIDs(i, calls, ids, msg.Results)
			for j, r := range msg.Results {
				output, err := toolOutput(i, r, budget)
				if err != nil {
					return params, err
				}
				out := &responses.ResponseInputItemFunctionCallOutputParam{CallID: sdk.String(rids[j]), Output: output}
				items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: out})
			}
		default:
			return params, fmt.Errorf("openai: message %d: unsupported message type %T", i, msg)
		}
	}
	params.Input.OfInputItemList = items
	if m.store {
		params.Store = sdk.Bool(true)
	} else {
		params.Store = sdk.Bool(false)
		params.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if len(p.Tools) > 0 {
		params.Tools = make([]responses.ToolUnionParam, 0, len(p.Tools))
		for _, t := range p.Tools {
			if t == nil {
				continue
			}
			def := t.Definition()
			schema, err := toolParameters(def.InputSchema)
			if err != nil {
				return params, fmt.Errorf("openai: tool %s: schema: %w", def.Name, err)
			}
			// strict defaults to true in this API, which only some schemas
			// satisfy; toolgate validates arguments itself.
			fn := &responses.FunctionToolParam{Name: def.Name, Parameters: schema, Strict: sdk.Bool(false)}
			if def.Description != "" {
				fn.Description = sdk.String(def.Description)
			}
			params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: fn})
		}
	}
	if o := p.Options; o != nil {
		if len(o.Stop) > 0 {
			return params, errNoStop
		}
		if o.Temperature != nil {
			params.Temperature = sdk.Float(*o.Temperature)
		}
		if o.MaxOutputTokens > 0 {
			params.MaxOutputTokens = sdk.Int(int64(o.MaxOutputTokens))
		}
		if len(params.Tools) > 0 {
			switch o.ToolChoice {
			case "":
			case "auto", "none", "required":
				params.ToolChoice.OfToolChoiceMode = sdk.Opt(responses.ToolChoiceOptions(o.ToolChoice))
			default:
				params.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: o.ToolChoice}
			}
			if o.ParallelToolCalls != nil {
				params.ParallelToolCalls = sdk.Bool(*o.ParallelToolCalls)
			}
		}
	}
	return params, nil
}

func (m *Model) generateResponses(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	params, err := m.responsesParams(p)
	if err != nil {
		return nil, err
	}
	r, err := m.resp.New(ctx, params)
	if err != nil {
		return nil, wrapErr(ctx, err)
	}
	return responsesResponse(r)
}

// responsesResponse maps a Responses API response.
func responsesResponse(r *responses.Response) (*toolgate.Response, error) {
	if r == nil || !r.JSON.Output.Valid() {
		return nil, errMalformed("the response has no output")
	}
	msg, refused := outputReply(r.Output)
	validUTF8(msg)
	finish, err := responsesFinish(r, msg.HasToolCalls())
	if err != nil {
		return nil, err
	}
	if refused && finish == toolgate.FinishStop {
		finish = toolgate.FinishRefusal
	}
	return &toolgate.Response{
		ID:          r.ID,
		Model:       r.Model,
		Generations: []toolgate.Generation{{Message: msg, FinishReason: finish}},
		Usage:       responsesUsage(&r.Usage),
	}, nil
}

// responsesFinish maps a response's status to a finish reason; a failed
// response is an error.
func responsesFinish(r *responses.Response, hasCalls bool) (toolgate.FinishReason, error) {
	switch r.Status {
	case "", responses.ResponseStatusCompleted:
		if hasCalls {
			return toolgate.FinishToolCalls, nil
		}
		return toolgate.FinishStop, nil
	case responses.ResponseStatusIncomplete:
		switch reason := r.IncompleteDetails.Reason; reason {
		case "max_output_tokens":
			return toolgate.FinishLength, nil
		case "content_filter":
			return toolgate.FinishContentFilter, nil
		case "":
			return toolgate.FinishReason("incomplete"), nil
		default:
			return toolgate.FinishReason(reason), nil
		}
	case responses.ResponseStatusFailed:
		return "", &provider.Error{
			Provider: "openai",
			Kind:     kindForCode(string(r.Error.Code)),
			Message:  r.Error.Message,
		}
	}
	return toolgate.FinishReason(r.Status), nil
}

func responsesUsage(u *responses.ResponseUsage) toolgate.Usage {
	return toolgate.Usage{
		InputTokens:       u.InputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.InputTokensDetails.CachedTokens,
		ReasoningTokens:   u.OutputTokensDetails.ReasoningTokens,
	}
}

func (m *Model) streamResponses(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		params, err := m.responsesParams(p)
		if err != nil {
			yield(nil, err)
			return
		}
		readResponses(ctx, m.resp.NewStreaming(ctx, params), yield)
	}
}

// readResponses yields the chunks of a streamed response and closes the
// stream.
func readResponses(ctx context.Context, stream *ssestream.Stream[responses.ResponseStreamEventUnion], yield func(*toolgate.Chunk, error) bool) {
	readStream(ctx, stream, &responsesStream{}, yield)
}

// responsesStream maps the events of a streamed response to chunks.
type responsesStream struct {
	id, model string
	calls     []*streamCall
	done      bool
	refused   bool // a refusal part was streamed
	finish    toolgate.FinishReason
	usage     *toolgate.Usage
	// the complete output items (response.output_item.done), and the
	// output of the completed response, for servers that send no items
	items  []doneItem
	output []responses.ResponseOutputItemUnion
}

// doneItem is a complete output item of a streamed response.
type doneItem struct {
	index int64
	item  responses.ResponseOutputItemUnion
}

// streamCall is a function call item of a streamed response.
type streamCall struct {
	output int64  // the item's output index
	item   string // the item's id
	idSent bool   // its call id was forwarded
	args   bool   // argument text was forwarded
}

func (s *responsesStream) call(output int64, item string) (int, *streamCall) {
	for i, c := range s.calls {
		if item != "" && c.item != "" {
			if c.item == item {
				return i, c
			}
			continue
		}
		if c.output == output {
			return i, c
		}
	}
	return -1, nil
}

// add maps one event; it returns nil when the event carries nothing to
// forward.
func (s *responsesStream) add(ev *responses.ResponseStreamEventUnion) (*toolgate.Chunk, error) {
	if s.done {
		return nil, nil
	}
	switch ev.Type {
	case "response.created", "response.in_progress", "response.queued":
		s.note(&ev.Response)
	case "response.output_text.delta", "response.refusal.delta":
		if ev.Type == "response.refusal.delta" {
			s.refused = true
		}
		if ev.Delta == "" {
			return nil, nil
		}
		return &toolgate.Chunk{Text: ev.Delta}, nil
	case "response.reasoning_summary_part.added":
		// The reply's reasoning text joins summary parts with a blank line.
		if ev.SummaryIndex > 0 {
			return &toolgate.Chunk{Reasoning: "\n\n"}, nil
		}
		return nil, nil
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		return &toolgate.Chunk{Reasoning: ev.Delta}, nil
	case "response.output_item.added":
		if ev.Item.Type != "function_call" {
			return nil, nil
		}
		if _, c := s.call(ev.OutputIndex, ev.Item.ID); c != nil {
			return nil, errMalformed("function call item at output %d added twice", ev.OutputIndex)
		}
		c := &streamCall{output: ev.OutputIndex, item: ev.Item.ID, idSent: ev.Item.CallID != ""}
		args := rawArguments(ev.Item.Arguments.OfString, ev.Item.Arguments.JSON.OfString.Raw())
		c.args = args != ""
		s.calls = append(s.calls, c)
		return &toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{{
			Index: len(s.calls) - 1, ID: ev.Item.CallID, Name: ev.Item.Name, Arguments: args,
		}}}, nil
	case "response.function_call_arguments.delta":
		i, c := s.call(ev.OutputIndex, ev.ItemID)
		if c == nil {
			return nil, errMalformed("function call arguments for an unknown item at output %d", ev.OutputIndex)
		}
		if ev.Delta == "" {
			return nil, nil
		}
		c.args = true
		return &toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: i, Arguments: ev.Delta}}}, nil
	case "response.function_call_arguments.done", "response.output_item.done":
		// Servers that send no deltas send the whole arguments here.
		args, callID, itemID := ev.Arguments, "", ev.ItemID
		if ev.Type == "response.output_item.done" {
			s.items = append(s.items, doneItem{ev.OutputIndex, ev.Item})
			if ev.Item.Type != "function_call" {
				return nil, nil
			}
			args = rawArguments(ev.Item.Arguments.OfString, ev.Item.Arguments.JSON.OfString.Raw())
			callID, itemID = ev.Item.CallID, ev.Item.ID
		}
		i, c := s.call(ev.OutputIndex, itemID)
		if c == nil {
			return nil, errMalformed("function call done for an unknown item at output %d", ev.OutputIndex)
		}
		d := toolgate.ToolCallDelta{Index: i}
		if !c.idSent && callID != "" {
			d.ID, c.idSent = callID, true
		}
		if !c.args && args != "" {
			d.Arguments, c.args = args, true
		}
		if d.ID == "" && d.Arguments == "" {
			return nil, nil
		}
		return &toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{d}}, nil
	case "response.completed", "response.incomplete":
		s.note(&ev.Response)
		r := &ev.Response
		if ev.Type == "response.incomplete" {
			r.Status = responses.ResponseStatusIncomplete
		}
		finish, err := responsesFinish(r, len(s.calls) > 0)
		if err != nil {
			return nil, err
		}
		if s.refused && finish == toolgate.FinishStop {
			finish = toolgate.FinishRefusal
		}
		s.finish, s.done = finish, true
		s.output = ev.Response.Output
		if ev.Response.JSON.Usage.Valid() {
			u := responsesUsage(&ev.Response.Usage)
			s.usage = &u
		}
	case "response.failed":
		r := ev.Response
		r.Status = responses.ResponseStatusFailed
		_, err := responsesFinish(&r, false)
		return nil, err
	case "error":
		return nil, &provider.Error{Provider: "openai", Kind: kindForCode(ev.Code), Message: ev.Message}
	}
	return nil, nil
}

func (s *responsesStream) note(r *responses.Response) {
	if r.ID != "" {
		s.id = r.ID
	}
	if r.Model != "" {
		s.model = r.Model
	}
}

// last returns the stream's last chunk, or an error when the stream ended
// before the response was complete (a cut stream).
func (s *responsesStream) last() (*toolgate.Chunk, error) {
	if !s.done {
		return nil, errMalformed("the stream ended before the response was complete")
	}
	items := s.output
	if len(s.items) > 0 {
		slices.SortStableFunc(s.items, func(a, b doneItem) int { return cmp.Compare(a.index, b.index) })
		items = make([]responses.ResponseOutputItemUnion, len(s.items))
		for i, d := range s.items {
			items[i] = d.item
		}
	}
	msg, _ := outputReply(items)
	return &toolgate.Chunk{FinishReason: s.finish, Usage: s.usage, ID: s.id, Model: s.model, Parts: msg.Parts}, nil
}
