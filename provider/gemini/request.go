package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/schemacache"
)

// rawArgumentsKey is the key under which arguments that are not a JSON
// object are sent: the API requires function call args to be an object.
const rawArgumentsKey = "_raw"

// skipSignature is the thought signature the API documents for function
// calls whose real signature is not known (calls another model made):
// Gemini 3 models reject a step whose first call comes back without one.
var skipSignature = []byte("skip_thought_signature_validator")

// request builds the model name, contents and config for p.
func (m *Model) request(p *toolgate.Prompt) (string, []*genai.Content, *genai.GenerateContentConfig, error) {
	if p == nil {
		return "", nil, nil, errors.New("gemini: nil prompt")
	}
	opts := p.Options
	if opts == nil {
		opts = &toolgate.ModelOptions{}
	}
	model := m.model
	if opts.Model != "" {
		model = opts.Model
	}
	system, contents, err := contents(p.Messages)
	if err != nil {
		return "", nil, nil, err
	}
	config := &genai.GenerateContentConfig{
		SystemInstruction: system,
		MaxOutputTokens:   int32(min(opts.MaxOutputTokens, 1<<31-1)),
		StopSequences:     opts.Stop,
		ThinkingConfig:    m.thinking,
	}
	if opts.Temperature != nil {
		config.Temperature = genai.Ptr(float32(*opts.Temperature))
	}
	decls, err := m.declarations(p.Tools)
	if err != nil {
		return "", nil, nil, err
	}
	if len(decls) > 0 {
		config.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
		config.ToolConfig = toolConfig(opts.ToolChoice)
	}
	return model, contents, config, nil
}

// contents converts the conversation: system messages become the system
// instruction, one part each; the others become contents with role "user"
// or "model". Adjacent contents of the same role are merged into one.
func contents(msgs []toolgate.Message) (*genai.Content, []*genai.Content, error) {
	var system *genai.Content
	var files inline
	out := make([]*genai.Content, 0, len(msgs))
	add := func(role string, parts []*genai.Part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		out = append(out, &genai.Content{Role: role, Parts: parts})
	}
	for i, msg := range msgs {
		switch msg := msg.(type) {
		case *toolgate.SystemMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("gemini: message %d is nil", i)
			}
			if msg.Text == "" {
				continue
			}
			if system == nil {
				system = &genai.Content{Role: genai.RoleUser}
			}
			system.Parts = append(system.Parts, &genai.Part{Text: msg.Text})
		case *toolgate.UserMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("gemini: message %d is nil", i)
			}
			parts, err := files.userParts(i, msg)
			if err != nil {
				return nil, nil, err
			}
			add(genai.RoleUser, parts)
		case *toolgate.AssistantMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("gemini: message %d is nil", i)
			}
			parts, err := modelParts(msg)
			if err != nil {
				return nil, nil, fmt.Errorf("gemini: message %d: %w", i, err)
			}
			add(genai.RoleModel, parts)
		case *toolgate.ToolMessage:
			if msg == nil {
				return nil, nil, fmt.Errorf("gemini: message %d is nil", i)
			}
			parts := make([]*genai.Part, len(msg.Results))
			var after []*genai.Part
			for j, r := range msg.Results {
				key := "output"
				if r.Status == toolgate.ResultError {
					key = "error"
				}
				fr := &genai.FunctionResponse{ID: r.CallID, Name: r.Name, Response: map[string]any{key: r.Content}}
				more, err := files.resultParts(i, fr, r.Parts)
				if err != nil {
					return nil, nil, err
				}
				parts[j] = &genai.Part{FunctionResponse: fr}
				after = append(after, more...)
			}
			add(genai.RoleUser, append(parts, after...))
		default:
			return nil, nil, fmt.Errorf("gemini: message %d: unsupported message %T", i, msg)
		}
	}
	return system, out, nil
}

