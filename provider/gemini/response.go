package gemini

import (
	"encoding/json"
	"errors"
	"strings"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
)

// fromResponse converts a complete response: the first candidate's text
// parts joined (thought parts left out), its function calls as tool calls
// in order.
func fromResponse(r *genai.GenerateContentResponse) (*toolgate.Response, error) {
	if r == nil {
		return nil, malformed("no response")
	}
	out := &toolgate.Response{ID: r.ResponseID, Model: r.ModelVersion, Usage: usage(r.UsageMetadata)}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			out.Generations = []toolgate.Generation{{Message: &toolgate.AssistantMessage{}, FinishReason: toolgate.FinishContentFilter}}
			return out, nil
		}
		return nil, malformed("no candidate")
	}
	cand := r.Candidates[0]
	reply := &toolgate.AssistantMessage{}
	var text strings.Builder
	if cand.Content != nil {
		for i, part := range cand.Content.Parts {
			if part == nil || part.Thought {
				continue
			}
			if fc := part.FunctionCall; fc != nil {
				call, err := toolCall(fc)
				if err != nil {
					return nil, malformed("part %d: %v", i, err)
				}
				reply.ToolCalls = append(reply.ToolCalls, call)
				continue
			}
			text.WriteString(part.Text)
		}
	}
	reply.Text = text.String()
	out.Generations = []toolgate.Generation{{Message: reply, FinishReason: finishReason(cand.FinishReason, reply.HasToolCalls())}}
	return out, nil
}

// toolCall converts a function call; args are re-encoded as JSON text, "{}"
// when absent. The id is the API's, "" when it gave none.
func toolCall(fc *genai.FunctionCall) (toolgate.ToolCall, error) {
	if fc.Name == "" {
		return toolgate.ToolCall{}, errors.New("function call without a name")
	}
	args := "{}"
	if len(fc.Args) > 0 {
		b, err := json.Marshal(fc.Args)
		if err != nil {
			return toolgate.ToolCall{}, err
		}
		args = string(b)
	}
	return toolgate.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: args}, nil
}

// usage converts usageMetadata. OutputTokens counts the candidates' tokens
// and the thinking tokens, as providers bill them; ReasoningTokens is the
// thinking part. InputTokens includes the cached tokens.
func usage(u *genai.GenerateContentResponseUsageMetadata) toolgate.Usage {
	if u == nil {
		return toolgate.Usage{}
	}
	return toolgate.Usage{
		InputTokens:       int64(u.PromptTokenCount),
		OutputTokens:      int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
		CachedInputTokens: int64(u.CachedContentTokenCount),
		ReasoningTokens:   int64(u.ThoughtsTokenCount),
	}
}

// finishReason maps a candidate's finishReason. STOP (or none) is
// tool_calls when the reply has function calls; reasons without a toolgate
// equivalent pass through in lower case (for example
// "malformed_function_call").
func finishReason(r genai.FinishReason, hasCalls bool) toolgate.FinishReason {
	switch r {
	case "", genai.FinishReasonStop, genai.FinishReasonUnspecified:
		if hasCalls {
			return toolgate.FinishToolCalls
		}
		return toolgate.FinishStop
	case genai.FinishReasonMaxTokens:
		return toolgate.FinishLength
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return toolgate.FinishContentFilter
	}
	return toolgate.FinishReason(strings.ToLower(string(r)))
}

// maxCalls bounds the tool calls of a streamed reply, as toolgate's
// collector does.
const maxCalls = 512

// streamState turns the responses of a stream into chunks.
type streamState struct {
	calls   int
	idSent  bool
	finish  genai.FinishReason
	blocked bool // the prompt was blocked
	usage   toolgate.Usage
}

// response handles one streamed response; it returns the chunk to yield,
// if any.
func (s *streamState) response(r *genai.GenerateContentResponse) (*toolgate.Chunk, error) {
	if r == nil {
		return nil, malformed("no response")
	}
	ch := &toolgate.Chunk{}
	if !s.idSent && (r.ResponseID != "" || r.ModelVersion != "") {
		s.idSent = true
		ch.ID, ch.Model = r.ResponseID, r.ModelVersion
	}
	if r.UsageMetadata != nil {
		s.usage = usage(r.UsageMetadata) // each response carries the totals so far
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			s.blocked = true
		}
		return chunkOrNil(ch), nil
	}
	cand := r.Candidates[0]
	if cand.FinishReason != "" {
		s.finish = cand.FinishReason
	}
	if cand.Content != nil {
		var text strings.Builder
		for i, part := range cand.Content.Parts {
			if part == nil || part.Thought {
				continue
			}
			if fc := part.FunctionCall; fc != nil {
				call, err := toolCall(fc)
				if err != nil {
					return nil, malformed("part %d: %v", i, err)
				}
				if s.calls >= maxCalls {
					return nil, malformed("more than %d function calls", maxCalls)
				}
				ch.ToolCallDeltas = append(ch.ToolCallDeltas, toolgate.ToolCallDelta{
					Index: s.calls, ID: call.ID, Name: call.Name, Arguments: call.Arguments,
				})
				s.calls++
				continue
			}
			text.WriteString(part.Text)
		}
		ch.Text = text.String()
	}
	return chunkOrNil(ch), nil
}

func chunkOrNil(ch *toolgate.Chunk) *toolgate.Chunk {
	if ch.Text == "" && len(ch.ToolCallDeltas) == 0 && ch.ID == "" && ch.Model == "" {
		return nil
	}
	return ch
}

// end returns the last chunk, or an error when no response gave a finish
// reason (the stream was cut short).
func (s *streamState) end() (*toolgate.Chunk, error) {
	u := s.usage
	switch {
	case s.finish != "" && s.finish != genai.FinishReasonUnspecified:
		return &toolgate.Chunk{FinishReason: finishReason(s.finish, s.calls > 0), Usage: &u}, nil
	case s.blocked:
		return &toolgate.Chunk{FinishReason: toolgate.FinishContentFilter, Usage: &u}, nil
	}
	return nil, malformed("the stream ended without a finish reason")
}
