package openai

import (
	"context"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/toolgate/toolgate"
)

// chatParams builds a Chat Completions request for p.
func (m *Model) chatParams(p *toolgate.Prompt) (sdk.ChatCompletionNewParams, error) {
	var params sdk.ChatCompletionNewParams
	if err := checkPrompt(p); err != nil {
		return params, err
	}
	params.Model = m.modelName(p)
	params.Messages = make([]sdk.ChatCompletionMessageParamUnion, 0, len(p.Messages)+4)
	var calls []toolgate.ToolCall // of the last reply
	var ids []string
	budget := newFileBudget(m.files)
	toolTurn := toolTurns(p.Messages)
	for i, msg := range p.Messages {
		switch msg := msg.(type) {
		case *toolgate.SystemMessage:
			params.Messages = append(params.Messages, sdk.SystemMessage(msg.Text))
		case *toolgate.UserMessage:
			um, err := chatUser(i, msg, budget)
			if err != nil {
				return params, err
			}
			params.Messages = append(params.Messages, um)
		case *toolgate.AssistantMessage:
			var a sdk.ChatCompletionAssistantMessageParam
			if msg.Text != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = sdk.String(msg.Text)
			}
			calls, ids = msg.ToolCalls, wireIDs(i, msg.ToolCalls)
			if len(calls) > 0 {
				a.ToolCalls = make([]sdk.ChatCompletionMessageToolCallUnionParam, len(calls))
				for j, c := range calls {
					a.ToolCalls[j].OfFunction = &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID: ids[j],
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      c.Name,
							Arguments: c.Arguments,
						},
					}
				}
			}
			// Servers in a thinking mode want the reasoning of the
			// replies of every user turn with tool calls back; other
			// turns' is left out.
			if r := chatReasoning(msg); r != "" && toolTurn[i] {
				a.SetExtraFields(map[string]any{reasoningField: r})
			}
			params.Messages = append(params.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case *toolgate.ToolMessage:
			rids := resultIDs(i, calls, ids, msg.Results)
			for j, r := range msg.Results {
				params.Messages = append(params.Messages, sdk.ToolMessage(r.Content, rids[j]))
			}
			files, ok, err := toolFiles(i, msg, rids, budget)
			if err != nil {
				return params, err
			}
			if ok {
				params.Messages = append(params.Messages, files)
			}
		default:
			return params, fmt.Errorf("openai: message %d: unsupported message type %T", i, msg)
		}
	}
	if len(p.Tools) > 0 {
		params.Tools = make([]sdk.ChatCompletionToolUnionParam, 0, len(p.Tools))
		for _, t := range p.Tools {
			if t == nil {
				continue
			}
			def := t.Definition()
			schema, err := toolParameters(def.InputSchema)
			if err != nil {
				return params, fmt.Errorf("openai: tool %s: schema: %w", def.Name, err)
			}
			fn := sdk.ChatCompletionFunctionToolParam{}
			fn.Function.Name = def.Name
			fn.Function.Parameters = schema
			if def.Description != "" {
				fn.Function.Description = sdk.String(def.Description)
			}
			params.Tools = append(params.Tools, sdk.ChatCompletionToolUnionParam{OfFunction: &fn})
		}
	}
	if o := p.Options; o != nil {
		if o.Temperature != nil {
			params.Temperature = sdk.Float(*o.Temperature)
		}
		if o.MaxOutputTokens > 0 {
			params.MaxCompletionTokens = sdk.Int(int64(o.MaxOutputTokens))
		}
		if len(o.Stop) > 0 {
			params.Stop.OfStringArray = slices.Clone(o.Stop)
		}
		// The API rejects tool settings in a request without tools.
		if len(params.Tools) > 0 {
			switch o.ToolChoice {
			case "":
			case "auto", "none", "required":
				params.ToolChoice.OfAuto = sdk.String(o.ToolChoice)
			default:
				params.ToolChoice.OfFunctionToolChoice = &sdk.ChatCompletionNamedToolChoiceParam{
					Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: o.ToolChoice},
				}
			}
			if o.ParallelToolCalls != nil {
				params.ParallelToolCalls = sdk.Bool(*o.ParallelToolCalls)
			}
		}
	}
	return params, nil
}

