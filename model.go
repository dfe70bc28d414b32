package toolgate

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
)

// Model is a chat model that can call tools. Implementations live in the
// provider packages; [provider/scripted] replays a script for tests.
//
// Generate returns the whole reply. Stream yields the reply as it is
// produced: text deltas, tool-call fragments (see [ToolCallDelta]), and a
// last chunk with the finish reason and usage. An error ends the stream;
// breaking out of the loop must cancel the upstream request.
//
// A Model must be safe for concurrent use. It must not change the prompt.
type Model interface {
	Generate(ctx context.Context, p *Prompt) (*Response, error)
	Stream(ctx context.Context, p *Prompt) iter.Seq2[*Chunk, error]
}

// Prompt is what a model answers: the conversation, the tools it may call
// and the generation options. The [Client] also uses a prompt's tools as the
// only place to find the tool a call runs with.
//
// JSON: {"messages":[...],"tools":[...],"options":{...}}; tools marshal as
// their definitions and metadata (see [Tool.MarshalJSON]), so a decoded
// prompt carries tools that cannot run.
type Prompt struct {
	Messages []Message
	Tools    []*Tool
	// Options may be nil, meaning the model's defaults.
	Options *ModelOptions
}

// Tool returns the prompt's tool with the given name, or nil.
func (p *Prompt) Tool(name string) *Tool {
	if p == nil {
		return nil
	}
	for _, t := range p.Tools {
		if t != nil && t.def.Name == name {
			return t
		}
	}
	return nil
}

type promptJSON struct {
	Messages []Message     `json:"messages"`
	Tools    []*Tool       `json:"tools,omitempty"`
	Options  *ModelOptions `json:"options,omitempty"`
}

// MarshalJSON implements [json.Marshaler].
func (p *Prompt) MarshalJSON() ([]byte, error) {
	if err := checkMessages(p.Messages); err != nil {
		return nil, err
	}
	msgs := p.Messages
	if msgs == nil {
		msgs = []Message{}
	}
	return json.Marshal(promptJSON{msgs, p.Tools, p.Options})
}

