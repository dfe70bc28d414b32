package openai

import (
	"encoding/json"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate"
)

// outputReply reads the output items of a response, in order, into a
// reply: the text of its message items, its function calls, and, when the
// response holds reasoning items or phased messages, its parts (see
// [outputParts]). It also reports whether a message held a refusal.
//
// The non-streamed reply (the response's output) and the streamed one (the
// items of its response.output_item.done events) go through this function
// alike, so both give the same message.
func outputReply(items []responses.ResponseOutputItemUnion) (msg *toolgate.AssistantMessage, refused bool) {
	msg = &toolgate.AssistantMessage{}
	var text strings.Builder
	parts := make(toolgate.Parts, 0, len(items))
	rich := false // something beyond text and calls
	for i := range items {
		item := &items[i]
		switch item.Type {
		case "reasoning":
			parts = append(parts, reasoningPart(item))
			rich = true
		case "message":
			var t strings.Builder
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					t.WriteString(c.Text)
				case "refusal":
					t.WriteString(c.Refusal)
					refused = true
				}
			}
			text.WriteString(t.String())
			if item.Phase != "" {
				rich = true
			}
			p := toolgate.TextPart{Text: t.String(), Provider: ProviderResponses}
			p.Opaque = itemOpaque(item.RawJSON(), "id", "phase", "status")
			parts = append(parts, p)
		case "function_call":
			msg.ToolCalls = append(msg.ToolCalls, toolgate.ToolCall{
				ID:        item.CallID,
				Name:      item.Name,
				Arguments: rawArguments(item.Arguments.OfString, item.Arguments.JSON.OfString.Raw()),
			})
			parts = append(parts, toolgate.ToolCallPart{
				Index:    len(msg.ToolCalls) - 1,
				Provider: ProviderResponses,
				Opaque:   itemOpaque(item.RawJSON(), "id", "status"),
			})
		}
	}
	msg.Text = text.String()
	if rich {
		// Empty text parts carry no text and no provider data worth
		// keeping once they have no opaque fields.
		kept := parts[:0]
		for _, p := range parts {
			if t, ok := p.(toolgate.TextPart); ok && t.Text == "" && t.Opaque == nil {
				continue
			}
			kept = append(kept, p)
		}
		msg.Parts = kept
	}
	return msg, refused
}

// reasoningPart reads a reasoning item. Its summary texts, joined by blank
// lines, are the part's text (or, without a summary, its reasoning text
// content); encrypted_content is the signature; every other field of the
// item but its type (id, summary, content, status) is kept, as sent, in
// the opaque object, so that the item goes back as it came.
func reasoningPart(item *responses.ResponseOutputItemUnion) toolgate.ReasoningPart {
	p := toolgate.ReasoningPart{Provider: ProviderResponses, Signature: item.EncryptedContent}
	var texts []string
	for _, s := range item.Summary {
		texts = append(texts, s.Text)
	}
	if len(texts) == 0 {
		for _, c := range item.Content {
			texts = append(texts, c.Text)
		}
	}
	p.Text = strings.Join(texts, "\n\n")
	fields := objectFields([]byte(item.RawJSON()))
	delete(fields, "type")
	delete(fields, "encrypted_content")
	for k, v := range fields {
		if string(v) == "null" {
			delete(fields, k)
		}
	}
	p.Opaque = compactObject(fields)
	return p
}

// itemOpaque returns the named fields of an item that are set, as an
// opaque object.
func itemOpaque(raw string, keys ...string) json.RawMessage {
	fields := objectFields([]byte(raw))
	keep := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		if v, ok := fields[k]; ok && string(v) != "null" && string(v) != `""` {
			keep[k] = v
		}
	}
	return compactObject(keep)
}