func (m *Model) generateChat(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	params, err := m.chatParams(p)
	if err != nil {
		return nil, err
	}
	cc, err := m.chat.New(ctx, params)
	if err != nil {
		return nil, wrapErr(ctx, err)
	}
	return chatResponse(cc)
}

// chatResponse maps a chat completion to a response.
func chatResponse(cc *sdk.ChatCompletion) (*toolgate.Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return nil, errMalformed("the chat completion has no choices")
	}
	choices := slices.Clone(cc.Choices)
	slices.SortStableFunc(choices, func(a, b sdk.ChatCompletionChoice) int {
		return int(a.Index - b.Index)
	})
	resp := &toolgate.Response{
		ID:          cc.ID,
		Model:       cc.Model,
		Generations: make([]toolgate.Generation, len(choices)),
		Usage:       chatUsage(&cc.Usage),
	}
	for i := range choices {
		ch := &choices[i]
		msg := &toolgate.AssistantMessage{Text: ch.Message.Content}
		refused := ch.Message.Refusal != ""
		if msg.Text == "" && refused {
			msg.Text = ch.Message.Refusal
		}
		for _, tc := range ch.Message.ToolCalls {
			if tc.Type != "" && tc.Type != "function" {
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, toolgate.ToolCall{
				ID:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: rawArguments(tc.Function.Arguments, tc.Function.JSON.Arguments.Raw()),
			})
		}
		msg.Parts = chatParts(extraString(ch.Message.JSON.ExtraFields, reasoningField), msg.Text, len(msg.ToolCalls))
		validUTF8(msg)
		resp.Generations[i] = toolgate.Generation{Message: msg, FinishReason: chatFinish(ch.FinishReason, msg.HasToolCalls(), refused)}
	}
	return resp, nil
}

// chatFinish maps a Chat Completions finish reason. Servers that report
// "stop" (or nothing) for a reply with tool calls get tool_calls, and for
// a refusal [toolgate.FinishRefusal].
func chatFinish(reason string, hasCalls, refused bool) toolgate.FinishReason {
	switch reason {
	case "", "stop":
		if hasCalls {
			return toolgate.FinishToolCalls
		}
		if refused {
			return toolgate.FinishRefusal
		}
		return toolgate.FinishStop
	case "tool_calls", "function_call":
		return toolgate.FinishToolCalls
	case "length":
		return toolgate.FinishLength
	case "content_filter":
		return toolgate.FinishContentFilter
	}
	return toolgate.FinishReason(reason)
}

func chatUsage(u *sdk.CompletionUsage) toolgate.Usage {
	return toolgate.Usage{
		InputTokens:       u.PromptTokens,
		OutputTokens:      u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:   u.CompletionTokensDetails.ReasoningTokens,
	}
}

func (m *Model) streamChat(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		params, err := m.chatParams(p)
		if err != nil {
			yield(nil, err)
			return
		}
		params.StreamOptions.IncludeUsage = sdk.Bool(true)
		readChat(ctx, m.chat.NewStreaming(ctx, params), yield)
	}
}

// readChat yields the chunks of a streamed chat completion and closes the
// stream.
func readChat(ctx context.Context, stream *ssestream.Stream[sdk.ChatCompletionChunk], yield func(*toolgate.Chunk, error) bool) {
	readStream(ctx, stream, &chatStream{}, yield)
}

// eventMapper turns the events of one stream into chunks: add maps an
// event (a nil chunk yields nothing), last gives the closing chunk.
type eventMapper[E any] interface {
	add(*E) (*toolgate.Chunk, error)
	last() (*toolgate.Chunk, error)
}

