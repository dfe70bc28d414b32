package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/schemacache"
)

// rawArgumentsKey is the key under which arguments that are not a JSON
// object are sent: the API requires a tool_use input to be an object.
const rawArgumentsKey = "_raw"

// params builds the request for p.
func (m *Model) params(p *toolgate.Prompt) (sdk.MessageNewParams, []option.RequestOption, error) {
	var params sdk.MessageNewParams
	if p == nil {
		return params, nil, errors.New("anthropic: nil prompt")
	}
	opts := p.Options
	if opts == nil {
		opts = &toolgate.ModelOptions{}
	}
	params.Model = m.model
	if opts.Model != "" {
		params.Model = opts.Model
	}
	params.MaxTokens = m.maxTokens
	if opts.MaxOutputTokens > 0 {
		params.MaxTokens = int64(opts.MaxOutputTokens)
	}
	params.StopSequences = opts.Stop
	system, msgs, err := messages(p.Messages)
	if err != nil {
		return params, nil, err
	}
	params.System = system
	params.Messages = msgs
	if m.thinking > 0 {
		if err := checkBudget(m.thinking, params.MaxTokens); err != nil {
			return params, nil, err
		}
		if !toolTurnWithoutThinking(msgs) {
			params.Thinking = sdk.ThinkingConfigParamOfEnabled(m.thinking)
		}
	}
	tools, err := m.toolParams(p.Tools)
	if err != nil {
		return params, nil, err
	}
	params.Tools = tools
	if len(tools) > 0 {
		params.ToolChoice = toolChoice(opts)
	}
	var reqOpts []option.RequestOption
	if opts.Temperature != nil {
		// The SDK has no field for it any more; the API still reads it.
		reqOpts = append(reqOpts, option.WithJSONSet("temperature", *opts.Temperature))
	}
	return params, reqOpts, nil
}

// messages converts the conversation: system messages go to the system
// field, in order; every other message becomes one API message.
func messages(in []toolgate.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var system []sdk.TextBlockParam
	out := make([]sdk.MessageParam, 0, len(in))
	var lastIDs []string // the ids sent for the previous reply's calls
	for i, msg := range in {
		switch msg := msg.(type) {
		case *toolgate.SystemMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("anthropic: message %d is nil", i)
			}
			if msg.Text != "" {
				system = append(system, sdk.TextBlockParam{Text: msg.Text})
			}
		case *toolgate.UserMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("anthropic: message %d is nil", i)
			}
			blocks, err := userBlocks(i, msg)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, sdk.NewUserMessage(blocks...))
		case *toolgate.AssistantMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("anthropic: message %d is nil", i)
			}
			lastIDs = callIDs(i, msg.ToolCalls)
			blocks, err := assistantBlocks(msg, lastIDs)
			if err != nil {
				return nil, nil, fmt.Errorf("anthropic: message %d: %w", i, err)
			}
			if len(blocks) == 0 {
				continue // an empty reply carries nothing the API accepts
			}
			out = append(out, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
		case *toolgate.ToolMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("anthropic: message %d is nil", i)
			}
			if len(msg.Results) == 0 {
				continue
			}
			blocks := make([]sdk.ContentBlockParamUnion, len(msg.Results))
			for j, r := range msg.Results {
				id := r.CallID
				if len(lastIDs) == len(msg.Results) {
					id = lastIDs[j]
				}
				b, err := toolResult(i, id, r)
				if err != nil {
					return nil, nil, err
				}
				blocks[j] = sdk.ContentBlockParamUnion{OfToolResult: b}
			}
			out = append(out, sdk.NewUserMessage(blocks...))
		default:
			return nil, nil, fmt.Errorf("anthropic: message %d: unsupported message %T", i, msg)
		}
	}
	return system, out, nil
}

// toolTurnWithoutThinking reports whether the last assistant message calls
// tools without starting with a thinking block: a tool use turn that began
// without thinking (a reply from another provider, or one made with
// thinking off). Thinking cannot be turned on in the middle of such a turn
// (the API refuses a final assistant message with tool use that does not
// start with a thinking block), so that request is sent with thinking off;
// the next turn has it again.
func toolTurnWithoutThinking(msgs []sdk.MessageParam) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		a := msgs[i].OfAssistant
		if a == nil {
			continue
		}
		if len(a.Content) == 0 || a.Content[0].OfThinking != nil || a.Content[0].OfRedactedThinking != nil {
			return false
		}
		for _, b := range a.Content {
			if b.OfToolUse != nil {
				return true
			}
		}
		return false
	}
	return false
}

