package openai_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/provider/openai"
)

// sseData returns the data of each event of a recorded stream.
func sseData(t *testing.T, body []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if data = strings.TrimSpace(data); ok && data != "[DONE]" {
			out = append(out, []byte(data))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordedOutput returns the output items of a recorded Responses answer:
// the response's output, or for a stream the items of its
// response.output_item.done events by output index (the completed items,
// whose encrypted_content the API reference says to send back; the
// response.completed event repeats them with content encrypted anew).
func recordedOutput(t *testing.T, e recording.Exchange) []map[string]json.RawMessage {
	t.Helper()
	var r struct {
		Output []map[string]json.RawMessage `json:"output"`
	}
	if !e.Stream {
		if err := json.Unmarshal(e.Response, &r); err != nil {
			t.Fatal(err)
		}
		return r.Output
	}
	var out []map[string]json.RawMessage
	for _, data := range sseData(t, e.Response) {
		var ev struct {
			Type        string                     `json:"type"`
			OutputIndex int                        `json:"output_index"`
			Item        map[string]json.RawMessage `json:"item"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "response.output_item.done" {
			for len(out) <= ev.OutputIndex {
				out = append(out, nil)
			}
			out[ev.OutputIndex] = ev.Item
		}
	}
	return out
}

// compactJSON marshals v without insignificant space.
func compactJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordedParts returns the parts the documented reading of a recorded
// reply gives.
//
// Responses: one part per output item, in order. A reasoning item is a
// reasoning part whose text is its summary, whose signature is its
// encrypted_content and whose opaque object is the rest of the item
// without its type; a function_call item is a call part keeping the item's
// id and status; a message item is a text part keeping id, phase and
// status.
//
// Chat Completions: the reasoning_content (joined over a stream), then the
// text, then the calls.
func recordedParts(t *testing.T, api openai.API, e recording.Exchange) toolgate.Parts {
	t.Helper()
	if api == openai.ChatCompletions {
		return recordedChatParts(t, e)
	}
	var ps toolgate.Parts
	calls := 0
	for _, item := range recordedOutput(t, e) {
		var typ string
		json.Unmarshal(item["type"], &typ)
		pick := func(keys ...string) json.RawMessage {
			m := map[string]json.RawMessage{}
			for _, k := range keys {
				if v, ok := item[k]; ok && string(v) != "null" {
					m[k] = v
				}
			}
			return compactJSON(t, m)
		}
		switch typ {
		case "reasoning":
			var r struct {
				Summary []struct{ Text string }
				Enc     string `json:"encrypted_content"`
			}
			json.Unmarshal(compactJSON(t, item), &r)
			var texts []string
			for _, s := range r.Summary {
				texts = append(texts, s.Text)
			}
			rest := map[string]json.RawMessage{}
			for k, v := range item {
				if k != "type" && k != "encrypted_content" && string(v) != "null" {
					rest[k] = v
				}
			}
			ps = append(ps, toolgate.ReasoningPart{Text: strings.Join(texts, "\n\n"), Provider: openai.ProviderResponses, Signature: r.Enc, Opaque: compactJSON(t, rest)})
		case "function_call":
			ps = append(ps, toolgate.ToolCallPart{Index: calls, Provider: openai.ProviderResponses, Opaque: pick("id", "status")})
			calls++
		case "message":
			var m struct{ Content []struct{ Text string } }
			json.Unmarshal(compactJSON(t, item), &m)
			var text strings.Builder
			for _, c := range m.Content {
				text.WriteString(c.Text)
			}
			ps = append(ps, toolgate.TextPart{Text: text.String(), Provider: openai.ProviderResponses, Opaque: pick("id", "phase", "status")})
		}
	}
	return ps
}

func recordedChatParts(t *testing.T, e recording.Exchange) toolgate.Parts {
	t.Helper()
	type message struct {
		Content          string            `json:"content"`
		ReasoningContent string            `json:"reasoning_content"`
		ToolCalls        []json.RawMessage `json:"tool_calls"`
	}
	var reasoning, text strings.Builder
	calls := 0
	if !e.Stream {
		var cc struct{ Choices []struct{ Message message } }
		if err := json.Unmarshal(e.Response, &cc); err != nil {
			t.Fatal(err)
		}
		m := cc.Choices[0].Message
		reasoning.WriteString(m.ReasoningContent)
		text.WriteString(m.Content)
		calls = len(m.ToolCalls)
	} else {
		ids := map[string]bool{}
		for _, data := range sseData(t, e.Response) {
			var ch struct{ Choices []struct{ Delta message } }
			if err := json.Unmarshal(data, &ch); err != nil {
				t.Fatal(err)
			}
			for _, c := range ch.Choices {
				reasoning.WriteString(c.Delta.ReasoningContent)
				text.WriteString(c.Delta.Content)
				for _, tc := range c.Delta.ToolCalls {
					var v struct{ ID string }
					json.Unmarshal(tc, &v)
					if v.ID != "" {
						ids[v.ID] = true
					}
				}
			}
		}
		calls = len(ids)
	}
	if reasoning.Len() == 0 {
		return nil
	}
	ps := toolgate.Parts{toolgate.ReasoningPart{Text: reasoning.String(), Provider: openai.ProviderChat}}
	if text.Len() > 0 {
		ps = append(ps, toolgate.TextPart{Text: text.String()})
	}
	for i := range calls {
		ps = append(ps, toolgate.ToolCallPart{Index: i})
	}
	return ps
}
