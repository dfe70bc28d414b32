package gemini

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
)

// fromResponse converts a complete response: the first candidate's text
// parts joined (thought parts left out of the text), its function calls as
// tool calls in order, and, when a part carries a thought signature or is
// a thought, the reply's parts (see [partList]).
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
	var parts partList
	if cand.Content != nil {
		for i, part := range cand.Content.Parts {
			if part == nil {
				continue
			}
			if fc := part.FunctionCall; fc != nil {
				call, err := toolCall(fc)
				if err != nil {
					return nil, malformed("part %d: %v", i, err)
				}
				parts.call(len(reply.ToolCalls), part.ThoughtSignature)
				reply.ToolCalls = append(reply.ToolCalls, call)
				continue
			}
			if parts.text(part) && !part.Thought {
				text.WriteString(part.Text)
			}
		}
	}
	reply.Text = text.String()
	reply.Parts = parts.result()
	out.Generations = []toolgate.Generation{{Message: reply, FinishReason: finishReason(cand.FinishReason, reply.HasToolCalls())}}
	return out, nil
}

// partList collects a reply's parts in order, as the same parts whether
// the reply came whole or streamed: a [toolgate.ToolCallPart] per function
// call, with its thoughtSignature; a [toolgate.TextPart] per text, and a
// [toolgate.ReasoningPart] per thought, with the thoughtSignature that
// ends it. The API streams a part's text in fragments and may send its
// signature on a last fragment without text; fragments of the same kind
// are joined until one carries a signature, which closes the part.
// Signatures are kept in base64, as the API sends them.
//
// The parts are the reply's Parts only when one of them is a thought or
// has a signature: a reply of plain text and calls keeps the plain form.
type partList struct {
	parts toolgate.Parts
	open  bool // the last part is text or thought that may go on
	extra bool // a thought or a signature came
	size  int  // bytes of text and signatures kept
}

// call adds the call with index index and the signature sig (nil: none).
func (l *partList) call(index int, sig []byte) {
	l.open = false
	p := toolgate.ToolCallPart{Index: index}
	if len(sig) > 0 {
		l.extra = true
		p.Provider, p.Signature = providerName, base64.StdEncoding.EncodeToString(sig)
		l.size += len(p.Signature)
	}
	l.parts = append(l.parts, p)
}

// text adds a text or thought part (or fragment). It reports whether the
// part was one: parts of other kinds (inline data, code) are left out, and
// so is their text.
func (l *partList) text(part *genai.Part) bool {
	if part.InlineData != nil || part.FileData != nil || part.ExecutableCode != nil || part.CodeExecutionResult != nil || part.FunctionResponse != nil {
		return false
	}
	if part.Text == "" && len(part.ThoughtSignature) == 0 && !part.Thought {
		return true // an empty fragment
	}
	var sig string
	if len(part.ThoughtSignature) > 0 {
		l.extra = true
		sig = base64.StdEncoding.EncodeToString(part.ThoughtSignature)
	}
	if part.Thought {
		l.extra = true
	}
	l.size += len(part.Text) + len(sig)
	if n := len(l.parts); l.open && n > 0 {
		switch last := l.parts[n-1].(type) {
		case toolgate.TextPart:
			if !part.Thought {
				last.Text += part.Text
				last.Provider, last.Signature = signed(sig)
				l.parts[n-1], l.open = last, sig == ""
				return true
			}
		case toolgate.ReasoningPart:
			if part.Thought {
				last.Text += part.Text
				last.Signature = sig
				l.parts[n-1], l.open = last, sig == ""
				return true
			}
		}
	}
	if part.Thought {
		l.parts = append(l.parts, toolgate.ReasoningPart{Text: part.Text, Provider: providerName, Signature: sig})
	} else {
		p := toolgate.TextPart{Text: part.Text}
		p.Provider, p.Signature = signed(sig)
		l.parts = append(l.parts, p)
	}
	l.open = sig == ""
	return true
}

// signed returns the provider and signature fields of a text part with
// signature sig: none when sig is "".
func signed(sig string) (string, string) {
	if sig == "" {
		return "", ""
	}
	return providerName, sig
}

func (l *partList) result() toolgate.Parts {
	if !l.extra {
		return nil
	}
	return l.parts
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

// maxKept bounds the text, thoughts and signatures a streamed reply keeps
// for its parts.
const maxKept = 64 << 20

// streamState turns the responses of a stream into chunks.
type streamState struct {
	calls   int
	parts   partList
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
		var text, thought strings.Builder
		for i, part := range cand.Content.Parts {
			if part == nil {
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
				s.parts.call(s.calls, part.ThoughtSignature)
				s.calls++
				continue
			}
			kept := s.parts.text(part)
			if s.parts.size > maxKept {
				return nil, malformed("more than %d bytes of text and signatures", maxKept)
			}
			switch {
			case !kept:
			case part.Thought:
				thought.WriteString(part.Text)
			default:
				text.WriteString(part.Text)
			}
		}
		ch.Text = text.String()
		ch.Reasoning = thought.String()
	}
	return chunkOrNil(ch), nil
}

func chunkOrNil(ch *toolgate.Chunk) *toolgate.Chunk {
	if ch.Text == "" && ch.Reasoning == "" && len(ch.ToolCallDeltas) == 0 && ch.ID == "" && ch.Model == "" {
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
		return &toolgate.Chunk{FinishReason: finishReason(s.finish, s.calls > 0), Usage: &u, Parts: s.parts.result()}, nil
	case s.blocked:
		return &toolgate.Chunk{FinishReason: toolgate.FinishContentFilter, Usage: &u, Parts: s.parts.result()}, nil
	}
	return nil, malformed("the stream ended without a finish reason")
}
