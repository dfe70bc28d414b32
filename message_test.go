package toolgate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// toolsByJSON compares tools by their JSON form: definition and metadata.
// The function of a tool has no JSON form and is not compared.
var toolsByJSON = cmp.Comparer(func(a, b *toolgate.Tool) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
})

func TestMessageRoles(t *testing.T) {
	tests := []struct {
		msg  toolgate.Message
		want toolgate.Role
	}{
		{&toolgate.SystemMessage{}, toolgate.RoleSystem},
		{&toolgate.UserMessage{}, toolgate.RoleUser},
		{&toolgate.AssistantMessage{}, toolgate.RoleAssistant},
		{&toolgate.ToolMessage{}, toolgate.RoleTool},
	}
	for _, tt := range tests {
		if got := tt.msg.Role(); got != tt.want {
			t.Errorf("%T.Role() = %q, want %q", tt.msg, got, tt.want)
		}
	}
	var nilReply *toolgate.AssistantMessage
	if nilReply.HasToolCalls() || (&toolgate.AssistantMessage{Text: "x"}).HasToolCalls() {
		t.Errorf("HasToolCalls is true for a reply without calls")
	}
	if !replyWith(statusCall).HasToolCalls() {
		t.Errorf("HasToolCalls is false for a reply with a call")
	}
}

func TestResultStatus(t *testing.T) {
	tests := []struct {
		status toolgate.ResultStatus
		name   string
		ran    bool
	}{
		{toolgate.ResultOK, "ok", true},
		{toolgate.ResultError, "error", true},
		{toolgate.ResultDenied, "denied", false},
		{toolgate.ResultSkipped, "skipped", false},
		{toolgate.ResultRefused, "refused", false},
		{toolgate.ResultExpired, "expired", false},
		{toolgate.ResultInterrupted, "interrupted", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.status.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.status.Ran(); got != tt.ran {
				t.Errorf("Ran() = %v, want %v", got, tt.ran)
			}
			b, err := tt.status.MarshalText()
			if err != nil || string(b) != tt.name {
				t.Errorf("MarshalText() = %q, %v; want %q", b, err, tt.name)
			}
			var back toolgate.ResultStatus = 99
			if err := back.UnmarshalText([]byte(tt.name)); err != nil || back != tt.status {
				t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tt.name, back, err, tt.status)
			}
		})
	}
	bad := toolgate.ResultStatus(7)
	if got := bad.String(); got != "ResultStatus(7)" {
		t.Errorf("String() = %q, want ResultStatus(7)", got)
	}
	if bad.Ran() {
		t.Errorf("an invalid status ran")
	}
	if _, err := bad.MarshalText(); err == nil {
		t.Errorf("MarshalText of an invalid status: no error")
	}
	if _, err := json.Marshal(toolgate.ToolResult{Name: "x", Status: bad}); err == nil {
		t.Errorf("Marshal of a result with an invalid status: no error")
	}
	for _, s := range []string{"", "OK", "Denied", "0", "ok "} {
		var st toolgate.ResultStatus
		if err := st.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("UnmarshalText(%q): no error", s)
		}
	}
}

func fixedTime() time.Time { return time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC) }

func allMessages() []toolgate.Message {
	return []toolgate.Message{
		&toolgate.SystemMessage{Text: "You are a travel agent."},
		&toolgate.UserMessage{Text: "Is VX205 on time? If so, book it."},
		&toolgate.AssistantMessage{Text: "Let me check.", ToolCalls: []toolgate.ToolCall{
			{ID: "call_1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
			{Name: "bookFlight", Arguments: `{"flight": "VX205"}`},
			{ID: "call_3", Name: "mcp.notes-append"},
		}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "call_1", Name: "flightStatus", Content: toolgate.EditNote + `{"flight":"VX206"}` + "\n" + `"VX206 is on time"`, Status: toolgate.ResultOK, EditedArguments: `{"flight":"VX206"}`},
			{Name: "bookFlight", Content: "User cancelled the booking.", Status: toolgate.ResultDenied},
			{CallID: "call_3", Name: "mcp.notes-append", Content: "invalid arguments: not valid JSON", Status: toolgate.ResultError},
		}},
		&toolgate.AssistantMessage{Text: "VX205 is on time; I did not book it."},
		&toolgate.UserMessage{Text: "Try again."},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "call_4", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "call_4", Name: "bookFlight", Content: "", Status: toolgate.ResultSkipped},
		}},
		&toolgate.UserMessage{Text: "Book it and write it down."},
		&toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
			{ID: "call_5", Name: "bookFlight", Arguments: `{"flight":"VX205"}`},
			{ID: "call_6", Name: "mcp.notes-append", Arguments: `{"text":"VX205"}`},
		}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{
			{CallID: "call_5", Name: "bookFlight", Content: toolgate.ExpiredMessage, Status: toolgate.ResultExpired},
			{CallID: "call_6", Name: "mcp.notes-append", Content: "You may not use this tool.", Status: toolgate.ResultRefused},
		}},
	}
}

