package toolgate_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
)

// partsMessages is a conversation whose messages use every part kind.
func partsMessages() []toolgate.Message {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	return []toolgate.Message{
		&toolgate.UserMessage{Text: "What does this sign say? Book the flight on it.", Parts: toolgate.Parts{
			toolgate.FilePart{MediaType: "image/png", Data: png, Name: "sign.png"},
			toolgate.FilePart{MediaType: "application/pdf", URL: "https://example.com/itinerary.pdf"},
			toolgate.TextPart{Text: "The second file is my itinerary."},
		}},
		&toolgate.AssistantMessage{
			Text: "It says VX205. Booking it.",
			ToolCalls: []toolgate.ToolCall{
				{ID: "toolu_1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
				{ID: "toolu_2", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
			},
			Parts: toolgate.Parts{
				toolgate.ReasoningPart{Text: "The sign reads VX205.", Provider: "anthropic", Signature: "EqQBCkYIBxgCKkA"},
				toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "EmwKAhgBEgy3va3pzix"},
				toolgate.TextPart{Text: "It says VX205. "},
				toolgate.TextPart{Text: "Booking it.", Provider: "openai.responses", Opaque: json.RawMessage(`{"phase":"commentary"}`)},
				toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "CiQB0e2Kb"},
				toolgate.ToolCallPart{Index: 1},
			},
		},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "toolu_1", Name: "flightStatus", Content: `"on time"`, Parts: toolgate.Parts{
				toolgate.FilePart{MediaType: "image/png", Data: png},
			}},
			{CallID: "toolu_2", Name: "bookFlight", Content: `"booked"`},
		}},
		&toolgate.AssistantMessage{Text: "Done.", Parts: toolgate.Parts{
			toolgate.ReasoningPart{Provider: "openai.responses", Signature: "gAAAAABo", Opaque: json.RawMessage(`{"id":"rs_1","summary":[]}`)},
			toolgate.TextPart{Text: "Done."},
		}},
	}
}

func TestPartsRoundTrip(t *testing.T) {
	for i, m := range partsMessages() {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("message %d: Marshal: %v", i, err)
		}
		got, err := toolgate.UnmarshalMessage(b)
		if err != nil {
			t.Fatalf("message %d: UnmarshalMessage(%s): %v", i, b, err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("message %d round trip (-want +got):\n%s", i, diff)
		}
	}
}

// TestStoredBeforeParts reads conversations as the release before parts
// stored them: they decode to text and calls, with no parts, and their
// content is derived from those.
func TestStoredBeforeParts(t *testing.T) {
	data, err := os.ReadFile("testdata/stored/messages-before-parts.json")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := toolgate.UnmarshalMessages(data[strings.IndexByte(string(data), '\n')+1:])
	if err != nil {
		t.Fatalf("UnmarshalMessages: %v", err)
	}
	if diff := cmp.Diff(allMessages(), msgs, equateEmptyMessages); diff != "" {
		t.Fatalf("stored messages (-want +got):\n%s", diff)
	}
	reply := msgs[2].(*toolgate.AssistantMessage)
	want := []toolgate.Part{
		toolgate.TextPart{Text: "Let me check."},
		toolgate.ToolCallPart{Index: 0}, toolgate.ToolCallPart{Index: 1}, toolgate.ToolCallPart{Index: 2},
	}
	if diff := cmp.Diff(want, reply.Content()); diff != "" {
		t.Errorf("Content of a reply without parts (-want +got):\n%s", diff)
	}
	if reply.Parts != nil {
		t.Errorf("Parts = %v, want nil", reply.Parts)
	}
}