// assistantItems returns the input items of a reply (message index i,
// calls sent with ids) in the order of its content.
//
// Parts of this API are replayed as the output items they came from:
// reasoning items whole, with their encrypted content, before the items
// that followed them; messages with their phase; and, when the reply's
// reasoning goes back too, messages and calls with their item ids. A
// reasoning item without encrypted content can only be sent back when
// responses are stored at OpenAI (store true); otherwise it is left out,
// and so are the item ids of that reply, which OpenAI would otherwise
// reject as items without their reasoning.
//
// Parts of other providers are dropped: their reasoning is left out, their
// text goes as a plain assistant message, their calls as plain calls.
// Files in a reply are not sent (the API takes no files from the
// assistant).
func (m *Model) assistantItems(msg *toolgate.AssistantMessage, ids []string) []responses.ResponseInputItemUnionParam {
	content := msg.Content()
	if len(content) == 0 {
		return []responses.ResponseInputItemUnionParam{easyAssistant("", "")}
	}
	withIDs := true
	for _, p := range content {
		if r, ok := p.(toolgate.ReasoningPart); ok && r.Provider == ProviderResponses && !m.replayable(r) {
			withIDs = false
		}
	}
	items := make([]responses.ResponseInputItemUnionParam, 0, len(content))
	placed := 0 // calls sent
	for _, p := range content {
		switch p := p.(type) {
		case toolgate.ReasoningPart:
			if p.Provider != ProviderResponses || !m.replayable(p) {
				continue
			}
			fields := objectFields(p.Opaque)
			if fields == nil {
				fields = map[string]json.RawMessage{}
			}
			fields["type"] = json.RawMessage(`"reasoning"`)
			if p.Signature != "" {
				sig, _ := json.Marshal(p.Signature)
				fields["encrypted_content"] = sig
			}
			if _, ok := fields["summary"]; !ok {
				fields["summary"] = json.RawMessage(`[]`) // required
			}
			raw, _ := json.Marshal(fields)
			r := param.Override[responses.ResponseReasoningItemParam](json.RawMessage(raw))
			items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &r})
		case toolgate.TextPart:
			var id, phase, status string
			if p.Provider == ProviderResponses {
				id, phase, status = opaqueString(p.Opaque, "id"), opaqueString(p.Opaque, "phase"), opaqueString(p.Opaque, "status")
			}
			if id == "" || !withIDs {
				items = append(items, easyAssistant(p.Text, phase))
				continue
			}
			if status == "" {
				status = "completed"
			}
			out := &responses.ResponseOutputMessageParam{
				ID:     id,
				Status: responses.ResponseOutputMessageStatus(status),
				Phase:  responses.ResponseOutputMessagePhase(phase),
				Content: []responses.ResponseOutputMessageContentUnionParam{{
					OfOutputText: &responses.ResponseOutputTextParam{Text: p.Text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}},
				}},
			}
			items = append(items, responses.ResponseInputItemUnionParam{OfOutputMessage: out})
		case toolgate.ToolCallPart:
			if p.Index < 0 || p.Index >= len(msg.ToolCalls) {
				continue // checked by the core; never sent half
			}
			c := msg.ToolCalls[p.Index]
			item := responses.ResponseInputItemParamOfFunctionCall(c.Arguments, ids[p.Index], c.Name)
			if p.Provider == ProviderResponses && withIDs {
				if id := opaqueString(p.Opaque, "id"); id != "" {
					item.OfFunctionCall.ID = sdk.String(id)
				}
				if st := opaqueString(p.Opaque, "status"); st != "" {
					item.OfFunctionCall.Status = responses.ResponseFunctionToolCallStatus(st)
				}
			}
			items = append(items, item)
			placed++
		}
	}
	// Parts name every call once (the core checks replies); a reply built
	// in code that leaves calls out still sends them, after its content.
	if placed < len(msg.ToolCalls) {
		seen := make([]bool, len(msg.ToolCalls))
		for _, p := range content {
			if c, ok := p.(toolgate.ToolCallPart); ok && c.Index >= 0 && c.Index < len(seen) {
				seen[c.Index] = true
			}
		}
		for j, c := range msg.ToolCalls {
			if !seen[j] {
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(c.Arguments, ids[j], c.Name))
			}
		}
	}
	return items
}