func samplePrompt() *toolgate.Prompt {
	f := newFlightsFixture()
	temp, parallel := 0.25, false
	return &toolgate.Prompt{
		Messages: allMessages()[:3],
		Tools:    []*toolgate.Tool{f.status, f.book, countingTool("answer", toolgate.ToolMetadata{ReturnDirect: true}, nil)},
		Options: &toolgate.ModelOptions{
			Model:             "scripted-1",
			Temperature:       &temp,
			MaxOutputTokens:   512,
			ToolChoice:        "auto",
			ParallelToolCalls: &parallel,
			Stop:              []string{"\n\n"},
		},
	}
}

func sampleResponse() *toolgate.Response {
	return &toolgate.Response{
		ID:    "resp_1",
		Model: "scripted",
		Generations: []toolgate.Generation{{
			Message:      &toolgate.AssistantMessage{Text: "Checking.", ToolCalls: []toolgate.ToolCall{statusCall, bookCall}},
			FinishReason: toolgate.FinishToolCalls,
		}},
		Usage:          toolgate.Usage{InputTokens: 120, OutputTokens: 30, CachedInputTokens: 64, ReasoningTokens: 8},
		Awaiting:       []string{"call_book"},
		ConversationID: "conv-42",
		Results:        []toolgate.ToolResult{{CallID: "x", Name: "answer", Content: "42", Status: toolgate.ResultOK}},
		Metadata:       map[string]string{"system_fingerprint": "fp_1"},
	}
}

func sampleDecisions() []toolgate.Decision {
	return []toolgate.Decision{
		toolgate.Allow("call_status"),
		toolgate.AllowWithArguments("call_seats", json.RawMessage(`{"flight": "VX205", "seats": 2}`)),
		toolgate.Deny("#1", ""),
		toolgate.Deny("call_book", "User cancelled the booking."),
	}
}

func sampleChunks() []toolgate.Chunk {
	u := toolgate.Usage{InputTokens: 10, OutputTokens: 4}
	return []toolgate.Chunk{
		{Text: "Checking ", ID: "resp_1", Model: "scripted"},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "call_book", Name: "bookFlight", Arguments: `{"fli`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `ght":"VX205"}`}}},
		{Results: []toolgate.ToolResult{{CallID: "a", Name: "flightStatus", Content: `"on time"`}}},
		{ToolCalls: []toolgate.ToolCall{bookCall}, FinishReason: toolgate.FinishToolCalls, Awaiting: []string{"call_book"}, Usage: &u},
	}
}

func samplePause() *toolgate.PauseRecord {
	return &toolgate.PauseRecord{ID: "pause-1", Index: 2, Awaiting: []string{"call_book", "#2"}, Claimed: true,
		ClaimedAt: fixedTime().Add(time.Minute), ClaimToken: "claim_1",
		Decisions: []toolgate.Decision{toolgate.Allow("call_book"), toolgate.Deny("#2", "not now")},
		Started:   []string{"call_book"}, CreatedAt: fixedTime()}
}

// jsonCase is one value and the way to decode its JSON form.
type jsonCase struct {
	name   string
	value  any
	decode func([]byte) (any, error)
}

func decodeAs[T any](b []byte) (any, error) {
	v := new(T)
	err := json.Unmarshal(b, v)
	return v, err
}

func decodeMessage(b []byte) (any, error) { return toolgate.UnmarshalMessage(b) }

func decodeMessages(b []byte) (any, error) { return toolgate.UnmarshalMessages(b) }