func TestPartsRefused(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"unknown type", `{"role":"assistant","parts":[{"type":"video"}]}`, "unknown part type"},
		{"missing type", `{"role":"assistant","parts":[{"text":"x"}]}`, "missing type"},
		{"not an object", `{"role":"assistant","parts":["x"]}`, "not a JSON object"},
		{"null part", `{"role":"assistant","parts":[null]}`, "not a JSON object"},
		{"unknown field", `{"role":"assistant","text":"x","parts":[{"type":"text","text":"x","colour":"red"}]}`, "unknown field"},
		{"field of another kind", `{"role":"assistant","text":"x","parts":[{"type":"text","text":"x","url":"https://a.example"}]}`, "with field url"},
		{"text disagrees", `{"role":"assistant","text":"hello","parts":[{"type":"text","text":"goodbye"}]}`, "do not add up"},
		{"call missing from parts", `{"role":"assistant","tool_calls":[{"name":"a"}],"parts":[{"type":"text","text":""}]}`, "0 tool call parts for 1"},
		{"call twice", `{"role":"assistant","tool_calls":[{"name":"a"}],"parts":[{"type":"tool_call","index":0},{"type":"tool_call","index":0}]}`, "each call once"},
		{"call out of range", `{"role":"assistant","tool_calls":[{"name":"a"}],"parts":[{"type":"tool_call","index":3}]}`, "each call once"},
		{"negative index", `{"role":"assistant","parts":[{"type":"tool_call","index":-1}]}`, "negative index"},
		{"tool call without index", `{"role":"assistant","parts":[{"type":"tool_call"}]}`, "without index"},
		{"reasoning without provider", `{"role":"assistant","parts":[{"type":"reasoning","text":"x"}]}`, "without provider"},
		{"redacted without data", `{"role":"assistant","parts":[{"type":"redacted_reasoning","provider":"anthropic"}]}`, "needs provider and data"},
		{"opaque not an object", `{"role":"assistant","parts":[{"type":"reasoning","provider":"p","opaque":"x"}]}`, "not a JSON object"},
		{"file without media type", `{"role":"user","parts":[{"type":"file","data":"AAAA"}]}`, "invalid media type"},
		{"file with bad media type", `{"role":"user","parts":[{"type":"file","media_type":"png","data":"AAAA"}]}`, "invalid media type"},
		{"file without content", `{"role":"user","parts":[{"type":"file","media_type":"image/png"}]}`, "without data or url"},
		{"file with both", `{"role":"user","parts":[{"type":"file","media_type":"image/png","data":"AAAA","url":"https://a.example/x.png"}]}`, "both data and url"},
		{"file data not base64", `{"role":"user","parts":[{"type":"file","media_type":"image/png","data":"%%%"}]}`, "not base64"},
		{"file url scheme", `{"role":"user","parts":[{"type":"file","media_type":"image/png","url":"javascript:alert(1)"}]}`, "http or https"},
		{"file url relative", `{"role":"user","parts":[{"type":"file","media_type":"image/png","url":"/etc/passwd"}]}`, "http or https"},
		{"reasoning in a user message", `{"role":"user","parts":[{"type":"reasoning","provider":"p","text":"x"}]}`, "cannot be in a user message"},
		{"signed text in a user message", `{"role":"user","parts":[{"type":"text","text":"x","signature":"s"}]}`, "no provider data"},
		{"call in a tool result", `{"role":"tool","results":[{"name":"a","content":"","status":"ok","parts":[{"type":"tool_call","index":0}]}]}`, "cannot be in a user message"},
		{"parts on a system message", `{"role":"system","text":"x","parts":[]}`, "system message has no parts"},
		{"parts not an array", `{"role":"user","parts":{"type":"text"}}`, ""},
		{"a later part with an unknown field", `{"role":"assistant","text":"xy","parts":[{"type":"text","text":"x"},{"type":"text","text":"y","colour":"red"}]}`, `part 1: json: unknown field "colour"`},
		{"a later part not an object", `{"role":"assistant","text":"x","parts":[{"type":"text","text":"x"},7]}`, "part 1: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := toolgate.UnmarshalMessage([]byte(tt.json))
			if err == nil {
				t.Fatalf("UnmarshalMessage(%s) = %#v, want an error", tt.json, m)
			}
			if !errors.Is(err, toolgate.ErrInvalidMessage) {
				t.Errorf("error %v does not wrap ErrInvalidMessage", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestPartsMarshalRefusesInvalid(t *testing.T) {
	for _, p := range []toolgate.Part{
		nil,
		toolgate.FilePart{MediaType: "image/png"},
		toolgate.ReasoningPart{Text: "x"},
		toolgate.TextPart{Text: "x", Opaque: json.RawMessage("{")},
	} {
		if b, err := json.Marshal(&toolgate.UserMessage{Parts: toolgate.Parts{p}}); err == nil {
			t.Errorf("Marshal with part %#v = %s, want an error", p, b)
		}
	}
}

func TestAssistantClone(t *testing.T) {
	orig := partsMessages()[1].(*toolgate.AssistantMessage)
	c := orig.Clone()
	if diff := cmp.Diff(orig, c); diff != "" {
		t.Fatalf("Clone differs (-orig +clone):\n%s", diff)
	}
	c.ToolCalls[0].Arguments = "{}"
	c.Parts[3].(toolgate.TextPart).Opaque[2] = 'X'
	if orig.ToolCalls[0].Arguments == "{}" || string(orig.Parts[3].(toolgate.TextPart).Opaque) != `{"phase":"commentary"}` {
		t.Fatal("Clone shares memory with the original")
	}
	var nilMsg *toolgate.AssistantMessage
	if nilMsg.Clone() != nil || nilMsg.Content() != nil {
		t.Error("nil message: Clone or Content not nil")
	}
}

func TestCollectParts(t *testing.T) {
	reply := partsMessages()[1].(*toolgate.AssistantMessage)
	chunks := []*toolgate.Chunk{
		{Reasoning: "The sign reads "},
		{Reasoning: "VX205."},
		{Text: "It says VX205. Booking it."},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "toolu_1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, ID: "toolu_2", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}},
		{Parts: reply.Parts, FinishReason: toolgate.FinishToolCalls},
	}
	resp, err := toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reply, resp.Message()); diff != "" {
		t.Errorf("collected reply (-want +got):\n%s", diff)
	}

	// Parts that disagree with the streamed text are a broken stream.
	chunks[2] = &toolgate.Chunk{Text: "Something else."}
	_, err = toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	if !errors.Is(err, toolgate.ErrBadStream) || !errors.Is(err, toolgate.ErrInvalidMessage) {
		t.Errorf("Collect of disagreeing parts: %v, want ErrBadStream and ErrInvalidMessage", err)
	}
}

func TestUserContent(t *testing.T) {
	m := &toolgate.UserMessage{Text: "look", Parts: toolgate.Parts{toolgate.FilePart{MediaType: "image/jpeg", URL: "https://a.example/x.jpg"}}}
	want := []toolgate.Part{toolgate.TextPart{Text: "look"}, toolgate.FilePart{MediaType: "image/jpeg", URL: "https://a.example/x.jpg"}}
	if diff := cmp.Diff(want, m.Content()); diff != "" {
		t.Errorf("Content (-want +got):\n%s", diff)
	}
	if !m.Parts[0].(toolgate.FilePart).IsImage() {
		t.Error("IsImage false for image/jpeg")
	}
}

func TestPartsUnmarshalTrailingData(t *testing.T) {
	var ps toolgate.Parts
	err := ps.UnmarshalJSON([]byte(`[{"type":"text","text":"x"}] [`))
	if !errors.Is(err, toolgate.ErrInvalidMessage) || ps != nil {
		t.Errorf("Parts.UnmarshalJSON with data after the array = %v, %v; want an error wrapping ErrInvalidMessage", ps, err)
	}
}