// replayable reports whether a reasoning part of this API can go back: it
// has encrypted content, or responses are stored at OpenAI, which then
// finds the item by its id.
func (m *Model) replayable(p toolgate.ReasoningPart) bool {
	return p.Signature != "" || (m.store && opaqueString(p.Opaque, "id") != "")
}

func easyAssistant(text, phase string) responses.ResponseInputItemUnionParam {
	msg := &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleAssistant}
	msg.Content.OfString = sdk.String(text)
	if phase != "" {
		msg.Phase = responses.EasyInputMessagePhase(phase)
	}
	return responses.ResponseInputItemUnionParam{OfMessage: msg}
}

// userItem returns a user message: its text alone, or, with parts, a list
// of input_text, input_image and input_file contents.
func userItem(i int, msg *toolgate.UserMessage, budget *fileBudget) (responses.ResponseInputItemUnionParam, error) {
	item := &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser}
	if len(msg.Parts) == 0 {
		item.Content.OfString = sdk.String(msg.Text)
		return responses.ResponseInputItemUnionParam{OfMessage: item}, nil
	}
	if err := userFiles(i, msg.Parts); err != nil {
		return responses.ResponseInputItemUnionParam{}, err
	}
	var list responses.ResponseInputMessageContentListParam
	if msg.Text != "" {
		list = append(list, responses.ResponseInputContentParamOfInputText(msg.Text))
	}
	for j, p := range msg.Parts {
		switch p := p.(type) {
		case toolgate.TextPart:
			list = append(list, responses.ResponseInputContentParamOfInputText(p.Text))
		case toolgate.FilePart:
			if err := budget.take(i, j, p); err != nil {
				return responses.ResponseInputItemUnionParam{}, err
			}
			if p.IsImage() {
				list = append(list, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
					Detail: responses.ResponseInputImageDetailAuto, ImageURL: sdk.String(dataURL(p)),
				}})
				continue
			}
			f := &responses.ResponseInputFileParam{Filename: sdk.String(fileName(p))}
			if p.URL != "" {
				f.FileURL = sdk.String(p.URL)
			} else {
				f.FileData = sdk.String(dataURL(p))
			}
			list = append(list, responses.ResponseInputContentUnionParam{OfInputFile: f})
		}
	}
	item.Content.OfInputItemContentList = list
	return responses.ResponseInputItemUnionParam{OfMessage: item}, nil
}

// toolOutput returns a function call's output: its content as a string, or,
// when the result has parts, a list of input_text, input_image and
// input_file items (the Responses API takes files in function call output).
func toolOutput(i int, r toolgate.ToolResult, budget *fileBudget) (responses.ResponseInputItemFunctionCallOutputOutputUnionParam, error) {
	var out responses.ResponseInputItemFunctionCallOutputOutputUnionParam
	if len(r.Parts) == 0 {
		out.OfString = sdk.String(r.Content)
		return out, nil
	}
	if err := userFiles(i, r.Parts); err != nil {
		return out, err
	}
	text := func(s string) responses.ResponseFunctionCallOutputItemUnionParam {
		return responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: s}}
	}
	var list responses.ResponseFunctionCallOutputItemListParam
	if r.Content != "" {
		list = append(list, text(r.Content))
	}
	for j, p := range r.Parts {
		switch p := p.(type) {
		case toolgate.TextPart:
			list = append(list, text(p.Text))
		case toolgate.FilePart:
			if err := budget.take(i, j, p); err != nil {
				return out, err
			}
			if p.IsImage() {
				list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
					ImageURL: sdk.String(dataURL(p)),
				}})
				continue
			}
			f := &responses.ResponseInputFileContentParam{Filename: sdk.String(fileName(p))}
			if p.URL != "" {
				f.FileURL = sdk.String(p.URL)
			} else {
				f.FileData = sdk.String(dataURL(p))
			}
			list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputFile: f})
		}
	}
	out.OfResponseFunctionCallOutputItemArray = list
	return out, nil
}