func TestJSONRoundTrip(t *testing.T) {
	var cases []jsonCase
	for _, m := range allMessages() {
		cases = append(cases, jsonCase{"message " + string(m.Role()), m, decodeMessage})
	}
	for _, st := range []toolgate.ResultStatus{toolgate.ResultOK, toolgate.ResultError, toolgate.ResultDenied, toolgate.ResultSkipped, toolgate.ResultRefused, toolgate.ResultExpired, toolgate.ResultInterrupted} {
		r := &toolgate.ToolResult{CallID: "c", Name: "n", Content: "text \"quoted\" <b>", Status: st}
		cases = append(cases, jsonCase{"result " + st.String(), r, decodeAs[toolgate.ToolResult]})
	}
	for _, d := range sampleDecisions() {
		cases = append(cases, jsonCase{"decision " + string(d.Verdict), &d, decodeAs[toolgate.Decision]})
	}
	for _, c := range sampleChunks() {
		cases = append(cases, jsonCase{"chunk", &c, decodeAs[toolgate.Chunk]})
	}
	cases = append(cases,
		jsonCase{"tool call", &toolgate.ToolCall{ID: "c", Name: "n", Arguments: "not JSON {"}, decodeAs[toolgate.ToolCall]},
		jsonCase{"tool call without id", &toolgate.ToolCall{Name: "n", Arguments: `{"a":[1,2]}`}, decodeAs[toolgate.ToolCall]},
		jsonCase{"empty tool message", &toolgate.ToolMessage{Results: []toolgate.ToolResult{}}, decodeMessage},
		jsonCase{"message list", allMessages(), decodeMessages},
		jsonCase{"prompt", samplePrompt(), decodeAs[toolgate.Prompt]},
		jsonCase{"prompt without tools", &toolgate.Prompt{Messages: allMessages()}, decodeAs[toolgate.Prompt]},
		jsonCase{"response", sampleResponse(), decodeAs[toolgate.Response]},
		jsonCase{"pause record", samplePause(), decodeAs[toolgate.PauseRecord]},
		jsonCase{"usage", &toolgate.Usage{InputTokens: 1, OutputTokens: 2}, decodeAs[toolgate.Usage]},
		jsonCase{"principal", &toolgate.Principal{ID: "alice", Roles: []string{"agent"}, Attributes: map[string]string{"team": "travel"}}, decodeAs[toolgate.Principal]},
	)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.value)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			back, err := tt.decode(b)
			if err != nil {
				t.Fatalf("decoding %s: %v", b, err)
			}
			if diff := cmp.Diff(tt.value, back, toolsByJSON); diff != "" {
				t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
			}
		})
	}
}

