package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/toolgate/toolgate"
)

// reasoningField is the field in which OpenAI-compatible servers in a
// thinking mode (DeepSeek, GLM) send the model's reasoning, and want it
// back, in every later request, on the assistant messages of a user turn
// with tool calls. The official API does not have it; the SDK keeps it
// among a message's extra fields.
const reasoningField = "reasoning_content"

// extraString returns the string value of an extra field, or "" when it
// is absent, null or not a string.
func extraString(fields map[string]respjson.Field, key string) string {
	f, ok := fields[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal([]byte(f.Raw()), &s) != nil {
		return ""
	}
	return s
}

// chatParts returns the parts of a chat reply with reasoning: the
// reasoning first, then the text, then one part per call. Without
// reasoning the reply is plain and has none.
func chatParts(reasoning, text string, calls int) toolgate.Parts {
	if reasoning == "" {
		return nil
	}
	ps := make(toolgate.Parts, 0, 2+calls)
	ps = append(ps, toolgate.ReasoningPart{Text: reasoning, Provider: ProviderChat})
	if text != "" {
		ps = append(ps, toolgate.TextPart{Text: text})
	}
	for i := range calls {
		ps = append(ps, toolgate.ToolCallPart{Index: i})
	}
	return ps
}

// chatReasoning returns the reasoning a reply sends back as its
// reasoning_content: the texts of its reasoning parts read from this API,
// joined. Reasoning of other providers is dropped.
func chatReasoning(msg *toolgate.AssistantMessage) string {
	var b strings.Builder
	for _, p := range msg.Parts {
		if r, ok := p.(toolgate.ReasoningPart); ok && r.Provider == ProviderChat {
			b.WriteString(r.Text)
		}
	}
	return b.String()
}

// toolTurns reports, for each message, whether it belongs to a user turn
// (the messages from one user message to the next) in which the model
// called tools.
func toolTurns(msgs []toolgate.Message) []bool {
	out := make([]bool, len(msgs))
	start := 0
	mark := func(end int) {
		calls := false
		for _, m := range msgs[start:end] {
			if a, ok := m.(*toolgate.AssistantMessage); ok && len(a.ToolCalls) > 0 {
				calls = true
			}
		}
		for j := start; j < end; j++ {
			out[j] = calls
		}
	}
	for i, m := range msgs {
		if _, ok := m.(*toolgate.UserMessage); ok {
			mark(i)
			start = i
		}
	}
	mark(len(msgs))
	return out
}

// chatUser returns a user message: its text alone, or, with parts, a list
// of text, image_url and file content parts. Chat Completions takes other
// files only by their bytes.
func chatUser(i int, msg *toolgate.UserMessage, budget *fileBudget) (sdk.ChatCompletionMessageParamUnion, error) {
	if len(msg.Parts) == 0 {
		return sdk.UserMessage(msg.Text), nil
	}
	if err := userFiles(i, msg.Parts); err != nil {
		return sdk.ChatCompletionMessageParamUnion{}, err
	}
	var list []sdk.ChatCompletionContentPartUnionParam
	if msg.Text != "" {
		list = append(list, sdk.TextContentPart(msg.Text))
	}
	files, err := chatFiles(i, msg.Parts, budget)
	if err != nil {
		return sdk.ChatCompletionMessageParamUnion{}, err
	}
	return sdk.UserMessage(append(list, files...)), nil
}

// chatFiles returns the content parts of text and file parts.
func chatFiles(i int, ps toolgate.Parts, budget *fileBudget) ([]sdk.ChatCompletionContentPartUnionParam, error) {
	var list []sdk.ChatCompletionContentPartUnionParam
	for j, p := range ps {
		switch p := p.(type) {
		case toolgate.TextPart:
			list = append(list, sdk.TextContentPart(p.Text))
		case toolgate.FilePart:
			if err := budget.take(i, j, p); err != nil {
				return nil, err
			}
			if p.IsImage() {
				list = append(list, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(p)}))
				continue
			}
			if p.URL != "" {
				return nil, unsupportedURL(i, j)
			}
			list = append(list, sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{
				FileData: sdk.String(dataURL(p)), Filename: sdk.String(fileName(p)),
			}))
		}
	}
	return list, nil
}

func unsupportedURL(i, j int) error {
	return fmt.Errorf("%w: message %d part %d: Chat Completions takes files other than images only by their bytes, not by URL", ErrUnsupportedFile, i, j)
}

// toolFiles returns the user message that carries the files of a tool
// message's results, for Chat Completions, whose tool messages hold only
// text: each result with parts is named by its call, followed by its
// parts. It returns false when no result has parts.
func toolFiles(i int, msg *toolgate.ToolMessage, rids []string, budget *fileBudget) (sdk.ChatCompletionMessageParamUnion, bool, error) {
	var list []sdk.ChatCompletionContentPartUnionParam
	for j, r := range msg.Results {
		if len(r.Parts) == 0 {
			continue
		}
		if err := userFiles(i, r.Parts); err != nil {
			return sdk.ChatCompletionMessageParamUnion{}, false, err
		}
		list = append(list, sdk.TextContentPart("Files returned by the tool call "+rids[j]+" ("+r.Name+"):"))
		files, err := chatFiles(i, r.Parts, budget)
		if err != nil {
			return sdk.ChatCompletionMessageParamUnion{}, false, err
		}
		list = append(list, files...)
	}
	if len(list) == 0 {
		return sdk.ChatCompletionMessageParamUnion{}, false, nil
	}
	return sdk.UserMessage(list), true, nil
}