// readStream yields the chunks of a stream mapped by m and closes the
// stream. A transport error, a cut stream or a canceled context ends it with
// an error instead of the closing chunk.
func readStream[E any](ctx context.Context, stream *ssestream.Stream[E], m eventMapper[E], yield func(*toolgate.Chunk, error) bool) {
	defer stream.Close()
	var ev E // one for the whole stream: events are large, and add keeps no pointer into it
	for stream.Next() {
		ev = stream.Current()
		out, err := m.add(&ev)
		if err != nil {
			yield(nil, err)
			return
		}
		if out != nil && !yield(out, nil) {
			return
		}
	}
	if err := stream.Err(); err != nil {
		yield(nil, wrapErr(ctx, err))
		return
	}
	if err := ctx.Err(); err != nil {
		yield(nil, fmt.Errorf("openai: %w", err))
		return
	}
	yield(m.last())
}

// maxCallIndex bounds the tool call index accepted from a stream.
const maxCallIndex = math.MaxInt32

// chatStream maps the chunks of a streamed chat completion to toolgate
// chunks, keeping what the last chunk needs.
type chatStream struct {
	id, model string
	finish    string
	finished  bool
	hasCalls  bool
	refused   bool // a refusal was streamed
	usage     *toolgate.Usage
	// for servers that send tool call fragments without an index
	nextIndex int
	lastIndex int
	// what the parts of a reply with reasoning need
	reasoning strings.Builder
	text      strings.Builder
	seen      map[int]bool // call indexes
}

// add maps one chunk; it returns nil when the chunk carries nothing to
// forward yet.
func (s *chatStream) add(c *sdk.ChatCompletionChunk) (*toolgate.Chunk, error) {
	if s.id == "" {
		s.id = c.ID
	}
	if s.model == "" {
		s.model = c.Model
	}
	if c.JSON.Usage.Valid() {
		u := chatUsage(&c.Usage)
		s.usage = &u
	}
	var out *toolgate.Chunk
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // toolgate asks for one candidate
		}
		d := &ch.Delta
		if r := extraString(d.JSON.ExtraFields, reasoningField); r != "" {
			s.reasoning.WriteString(r)
			if out == nil {
				out = &toolgate.Chunk{}
			}
			out.Reasoning += r
		}
		text := d.Content
		if text == "" {
			text = d.Refusal
		}
		if d.Refusal != "" {
			s.refused = true
		}
		if text != "" || len(d.ToolCalls) > 0 {
			if out == nil {
				out = &toolgate.Chunk{}
			}
			out.Text += text
			s.text.WriteString(text)
		}
		for _, tc := range d.ToolCalls {
			idx, err := s.callIndex(&tc)
			if err != nil {
				return nil, err
			}
			s.hasCalls = true
			if s.seen == nil {
				s.seen = map[int]bool{}
			}
			s.seen[idx] = true
			out.ToolCallDeltas = append(out.ToolCallDeltas, toolgate.ToolCallDelta{
				Index:     idx,
				ID:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: rawArguments(tc.Function.Arguments, tc.Function.JSON.Arguments.Raw()),
			})
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
			s.finished = true
		}
	}
	return out, nil
}

func (s *chatStream) callIndex(tc *sdk.ChatCompletionChunkChoiceDeltaToolCall) (int, error) {
	if !tc.JSON.Index.Valid() {
		// No index: a fragment naming a call starts a new one, others
		// continue the last.
		if tc.ID != "" || tc.Function.Name != "" {
			s.lastIndex = s.nextIndex
			s.nextIndex++
		}
		return s.lastIndex, nil
	}
	if tc.Index < 0 || tc.Index > maxCallIndex {
		return 0, errMalformed("tool call index %d out of range", tc.Index)
	}
	idx := int(tc.Index)
	s.lastIndex = idx
	if idx >= s.nextIndex {
		s.nextIndex = idx + 1
	}
	return idx, nil
}

// last returns the stream's last chunk, or an error when the stream ended
// before a finish reason arrived (a cut stream).
func (s *chatStream) last() (*toolgate.Chunk, error) {
	if !s.finished {
		return nil, errMalformed("the stream ended before the reply was complete")
	}
	return &toolgate.Chunk{
		FinishReason: chatFinish(s.finish, s.hasCalls, s.refused),
		Usage:        s.usage,
		ID:           s.id,
		Model:        s.model,
		Parts:        chatParts(s.reasoning.String(), s.text.String(), len(s.seen)),
	}, nil
}