// TestGolden pins the documented JSON form of toolgate's types. Run
// go test -run TestGolden -update to rewrite the files after a deliberate
// change; a change of these files is a change of the wire format.
func TestGolden(t *testing.T) {
	tests := []struct {
		file   string
		pins   string
		value  any
		decode func([]byte) (any, error)
	}{
		{"messages.json", "the JSON form of every message kind, every tool result status and the result of a call with edited arguments (UnmarshalMessages)", allMessages(), decodeMessages},
		{"prompt.json", "the JSON form of a Prompt: messages, tools (definition and metadata) and model options", samplePrompt(), decodeAs[toolgate.Prompt]},
		{"response.json", "the JSON form of a paused Response with every field set", sampleResponse(), decodeAs[toolgate.Response]},
		{"decisions.json", "the JSON form of the decisions: allow, allow with edited arguments, deny with the default message, deny with a message", sampleDecisions(), decodeAs[[]toolgate.Decision]},
		{"chunks.json", "the JSON form of stream chunks: text, tool call fragments, results, and a paused turn's last chunk", sampleChunks(), decodeAs[[]toolgate.Chunk]},
		{"pause_record.json", "the JSON form of a stored PauseRecord", samplePause(), decodeAs[toolgate.PauseRecord]},
		{"parts.json", "the JSON form of messages with parts: every part kind, a user's image and a tool result's file", partsMessages(), decodeMessages},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := json.MarshalIndent(tt.value, "", "  ")
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			header := "// Pins " + tt.pins + ". Regenerate with: go test -run TestGolden -update"
			got := header + "\n" + string(body) + "\n"
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantBytes, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			want := string(wantBytes)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s differs from the JSON encoding (-file +encoding):\n%s", path, diff)
			}
			// The file decodes back to the value: the form is read as
			// well as written.
			_, jsonPart, ok := strings.Cut(want, "\n")
			if !ok || !strings.HasPrefix(want, "// Pins ") {
				t.Fatalf("%s does not start with a line saying what it pins", path)
			}
			back, err := tt.decode([]byte(jsonPart))
			if err != nil {
				t.Fatalf("decoding %s: %v", path, err)
			}
			if diff := cmp.Diff(tt.value, deref(back), toolsByJSON); diff != "" {
				t.Errorf("decoding %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

// deref turns the *[]T that decodeAs returns for a list into the []T the
// table holds.
func deref(v any) any {
	switch v := v.(type) {
	case *[]toolgate.Decision:
		return *v
	case *[]toolgate.Chunk:
		return *v
	}
	return v
}

func TestUnmarshalMessageErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"blank", "  \n"},
		{"null", "null"},
		{"array", `[{"role":"user","text":"hi"}]`},
		{"string", `"user"`},
		{"number", `42`},
		{"truncated", `{"role":"user","text":"hi"`},
		{"missing role", `{"text":"hi"}`},
		{"null role", `{"role":null,"text":"hi"}`},
		{"unknown role", `{"role":"developer","text":"hi"}`},
		{"empty role", `{"role":"","text":"hi"}`},
		{"role of the wrong type", `{"role":1}`},
		{"role of another case", `{"role":"User","text":"hi"}`},
		{"text of the wrong type", `{"role":"user","text":5}`},
		{"system text of the wrong type", `{"role":"system","text":["a"]}`},
		{"assistant text of the wrong type", `{"role":"assistant","text":{}}`},
		{"tool calls not an array", `{"role":"assistant","tool_calls":{}}`},
		{"tool call not an object", `{"role":"assistant","tool_calls":["x"]}`},
		{"tool call arguments as an object", `{"role":"assistant","tool_calls":[{"name":"x","arguments":{"a":1}}]}`},
		{"tool call id of the wrong type", `{"role":"assistant","tool_calls":[{"id":1,"name":"x"}]}`},
		{"results not an array", `{"role":"tool","results":"ok"}`},
		{"unknown result status", `{"role":"tool","results":[{"name":"x","content":"y","status":"maybe"}]}`},
		{"result status of the wrong type", `{"role":"tool","results":[{"name":"x","content":"y","status":0}]}`},
		{"result content of the wrong type", `{"role":"tool","results":[{"name":"x","content":1,"status":"ok"}]}`},
		{"trailing data", `{"role":"user","text":"hi"} {}`},
		{"a field of another role of the wrong type", `{"role":"user","text":"hi","results":"ok"}`},
		{"tool calls of the wrong type in a tool message", `{"role":"tool","results":[],"tool_calls":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := toolgate.UnmarshalMessage([]byte(tt.in))
			if !errors.Is(err, toolgate.ErrInvalidMessage) {
				t.Errorf("UnmarshalMessage(%s) = %v, %v; want an error wrapping ErrInvalidMessage", tt.in, m, err)
			}
			if m != nil {
				t.Errorf("got message %v with the error, want nil", m)
			}
			list := "[" + tt.in + "]"
			if strings.TrimSpace(tt.in) == "" {
				list = `[{"role":"user"}, ]`
			}
			if ms, err := toolgate.UnmarshalMessages([]byte(list)); !errors.Is(err, toolgate.ErrInvalidMessage) {
				t.Errorf("UnmarshalMessages(%s) = %v, %v; want an error wrapping ErrInvalidMessage", list, ms, err)
			}
			var p toolgate.Prompt
			if err := json.Unmarshal([]byte(`{"messages":`+list+`}`), &p); err == nil {
				t.Errorf("decoding a prompt holding %s: no error", list)
			} else if json.Valid([]byte(list)) && !errors.Is(err, toolgate.ErrInvalidMessage) {
				t.Errorf("decoding a prompt holding %s: got %v, want an error wrapping ErrInvalidMessage", list, err)
			}
		})
	}
}

// Fields the role does not use are ignored when well typed.
func TestUnmarshalMessageIgnoresOtherRolesFields(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want toolgate.Message
	}{
		{`{"role":"user","text":"hi","results":[],"tool_calls":[]}`, &toolgate.UserMessage{Text: "hi"}},
		{`{"role":"system","text":"be brief","results":[{"name":"x","content":"y","status":"ok"}]}`, &toolgate.SystemMessage{Text: "be brief"}},
		{`{"role":"tool","text":"ignored","results":[]}`, &toolgate.ToolMessage{Results: []toolgate.ToolResult{}}},
		{`{"role":"assistant","text":"done","results":[],"extra":{"a":1}}`, &toolgate.AssistantMessage{Text: "done"}},
	} {
		got, err := toolgate.UnmarshalMessage([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("UnmarshalMessage(%s) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
}

func TestUnmarshalMessagesForms(t *testing.T) {
	for _, in := range []string{`null`, `[]`, ` [ ] `} {
		ms, err := toolgate.UnmarshalMessages([]byte(in))
		if err != nil || len(ms) != 0 {
			t.Errorf("UnmarshalMessages(%s) = %v, %v; want no messages", in, ms, err)
		}
	}
	for _, in := range []string{`[null]`, `{}`, `"x"`, ``, `[{"role":"user"},null]`} {
		if ms, err := toolgate.UnmarshalMessages([]byte(in)); !errors.Is(err, toolgate.ErrInvalidMessage) {
			t.Errorf("UnmarshalMessages(%s) = %v, %v; want an error wrapping ErrInvalidMessage", in, ms, err)
		}
	}
	// Missing optional fields decode to zero values.
	ms, err := toolgate.UnmarshalMessages([]byte(`[{"role":"user"},{"role":"assistant"},{"role":"tool"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []toolgate.Message{&toolgate.UserMessage{}, &toolgate.AssistantMessage{}, &toolgate.ToolMessage{Results: []toolgate.ToolResult{}}}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// A result without a status is ok (the zero value).
	m, err := toolgate.UnmarshalMessage([]byte(`{"role":"tool","results":[{"name":"x","content":"y"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(*toolgate.ToolMessage).Results[0].Status; got != toolgate.ResultOK {
		t.Errorf("got status %v, want ok", got)
	}
}

func TestPromptJSONErrors(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		badMessage bool // the error wraps ErrInvalidMessage
	}{
		{"not an object", `[]`, false},
		{"messages not an array", `{"messages":{}}`, false},
		{"bad message", `{"messages":[{"role":"robot"}]}`, true},
		{"null message", `{"messages":[null]}`, true},
		{"null tool", `{"messages":[],"tools":[null]}`, false},
		{"tool with a bad name", `{"messages":[],"tools":[{"name":"no spaces"}]}`, false},
		{"tool of the wrong type", `{"tools":["flightStatus"]}`, false},
		{"options of the wrong type", `{"options":[]}`, false},
		{"temperature of the wrong type", `{"options":{"temperature":"hot"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p toolgate.Prompt
			err := json.Unmarshal([]byte(tt.in), &p)
			if err == nil {
				t.Fatalf("no error, want one")
			}
			if tt.badMessage && !errors.Is(err, toolgate.ErrInvalidMessage) {
				t.Errorf("got %v, want an error wrapping ErrInvalidMessage", err)
			}
		})
	}
	// A prompt holding a nil message cannot be encoded.
	for _, m := range []toolgate.Message{nil, (*toolgate.UserMessage)(nil), (*toolgate.ToolMessage)(nil)} {
		if b, err := json.Marshal(&toolgate.Prompt{Messages: []toolgate.Message{userSays("x"), m}}); !errors.Is(err, toolgate.ErrInvalidMessage) {
			t.Errorf("Marshal of a prompt holding %#v = %s, %v; want an error wrapping ErrInvalidMessage", m, b, err)
		}
	}
	b, err := json.Marshal(&toolgate.Prompt{})
	if err != nil || string(b) != `{"messages":[]}` {
		t.Errorf("Marshal(empty prompt) = %s, %v; want {\"messages\":[]}", b, err)
	}
}

func TestResponseHelpers(t *testing.T) {
	var nilResp *toolgate.Response
	if nilResp.Paused() || nilResp.Message() != nil || nilResp.Text() != "" || nilResp.FinishReason() != "" {
		t.Errorf("the helpers of a nil response are not zero")
	}
	empty := &toolgate.Response{}
	if empty.Paused() || empty.Message() != nil || empty.Text() != "" || empty.FinishReason() != "" {
		t.Errorf("the helpers of an empty response are not zero")
	}
	r := sampleResponse()
	if !r.Paused() {
		t.Errorf("Paused() = false for a response with awaiting keys")
	}
	if r.Message() != r.Generations[0].Message || r.Text() != "Checking." || r.FinishReason() != toolgate.FinishToolCalls {
		t.Errorf("got %v %q %q, want the first generation", r.Message(), r.Text(), r.FinishReason())
	}
	done := &toolgate.Response{Generations: []toolgate.Generation{{Message: &toolgate.AssistantMessage{Text: "Done."}, FinishReason: toolgate.FinishStop}}}
	if done.Paused() {
		t.Errorf("a finished response reports a pause")
	}
}

func TestUsage(t *testing.T) {
	a := toolgate.Usage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}
	b := toolgate.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 30, ReasoningTokens: 40}
	if diff := cmp.Diff(toolgate.Usage{InputTokens: 11, OutputTokens: 22, CachedInputTokens: 33, ReasoningTokens: 44}, a.Add(b)); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}
	if got := b.Total(); got != 30 {
		t.Errorf("Total() = %d, want 30", got)
	}
}

func TestPromptTool(t *testing.T) {
	f := newFlightsFixture()
	var nilPrompt *toolgate.Prompt
	if nilPrompt.Tool("bookFlight") != nil {
		t.Errorf("a nil prompt has a tool")
	}
	p := &toolgate.Prompt{Tools: []*toolgate.Tool{nil, f.status, f.book}}
	if p.Tool("bookFlight") != f.book || p.Tool("flightStatus") != f.status || p.Tool("BookFlight") != nil {
		t.Errorf("Prompt.Tool does not find tools by exact name")
	}
}

// equateEmptyMessages is what a round trip through JSON may change: an empty
// list decodes as nil and the reverse.
var equateEmptyMessages = cmpopts.EquateEmpty()

// TestConcreteMessageJSON checks that each message type decodes on its own
// (as the reply inside a Generation does), and only from its own kind.
func TestConcreteMessageJSON(t *testing.T) {
	for _, m := range allMessages() {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back toolgate.Message
		switch m.(type) {
		case *toolgate.SystemMessage:
			back = new(toolgate.SystemMessage)
		case *toolgate.UserMessage:
			back = new(toolgate.UserMessage)
		case *toolgate.AssistantMessage:
			back = new(toolgate.AssistantMessage)
		case *toolgate.ToolMessage:
			back = new(toolgate.ToolMessage)
		}
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("Unmarshal(%s) into %T: %v", b, back, err)
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Errorf("decoding %s into %T (-want +got):\n%s", b, back, diff)
		}
	}
	var g toolgate.Generation
	if err := json.Unmarshal([]byte(`{"message":{"role":"assistant","tool_calls":[{"id":"c","name":"n"}]},"finish_reason":"tool_calls"}`), &g); err != nil {
		t.Fatal(err)
	}
	if want := replyWith(toolgate.ToolCall{ID: "c", Name: "n"}); !cmp.Equal(want, g.Message) {
		t.Errorf("got generation message %+v, want %+v", g.Message, want)
	}
	for _, in := range []string{`{"role":"user","text":"hi"}`, `{"text":"hi"}`, `{"role":"assistant","tool_calls":"x"}`} {
		var a toolgate.AssistantMessage
		if err := json.Unmarshal([]byte(in), &a); !errors.Is(err, toolgate.ErrInvalidMessage) {
			t.Errorf("Unmarshal(%s) into an AssistantMessage: got %v, want an error wrapping ErrInvalidMessage", in, err)
		}
	}
	var u toolgate.UserMessage
	if err := json.Unmarshal([]byte(`{"role":"tool","results":[]}`), &u); !errors.Is(err, toolgate.ErrInvalidMessage) {
		t.Errorf("Unmarshal of a tool message into a UserMessage: got %v, want an error wrapping ErrInvalidMessage", err)
	}
}