// modelParts converts a reply's content, in order (see
// [toolgate.AssistantMessage.Content]). Parts this adapter read go back as
// they came, each with its thoughtSignature byte for byte: thoughts as
// thought parts, text as text parts, calls as functionCall parts. Parts of
// other providers are dropped: their reasoning is left out, their text
// goes as plain text, their calls as plain calls. A reply that carries no
// signature of this adapter (another provider's, or one made without
// thinking) sends its first call with the bypass value the API documents
// for calls whose signature is not known; calls of a reply that has its
// own signatures never get it. A text part without text (a signature that
// came alone after a call, which a request part cannot carry without data)
// and files are left out.
func modelParts(msg *toolgate.AssistantMessage) ([]*genai.Part, error) {
	content := msg.Content()
	own := false
	for _, p := range content {
		switch p := p.(type) {
		case toolgate.TextPart:
			own = own || p.Provider == providerName && p.Signature != ""
		case toolgate.ReasoningPart:
			own = own || p.Provider == providerName && p.Signature != ""
		case toolgate.ToolCallPart:
			own = own || p.Provider == providerName && p.Signature != ""
		}
	}
	parts := make([]*genai.Part, 0, len(content))
	firstCall := true
	for j, p := range content {
		switch p := p.(type) {
		case toolgate.TextPart:
			if p.Text == "" {
				continue
			}
			part := &genai.Part{Text: p.Text}
			if p.Provider == providerName && p.Signature != "" {
				sig, err := decodeSignature(j, p.Signature)
				if err != nil {
					return nil, err
				}
				part.ThoughtSignature = sig
			}
			parts = append(parts, part)
		case toolgate.ReasoningPart:
			if p.Provider != providerName || p.Text == "" && p.Signature == "" {
				continue
			}
			part := &genai.Part{Text: p.Text, Thought: true}
			if p.Signature != "" {
				sig, err := decodeSignature(j, p.Signature)
				if err != nil {
					return nil, err
				}
				part.ThoughtSignature = sig
			}
			parts = append(parts, part)
		case toolgate.ToolCallPart:
			if p.Index < 0 || p.Index >= len(msg.ToolCalls) {
				return nil, fmt.Errorf("%w: tool call part %d of %d calls", toolgate.ErrInvalidMessage, p.Index, len(msg.ToolCalls))
			}
			call := msg.ToolCalls[p.Index]
			part := &genai.Part{FunctionCall: &genai.FunctionCall{ID: call.ID, Name: call.Name, Args: callArgs(call.Arguments)}}
			switch {
			case p.Provider == providerName && p.Signature != "":
				sig, err := decodeSignature(j, p.Signature)
				if err != nil {
					return nil, err
				}
				part.ThoughtSignature = sig
			case firstCall && !own:
				part.ThoughtSignature = skipSignature
			}
			firstCall = false
			parts = append(parts, part)
		}
	}
	return parts, nil
}

// decodeSignature returns the bytes of a kept thought signature.
func decodeSignature(part int, sig string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return nil, fmt.Errorf("%w: part %d: the thought signature is not base64", toolgate.ErrInvalidMessage, part)
	}
	return b, nil
}

// callArgs returns the args of a functionCall part for a call's arguments
// text: the decoded object when it is a JSON object, none when it is
// blank, and otherwise (not JSON, or JSON that is not an object)
// {"_raw": text}, so that the request stays valid and the model sees what
// it sent.
func callArgs(args string) map[string]any {
	b := bytes.TrimSpace([]byte(args))
	if len(b) == 0 {
		return nil
	}
	if b[0] == '{' {
		var v map[string]any
		if json.Unmarshal(b, &v) == nil && v != nil {
			return v
		}
	}
	return map[string]any{rawArgumentsKey: args}
}

// declarations converts the tools to function declarations with
// parametersJsonSchema; a nil schema, or one without a type, is sent with
// "type":"object".
func (m *Model) declarations(tools []*toolgate.Tool) ([]*genai.FunctionDeclaration, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]*genai.FunctionDeclaration, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			continue
		}
		def := t.Definition()
		schema, err := inputSchema(def.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("gemini: tool %s: input schema: %w", def.Name, err)
		}
		out = append(out, &genai.FunctionDeclaration{Name: def.Name, Description: def.Description, ParametersJsonSchema: schema})
	}
	return out, nil
}

// toolConfig maps ModelOptions.ToolChoice: "" to none (the API's default,
// AUTO), "auto" to AUTO, "required" to ANY, "none" to NONE, and a tool name
// to ANY restricted to that function. ParallelToolCalls has no Gemini
// equivalent and is ignored.
func toolConfig(choice string) *genai.ToolConfig {
	var fc genai.FunctionCallingConfig
	switch choice {
	case "":
		return nil
	case "auto":
		fc.Mode = genai.FunctionCallingConfigModeAuto
	case "required":
		fc.Mode = genai.FunctionCallingConfigModeAny
	case "none":
		fc.Mode = genai.FunctionCallingConfigModeNone
	default:
		fc.Mode = genai.FunctionCallingConfigModeAny
		fc.AllowedFunctionNames = []string{choice}
	}
	return &genai.ToolConfig{FunctionCallingConfig: &fc}
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
