package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolgate/toolgate"
)

// fromMessage converts a complete API message: text blocks joined, tool_use
// blocks as tool calls in order, other blocks (thinking, server tools)
// left out.
func fromMessage(msg *sdk.Message) (*toolgate.Response, error) {
	if msg == nil {
		return nil, malformed("no message")
	}
	reply := &toolgate.AssistantMessage{}
	var text strings.Builder
	for i := range msg.Content {
		b := &msg.Content[i]
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if b.Name == "" {
				return nil, malformed("tool_use block %d has no name", i)
			}
			args, err := compactInput(b.Input)
			if err != nil {
				return nil, malformed("tool_use block %d: input: %v", i, err)
			}
			reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	reply.Text = text.String()
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

// streamState turns the events of a streamed message into chunks.
type streamState struct {
	started, stopped bool
	idSent           bool          // the id and model went out on a chunk
	id, model        string        // from message_start
	blocks           []streamBlock // tool_use blocks, in order
	stopReason       sdk.StopReason
	tokens           tokens
}

// streamBlock is a tool_use content block of the stream.
type streamBlock struct {
	index int64  // the content block index
	args  []byte // the input_json_delta fragments so far
	done  bool   // content_block_stop was seen
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
		if ev.ContentBlock.Type != "tool_use" {
			return nil, nil
		}
		if ev.ContentBlock.Name == "" {
			return nil, malformed("tool_use block %d has no name", ev.Index)
		}
		if s.call(ev.Index) >= 0 {
			return nil, malformed("content block %d started twice", ev.Index)
		}
		if len(s.blocks) >= maxCalls {
			return nil, malformed("more than %d tool calls", maxCalls)
		}
		s.blocks = append(s.blocks, streamBlock{index: ev.Index})
		return &toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{{
			Index: len(s.blocks) - 1, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name,
		}}}, nil
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text == "" {
				return nil, nil
			}
			return &toolgate.Chunk{Text: ev.Delta.Text}, nil
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
		return &toolgate.Chunk{FinishReason: finishReason(s.stopReason, len(s.blocks) > 0), Usage: &u}, nil
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
