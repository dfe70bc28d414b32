package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolgate/toolgate"
)

// fromMessage converts a complete API message: text blocks joined, tool_use
// blocks as tool calls in order, thinking and redacted_thinking blocks as
// reasoning parts (see [blockParts]); other blocks (server tools) are left
// out.
func fromMessage(msg *sdk.Message) (*toolgate.Response, error) {
	if msg == nil {
		return nil, malformed("no message")
	}
	reply := &toolgate.AssistantMessage{}
	var text strings.Builder
	var parts blockParts
	for i := range msg.Content {
		b := &msg.Content[i]
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			parts.text(b.Text)
		case "thinking":
			parts.thinking(b.Thinking, b.Signature)
		case "redacted_thinking":
			if b.Data == "" {
				return nil, malformed("redacted_thinking block %d has no data", i)
			}
			parts.redacted(b.Data)
		case "tool_use":
			if b.Name == "" {
				return nil, malformed("tool_use block %d has no name", i)
			}
			args, err := compactInput(b.Input)
			if err != nil {
				return nil, malformed("tool_use block %d: input: %v", i, err)
			}
			parts.call(len(reply.ToolCalls))
			reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	reply.Text = text.String()
	reply.Parts = parts.result()
	return &toolgate.Response{
		ID:    msg.ID,
		Model: msg.Model,
		Generations: []toolgate.Generation{{
			Message:      reply,
			FinishReason: finishReason(msg.StopReason, reply.HasToolCalls()),
		}},
		Usage: usage(&tokens{msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens,
			msg.Usage.CacheCreationInputTokens, msg.Usage.OutputTokensDetails.ThinkingTokens}),
	}, nil
}

// blockParts collects a reply's content blocks as parts, in block order:
// a [toolgate.TextPart] per text block, a [toolgate.ReasoningPart] per
// thinking block (its thinking and signature), a
// [toolgate.RedactedReasoningPart] per redacted_thinking block and a
// [toolgate.ToolCallPart] per tool_use block. The parts are the reply's
// Parts only when it holds reasoning: a reply of text and calls keeps the
// plain form.
type blockParts struct {
	parts     toolgate.Parts
	reasoning bool
}

func (p *blockParts) text(s string) {
	if s != "" {
		p.parts = append(p.parts, toolgate.TextPart{Text: s})
	}
}

func (p *blockParts) thinking(text, signature string) {
	p.reasoning = true
	p.parts = append(p.parts, toolgate.ReasoningPart{Text: text, Signature: signature, Provider: providerName})
}

func (p *blockParts) redacted(data string) {
	p.reasoning = true
	p.parts = append(p.parts, toolgate.RedactedReasoningPart{Data: data, Provider: providerName})
}

func (p *blockParts) call(index int) {
	p.parts = append(p.parts, toolgate.ToolCallPart{Index: index})
}

func (p *blockParts) result() toolgate.Parts {
	if !p.reasoning {
		return nil
	}
	return p.parts
}

// compactInput returns a tool_use input as compact JSON text; "{}" when
// absent.
func compactInput(in json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(in)) == 0 || string(in) == "null" {
		return "{}", nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, in); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// tokens are the counts of the API's usage object.
type tokens struct {
	input, output, cacheRead, cacheWrite, thinking int64
}

// usage builds a [toolgate.Usage]. The API counts cache reads and cache
// writes apart from input_tokens; toolgate's InputTokens is all of them,
// so that CachedInputTokens (the cache reads) is a part of it as with the
// other providers. output_tokens includes the thinking tokens
// (output_tokens_details.thinking_tokens), which are ReasoningTokens.
func usage(t *tokens) toolgate.Usage {
	return toolgate.Usage{
		InputTokens:       t.input + t.cacheRead + t.cacheWrite,
		OutputTokens:      t.output,
		CachedInputTokens: t.cacheRead,
		ReasoningTokens:   t.thinking,
	}
}

// finishReason maps a stop_reason. Reasons without a toolgate equivalent
// (pause_turn, and any new ones) pass through as they are; refusal is
// [toolgate.FinishRefusal].
func finishReason(r sdk.StopReason, hasCalls bool) toolgate.FinishReason {
	switch r {
	case "":
		if hasCalls {
			return toolgate.FinishToolCalls
		}
		return toolgate.FinishStop
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return toolgate.FinishStop
	case sdk.StopReasonToolUse:
		return toolgate.FinishToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return toolgate.FinishLength
	case sdk.StopReasonRefusal:
		return toolgate.FinishRefusal
	}
	return toolgate.FinishReason(r)
}

// maxCalls bounds the tool calls of a streamed reply, as toolgate's
// collector does.
const maxCalls = 512

// maxArgs bounds the input of one streamed tool_use block.
const maxArgs = 8 << 20

// maxBlocks bounds the content blocks of a streamed reply.
const maxBlocks = 4096

// maxThinking bounds the thinking text and signature of one streamed
// thinking block.
const maxThinking = 8 << 20

// streamState turns the events of a streamed message into chunks.
type streamState struct {
	started, stopped bool
	idSent           bool           // the id and model went out on a chunk
	id, model        string         // from message_start
	blocks           []streamBlock  // tool_use blocks, in order
	content          []contentBlock // every content block, in order
	reasoning        bool           // a thinking or redacted_thinking block came
	stopReason       sdk.StopReason
	tokens           tokens
}

// streamBlock is a tool_use content block of the stream.
type streamBlock struct {
	index int64  // the content block index
	args  []byte // the input_json_delta fragments so far
	done  bool   // content_block_stop was seen
}

// contentBlock is any content block of the stream, kept to give the
// reply's parts in block order.
type contentBlock struct {
	index     int64  // the content block index
	kind      string // text, thinking, redacted_thinking or tool_use
	text      []byte // the text or thinking so far
	signature []byte // a thinking block's signature so far
	data      string // a redacted_thinking block's data
	call      int    // a tool_use block's call index
}

// block returns the content block at content block index, adding one of
// kind when there is none; it fails when the block is of another kind.
func (s *streamState) block(index int64, kind string) (*contentBlock, error) {
	if i := s.find(index); i >= 0 {
		if b := &s.content[i]; b.kind == kind {
			return b, nil
		}
		return nil, malformed("content block %d is no %s block", index, kind)
	}
	if len(s.content) >= maxBlocks {
		return nil, malformed("more than %d content blocks", maxBlocks)
	}
	s.content = append(s.content, contentBlock{index: index, kind: kind})
	return &s.content[len(s.content)-1], nil
}

// find returns the position of the content block at content block index,
// or -1. The API numbers blocks from 0 in order, so the block is usually
// at its index.
func (s *streamState) find(index int64) int {
	if index >= 0 && index < int64(len(s.content)) && s.content[index].index == index {
		return int(index)
	}
	for i := range s.content {
		if s.content[i].index == index {
			return i
		}
	}
	return -1
}

// parts returns the reply's parts in block order, or nil when it holds no
// reasoning (see [blockParts]).
func (s *streamState) parts() toolgate.Parts {
	if !s.reasoning {
		return nil
	}
	var p blockParts
	for i := range s.content {
		switch b := &s.content[i]; b.kind {
		case "text":
			p.text(string(b.text))
		case "thinking":
			p.thinking(string(b.text), string(b.signature))
		case "redacted_thinking":
			p.redacted(b.data)
		case "tool_use":
			p.call(b.call)
		}
	}
	return p.result()
}

// call returns the call index of the tool_use block at content block
// index, or -1.
func (s *streamState) call(index int64) int {
	for i := range s.blocks {
		if s.blocks[i].index == index {
			return i
		}
	}
	return -1
}

// event handles one event; it returns the chunk to yield, if any. The id
// and model of message_start go out on the first chunk, so that a stream
// that fails before any content can be retried without a chunk of the
// failed attempt reaching the consumer.
func (s *streamState) event(ev *sdk.MessageStreamEventUnion) (*toolgate.Chunk, error) {
	ch, err := s.convert(ev)
	if ch != nil && !s.idSent {
		s.idSent = true
		ch.ID, ch.Model = s.id, s.model
	}
	return ch, err
}

// convert maps one event to its chunk, if any.
func (s *streamState) convert(ev *sdk.MessageStreamEventUnion) (*toolgate.Chunk, error) {
	if s.stopped {
		return nil, nil
	}
	if !s.started && ev.Type != "message_start" && isMessageEvent(ev.Type) {
		return nil, malformed("%s before message_start", ev.Type)
	}
	switch ev.Type {
	case "message_start":
		if s.started {
			return nil, malformed("second message_start")
		}
		s.started = true
		u := &ev.Message.Usage
		s.tokens = tokens{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokensDetails.ThinkingTokens}
		s.id, s.model = ev.Message.ID, ev.Message.Model
		return nil, nil
	case "content_block_start":
		cb := &ev.ContentBlock
		if s.find(ev.Index) >= 0 {
			return nil, malformed("content block %d started twice", ev.Index)
		}
		switch cb.Type {
		case "text":
			b, err := s.block(ev.Index, "text")
			if err != nil {
				return nil, err
			}
			if cb.Text == "" {
				return nil, nil
			}
			b.text = append(b.text, cb.Text...)
			return &toolgate.Chunk{Text: cb.Text}, nil
		case "thinking":
			b, err := s.block(ev.Index, "thinking")
			if err != nil {
				return nil, err
			}
			s.reasoning = true
			b.text = append(b.text, cb.Thinking...)
			b.signature = append(b.signature, cb.Signature...)
			if cb.Thinking == "" {
				return nil, nil
			}
			return &toolgate.Chunk{Reasoning: cb.Thinking}, nil
		case "redacted_thinking":
			if cb.Data == "" {
				return nil, malformed("redacted_thinking block %d has no data", ev.Index)
			}
			b, err := s.block(ev.Index, "redacted_thinking")
			if err != nil {
				return nil, err
			}
			s.reasoning = true
			b.data = cb.Data
			return nil, nil
		case "tool_use":
		default:
			return nil, nil
		}
		if cb.Name == "" {
			return nil, malformed("tool_use block %d has no name", ev.Index)
		}
		if len(s.blocks) >= maxCalls {
			return nil, malformed("more than %d tool calls", maxCalls)
		}
		b, err := s.block(ev.Index, "tool_use")
		if err != nil {
			return nil, err
		}
		b.call = len(s.blocks)
		s.blocks = append(s.blocks, streamBlock{index: ev.Index})
		return &toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{{
			Index: len(s.blocks) - 1, ID: cb.ID, Name: cb.Name,
		}}}, nil
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text == "" {
				return nil, nil
			}
			b, err := s.block(ev.Index, "text")
			if err != nil {
				return nil, err
			}
			b.text = append(b.text, ev.Delta.Text...)
			return &toolgate.Chunk{Text: ev.Delta.Text}, nil
		case "thinking_delta", "signature_delta":
			i := s.find(ev.Index)
			if i < 0 || s.content[i].kind != "thinking" {
				return nil, malformed("%s for content block %d, which is not a thinking block", ev.Delta.Type, ev.Index)
			}
			b := &s.content[i]
			if len(b.text)+len(b.signature)+len(ev.Delta.Thinking)+len(ev.Delta.Signature) > maxThinking {
				return nil, malformed("thinking block %d longer than %d bytes", ev.Index, maxThinking)
			}
			if ev.Delta.Type == "signature_delta" {
				b.signature = append(b.signature, ev.Delta.Signature...)
				return nil, nil
			}
			if ev.Delta.Thinking == "" {
				return nil, nil
			}
			b.text = append(b.text, ev.Delta.Thinking...)
			return &toolgate.Chunk{Reasoning: ev.Delta.Thinking}, nil
		case "input_json_delta":
			i := s.call(ev.Index)
			if i < 0 || s.blocks[i].done {
				return nil, malformed("input_json_delta for content block %d, which is not an open tool_use block", ev.Index)
			}
			if len(s.blocks[i].args)+len(ev.Delta.PartialJSON) > maxArgs {
				return nil, malformed("tool_use block %d: input longer than %d bytes", ev.Index, maxArgs)
			}
			s.blocks[i].args = append(s.blocks[i].args, ev.Delta.PartialJSON...)
		}
		return nil, nil
	case "content_block_stop":
		// The input goes out whole, in the form a complete message gives:
		// compact JSON, {} when no fragment came. Text that is not JSON is
		// kept as it is, for the tool call to fail with it.
		i := s.call(ev.Index)
		if i < 0 || s.blocks[i].done {
			return nil, nil
		}
		b := &s.blocks[i]
		b.done = true
		args, err := compactInput(b.args)
		if err != nil {
			args = string(b.args)
		}
		b.args = nil
		return &toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: i, Arguments: args}}}, nil
	case "message_delta":
		if ev.Delta.StopReason != "" {
			s.stopReason = ev.Delta.StopReason
		}
		u := &ev.Usage
		if u.JSON.OutputTokens.Valid() {
			s.tokens.output = u.OutputTokens
		}
		if u.JSON.InputTokens.Valid() {
			s.tokens.input = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			s.tokens.cacheRead = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			s.tokens.cacheWrite = u.CacheCreationInputTokens
		}
		if u.OutputTokensDetails.JSON.ThinkingTokens.Valid() {
			s.tokens.thinking = u.OutputTokensDetails.ThinkingTokens
		}
		return nil, nil
	case "message_stop":
		s.stopped = true
		for i := range s.blocks {
			if !s.blocks[i].done {
				return nil, malformed("tool_use block %d not stopped before message_stop", s.blocks[i].index)
			}
		}
		u := usage(&s.tokens)
		return &toolgate.Chunk{FinishReason: finishReason(s.stopReason, len(s.blocks) > 0), Usage: &u, Parts: s.parts()}, nil
	}
	return nil, nil // ping and events this version does not know
}

func isMessageEvent(t string) bool {
	switch t {
	case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
		return true
	}
	return false
}

// end reports an error unless the stream ended with message_stop.
func (s *streamState) end() error {
	if !s.stopped {
		return malformed("the stream ended before message_stop")
	}
	return nil
}