// UnmarshalJSON implements [json.Unmarshaler].
func (p *Prompt) UnmarshalJSON(data []byte) error {
	var v struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []*Tool           `json:"tools"`
		Options  *ModelOptions     `json:"options"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("toolgate: prompt: %w", err)
	}
	msgs, err := decodeMessages(v.Messages)
	if err != nil {
		return fmt.Errorf("toolgate: prompt: %w", err)
	}
	if slices.Contains(v.Tools, nil) {
		return fmt.Errorf("toolgate: prompt: null tool")
	}
	*p = Prompt{Messages: msgs, Tools: v.Tools, Options: v.Options}
	return nil
}

// ModelOptions are generation settings passed with a [Prompt]. Every field's
// zero value means "the model's default".
type ModelOptions struct {
	// Model names the model to use, for providers that serve several.
	Model string `json:"model,omitempty"`
	// Temperature is nil for the model's default.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxOutputTokens is 0 for the model's default.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// ToolChoice is "" or "auto" for the model's choice, "none" to forbid
	// tool calls, "required" to force one, or a tool name.
	ToolChoice string `json:"tool_choice,omitempty"`
	// ParallelToolCalls is nil for the model's default.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// Stop sequences end the generation.
	Stop []string `json:"stop,omitempty"`
}

// FinishReason says why a reply or a turn ended. It is a string so that
// providers' own reasons can pass through.
type FinishReason string

// Finish reasons produced by toolgate and the providers.
const (
	FinishStop          FinishReason = "stop"           // the model finished its answer
	FinishToolCalls     FinishReason = "tool_calls"     // the reply asks for tool calls
	FinishLength        FinishReason = "length"         // the output token limit was reached
	FinishContentFilter FinishReason = "content_filter" // the provider withheld content
	FinishRefusal       FinishReason = "refusal"        // the model declined; the text says why
	FinishReturnDirect  FinishReason = "return_direct"  // tool results are the answer
	FinishToolLimit     FinishReason = "tool_limit"     // a tool call limit ended the turn
	FinishRoundLimit    FinishReason = "round_limit"    // the round limit ended the turn
)

// Usage counts tokens. Fields a provider does not report stay 0.
// CachedInputTokens is the part of InputTokens served from a prompt cache,
// and ReasoningTokens the part of OutputTokens spent on reasoning: both are
// included in the totals, never added to them.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Total returns input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Generation is one candidate reply of a [Response].
type Generation struct {
	Message      *AssistantMessage `json:"message"`
	FinishReason FinishReason      `json:"finish_reason,omitempty"`
}

// Response is a model's answer, and also the result of a whole turn of the
// [Client].
//
// A turn that paused for a person's decision has a non-empty Awaiting list:
// check [Response.Paused]. The paused reply, with all its tool calls, is the
// first generation.
//
// JSON: {"id","model","generations":[...],"usage":{...},"awaiting":[...],
// "pause_id","misleading_ids":[...],"conversation_id","results":[...],
// "metadata":{...}}; empty fields are omitted.
type Response struct {
	// ID is the provider's id of the response, if any.
	ID string `json:"id,omitempty"`
	// Model is the model that answered, if reported.
	Model string `json:"model,omitempty"`
	// Generations holds the candidate replies; toolgate uses the first.
	Generations []Generation `json:"generations"`
	// Usage is the token usage; for a turn, the sum over its rounds.
	Usage Usage `json:"usage"`
	// Awaiting lists, in call order, the keys of the paused reply's calls
	// that need a person's decision. Empty unless the turn paused.
	Awaiting []string `json:"awaiting,omitempty"`
	// PauseID is the id of the stored pause when the turn paused: pass it
	// to [Client.Resume] in [ResumeTurnParams.PauseID]. Empty unless the
	// turn paused.
	PauseID string `json:"pause_id,omitempty"`
	// MisleadingIDs lists, in call order, the keys of the paused reply's
	// calls whose id is the key of another call (see [AssistantMessage.MisleadingCallIDs]):
	// a page should warn that ids cannot be trusted to name calls. Empty
	// for most pauses and for turns that did not pause.
	MisleadingIDs []string `json:"misleading_ids,omitempty"`
	// ConversationID is the conversation the turn belongs to, if any.
	ConversationID string `json:"conversation_id,omitempty"`
	// Results holds the tool results a return-direct turn answers with, or
	// the results of the last round of a turn ended by a limit.
	Results []ToolResult `json:"results,omitempty"`
	// Metadata holds provider-specific facts (for example a system
	// fingerprint). Keys are not interpreted by toolgate.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Paused reports whether the turn stopped to wait for decisions.
func (r *Response) Paused() bool { return r != nil && len(r.Awaiting) > 0 }

// Message returns the first generation's message, or nil.
func (r *Response) Message() *AssistantMessage {
	if r == nil || len(r.Generations) == 0 {
		return nil
	}
	return r.Generations[0].Message
}

// Text returns the first generation's text, or "".
func (r *Response) Text() string {
	if m := r.Message(); m != nil {
		return m.Text
	}
	return ""
}

// FinishReason returns the first generation's finish reason, or "".
func (r *Response) FinishReason() FinishReason {
	if r == nil || len(r.Generations) == 0 {
		return ""
	}
	return r.Generations[0].FinishReason
}

// Chunk is one piece of a streamed reply or turn. Every field is optional and
// independent of the others.
//
// A model stream yields text deltas and tool-call fragments, then a chunk
// with the finish reason (and usage, when reported). A [Client] stream
// yields the text deltas of every round (and the reasoning deltas, see
// [ClientOptions.ShowReasoning]) and ends with one chunk carrying the
// finish reason and the usage of the whole turn; when the turn paused, that
// last chunk also carries the paused reply's tool calls, its parts (as the
// caller may see them) and the awaiting keys.
type Chunk struct {
	// Text is a fragment of the reply's text.
	Text string `json:"text,omitempty"`
	// Reasoning is a fragment of the model's readable reasoning, for
	// display while it streams; the reply keeps its reasoning in Parts.
	Reasoning string `json:"reasoning,omitempty"`
	// Parts are the reply's ordered parts, as in [AssistantMessage.Parts],
	// for replies that hold more than text and calls. A model stream sends
	// them once, on its last chunk, after all text and call fragments;
	// chunks' parts are appended in order.
	Parts Parts `json:"parts,omitempty"`
	// ToolCallDeltas are fragments of tool calls (model streams only).
	ToolCallDeltas []ToolCallDelta `json:"tool_call_deltas,omitempty"`
	// ToolCalls are complete tool calls: the paused reply's calls on the
	// last chunk of a paused turn.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Results are the results of a round's tool calls, once they ran.
	Results []ToolResult `json:"results,omitempty"`
	// FinishReason is set on the last chunk of a reply or turn.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Awaiting is set on the last chunk of a paused turn.
	Awaiting []string `json:"awaiting,omitempty"`
	// PauseID is set on the last chunk of a paused turn, as in
	// [Response.PauseID].
	PauseID string `json:"pause_id,omitempty"`
	// MisleadingIDs may be set on the last chunk of a paused turn, as in
	// [Response.MisleadingIDs].
	MisleadingIDs []string `json:"misleading_ids,omitempty"`
	// Usage is set once, on the last chunk, when known.
	Usage *Usage `json:"usage,omitempty"`
	// ID and Model identify the provider's response, when known.
	ID    string `json:"id,omitempty"`
	Model string `json:"model,omitempty"`
}

// ToolCallDelta is a fragment of one tool call of a streamed reply. Index
// tells which call of the reply the fragment belongs to. ID and Name are set
// on the fragment that starts the call; Arguments fragments are appended in
// order.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}