// assistantBlocks converts a reply's content, in order (see
// [toolgate.AssistantMessage.Content]). Parts this adapter read are sent
// back as they came: a reasoning part as a thinking block with its
// signature, a redacted reasoning part as a redacted_thinking block, byte
// for byte, before the tool_use blocks they preceded, as the API requires
// when thinking is used with tools. Parts of other providers are dropped:
// their reasoning is left out, their text goes as plain text and their
// calls as plain tool_use blocks. Empty text, which the API refuses, and
// files, which a reply cannot hold, are left out.
func assistantBlocks(msg *toolgate.AssistantMessage, ids []string) ([]sdk.ContentBlockParamUnion, error) {
	content := msg.Content()
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(content))
	for _, p := range content {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Text))
			}
		case toolgate.ReasoningPart:
			if p.Provider == providerName {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: p.Text, Signature: p.Signature}})
			}
		case toolgate.RedactedReasoningPart:
			if p.Provider == providerName {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: p.Data}})
			}
		case toolgate.ToolCallPart:
			if p.Index < 0 || p.Index >= len(msg.ToolCalls) {
				return nil, fmt.Errorf("%w: tool call part %d of %d calls", toolgate.ErrInvalidMessage, p.Index, len(msg.ToolCalls))
			}
			call := msg.ToolCalls[p.Index]
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
				ID:    ids[p.Index],
				Name:  call.Name,
				Input: toolInput(call.Arguments),
			}})
		}
	}
	return blocks, nil
}

// toolResult converts one result of message i: its content as text, then
// its parts (images and documents, see [convertFile]). Only
// [toolgate.ResultError] sets is_error; a denied or skipped call answers
// with its message as ordinary text content.
func toolResult(i int, id string, r toolgate.ToolResult) (*sdk.ToolResultBlockParam, error) {
	b := &sdk.ToolResultBlockParam{ToolUseID: id}
	if r.Content != "" {
		b.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Content}}}
	}
	files, err := resultFiles(i, r.Parts)
	if err != nil {
		return nil, err
	}
	b.Content = append(b.Content, files...)
	if r.Status == toolgate.ResultError {
		b.IsError = param.NewOpt(true)
	}
	return b, nil
}

// callIDs returns the ids to send for a reply's calls. The API requires
// ids that are non-empty, of [A-Za-z0-9_-] and distinct; a call whose id
// is not (a reply from another provider, a hand-built one) gets
// "toolu_tg_<message>_<call>" instead, and its result is sent with the same
// id.
func callIDs(msgIndex int, calls []toolgate.ToolCall) []string {
	ids := make([]string, len(calls))
	for j, c := range calls {
		ok := validID(c.ID)
		for k := range calls {
			if ok && k != j && calls[k].ID == c.ID {
				ok = false
			}
		}
		if ok {
			ids[j] = c.ID
		} else {
			ids[j] = "toolu_tg_" + strconv.Itoa(msgIndex) + "_" + strconv.Itoa(j)
		}
	}
	return ids
}

func validID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// toolInput returns the input of a tool_use block for a call's arguments
// text: the text itself when it is a JSON object, {} when it is blank, and
// otherwise (not JSON, or JSON that is not an object) the object
// {"_raw": text}, so that the request stays valid and the model sees what
// it sent.
func toolInput(args string) json.RawMessage {
	start := firstNonSpace(args)
	if start < 0 {
		return json.RawMessage("{}")
	}
	if args[start] == '{' && json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(map[string]string{rawArgumentsKey: args}) // cannot fail
	return b
}

func firstNonSpace(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}

// toolParams converts the tool definitions. A nil schema, or one without a
// type, is sent with "type":"object", which the API requires.
func (m *Model) toolParams(tools []*toolgate.Tool) ([]sdk.ToolUnionParam, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]sdk.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		def := t.Definition()
		schema, err := inputSchema(def.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("anthropic: tool %s: input schema: %w", def.Name, err)
		}
		tp := &sdk.ToolParam{
			Name:        def.Name,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
		}
		if def.Description != "" {
			tp.Description = param.NewOpt(def.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: tp})
	}
	return out, nil
}

// toolChoice maps ModelOptions.ToolChoice and ParallelToolCalls: "" and
// "auto" to auto (omitted unless parallel calls are set), "required" to
// any, "none" to none, anything else to that tool. ParallelToolCalls false
// sets disable_parallel_tool_use, true clears it explicitly; it has no
// effect with "none".
func toolChoice(opts *toolgate.ModelOptions) sdk.ToolChoiceUnionParam {
	var disable param.Opt[bool]
	if opts.ParallelToolCalls != nil {
		disable = param.NewOpt(!*opts.ParallelToolCalls)
	}
	switch opts.ToolChoice {
	case "", "auto":
		if opts.ParallelToolCalls == nil && opts.ToolChoice == "" {
			return sdk.ToolChoiceUnionParam{}
		}
		return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
	case "required":
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{DisableParallelToolUse: disable}}
	case "none":
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	default:
		return sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: opts.ToolChoice, DisableParallelToolUse: disable}}
	}
}

// schemas keeps the JSON of tool input schemas (see internal/schemacache).
var schemas = schemacache.New(schemacache.ObjectJSON)

var objectSchema = json.RawMessage(`{"type":"object"}`)

// inputSchema returns the JSON of a tool's input schema: "type":"object" is
// added when s has no type, and a nil s is {"type":"object"}.
func inputSchema(s *jsonschema.Schema) (json.RawMessage, error) {
	if s == nil {
		return objectSchema, nil
	}
	return schemas.Get(s)
}
