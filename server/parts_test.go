package server_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/server"
)

const (
	partsSignature = "EqQBCkYIBxgCKkB-signature"
	partsReasoning = "The traveller wants VX205 booked; it needs approval."
)

// partsModel pauses on a reply with signed reasoning and answers the
// resumption; it keeps the prompts it was given.
type partsModel struct {
	mu      sync.Mutex
	prompts []*toolgate.Prompt
}

func (m *partsModel) reply() *toolgate.AssistantMessage {
	return &toolgate.AssistantMessage{
		Text:      "Booking it.",
		ToolCalls: []toolgate.ToolCall{{ID: "call_book", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: partsReasoning, Provider: "anthropic", Signature: partsSignature},
			toolgate.RedactedReasoningPart{Provider: "anthropic", Data: "redacted-payload"},
			toolgate.TextPart{Text: "Booking it."},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "call-signature", Opaque: json.RawMessage(`{"phase":"commentary"}`)},
		},
	}
}

func (m *partsModel) model() *scripted.Model {
	return scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		m.mu.Lock()
		m.prompts = append(m.prompts, p)
		n := len(m.prompts)
		m.mu.Unlock()
		if n == 1 {
			r := m.reply()
			return scripted.Reply{Text: r.Text, ToolCalls: r.ToolCalls, Parts: r.Parts}, nil
		}
		return scripted.Reply{Text: "Booked."}, nil
	})
}

func (m *partsModel) prompt(i int) *toolgate.Prompt {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.prompts) {
		return nil
	}
	return m.prompts[i]
}

var pngBytes = []byte("\x89PNG\r\n\x1a\n-boarding-pass")

func partsBody(input string, parts string) string {
	b, _ := json.Marshal(input)
	return `{"input":` + string(b) + `,"parts":` + parts + `}`
}

func pngPart() string {
	return `{"type":"file","media_type":"image/png","name":"pass.png","data":"` + base64.StdEncoding.EncodeToString(pngBytes) + `"}`
}

func partsFixture(t *testing.T, show bool) (*fixture, *partsModel) {
	pm := &partsModel{}
	f := newFixtureWith(t, nil, pm.model(), func(c *server.Config) {
		c.MaxFileBytes = 64
		c.MaxMessageFileBytes = 100
		c.Agents["flights"].ShowReasoning = show
	})
	return f, pm
}

func TestPostMessageParts(t *testing.T) {
	f, pm := partsFixture(t, false)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey,
		partsBody("Book VX205.", `[`+pngPart()+`,{"type":"text","text":"That is my pass."}]`))
	if out["status"] != "paused" {
		t.Fatalf("turn %v, want paused", out)
	}
	// The model got the file's bytes and the text part.
	user := pm.prompt(0).Messages[1].(*toolgate.UserMessage)
	want := &toolgate.UserMessage{Text: "Book VX205.", Parts: toolgate.Parts{
		toolgate.FilePart{MediaType: "image/png", Name: "pass.png", Data: pngBytes}, toolgate.TextPart{Text: "That is my pass."}}}
	if got, _ := json.Marshal(user); string(got) != string(mustJSON(t, want)) {
		t.Errorf("the model got %s, want %s", got, mustJSON(t, want))
	}

	// The conversation shows the file's metadata, the reply's text and
	// calls, and no reasoning, signature, opaque field or file bytes.
	for _, key := range []string{travellerKey, approverKey} {
		got := f.must(200, "GET", "/v1/conversations/"+conv, key, "")
		raw := string(mustJSON(t, got))
		for _, secret := range []string{partsReasoning, partsSignature, "redacted-payload", "call-signature", "commentary", base64.StdEncoding.EncodeToString(pngBytes)} {
			if strings.Contains(raw, secret) {
				t.Errorf("%s sees %q in %s", key, secret, raw)
			}
		}
		msgs := got["messages"].([]any)
		file := msgs[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
		if file["type"] != "file" || file["media_type"] != "image/png" || file["name"] != "pass.png" || file["size"] != float64(len(pngBytes)) {
			t.Errorf("%s sees the file as %v", key, file)
		}
		reply := msgs[1].(map[string]any)
		if reply["text"] != "Booking it." || len(reply["tool_calls"].([]any)) != 1 || len(reply["parts"].([]any)) != 2 {
			t.Errorf("%s sees the reply as %v", key, reply)
		}
	}
	inboxJSON := f.must(200, "GET", "/v1/inbox", approverKey, "")
	inbox := mustJSON(t, inboxJSON)
	for _, secret := range []string{partsReasoning, partsSignature, "call-signature", base64.StdEncoding.EncodeToString(pngBytes)} {
		if strings.Contains(string(inbox), secret) {
			t.Errorf("the inbox shows %q: %s", secret, inbox)
		}
	}
	pc := inboxJSON["pauses"].([]any)[0].(map[string]any)["context"].(map[string]any)
	if files, _ := pc["request_files"].([]any); len(files) != 1 || files[0].(map[string]any)["size"] != float64(len(pngBytes)) || pc["said"] != "Booking it." {
		t.Errorf("the inbox's context %v, want the request's file metadata and the reply's text", pc)
	}

	// An approver's edit: the resumed request carries the reply with its
	// parts exactly as the model gave it.
	pause := out["pause"].(map[string]any)["id"].(string)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow","arguments":{"flight":"VX206"}}]}`)
	next := pm.prompt(1)
	if next == nil {
		t.Fatal("the model was not called after the decision")
	}
	var sent toolgate.Message
	for _, m := range next.Messages {
		if _, ok := m.(*toolgate.AssistantMessage); ok {
			sent = m
		}
	}
	if got, want := string(mustJSON(t, sent)), string(mustJSON(t, pm.reply())); got != want {
		t.Errorf("the resumed request's reply\n got %s\nwant %s", got, want)
	}
}

func TestShowReasoning(t *testing.T) {
	f, _ := partsFixture(t, true)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"Book VX205."}`)
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	parts := got["messages"].([]any)[1].(map[string]any)["parts"].([]any)
	first := parts[0].(map[string]any)
	if first["type"] != "reasoning" || first["text"] != partsReasoning {
		t.Errorf("reasoning shown as %v, want its text", first)
	}
	inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")
	pc := inbox["pauses"].([]any)[0].(map[string]any)["context"].(map[string]any)
	if pc["reasoning"] != partsReasoning {
		t.Errorf("the inbox's context %v, want the reasoning", pc)
	}
	raw := string(mustJSON(t, got)) + string(mustJSON(t, inbox))
	for _, secret := range []string{partsSignature, "redacted-payload", "call-signature", "commentary"} {
		if strings.Contains(raw, secret) {
			t.Errorf("show_reasoning shows %q: %s", secret, raw)
		}
	}
}

func TestPostMessagePartsRefused(t *testing.T) {
	big := base64.StdEncoding.EncodeToString(make([]byte, 65))
	half := base64.StdEncoding.EncodeToString(make([]byte, 60))
	file := func(data string) string { return `{"type":"file","media_type":"image/png","data":"` + data + `"}` }
	for _, tc := range []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"not an array", partsBody("x", `{"type":"text"}`), 422, "invalid_parts"},
		{"unknown type", partsBody("x", `[{"type":"video","text":"x"}]`), 422, "invalid_parts"},
		{"reasoning", partsBody("x", `[{"type":"reasoning","text":"x","provider":"anthropic"}]`), 422, "invalid_parts"},
		{"tool call", partsBody("x", `[{"type":"tool_call","index":0}]`), 422, "invalid_parts"},
		{"signed text", partsBody("x", `[{"type":"text","text":"x","provider":"gemini","signature":"s"}]`), 422, "invalid_parts"},
		{"file by url", partsBody("x", `[{"type":"file","media_type":"image/png","url":"https://example.com/a.png"}]`), 422, "invalid_parts"},
		{"bad base64", partsBody("x", `[`+file("!!!")+`]`), 422, "invalid_parts"},
		{"bad media type", partsBody("x", `[{"type":"file","media_type":"png","data":"eA=="}]`), 422, "invalid_parts"},
		{"extra field", partsBody("x", `[{"type":"file","media_type":"image/png","data":"eA==","text":"x"}]`), 422, "invalid_parts"},
		{"null part", partsBody("x", `[null]`), 422, "invalid_parts"},
		{"file too large", partsBody("x", `[`+file(big)+`]`), 413, "file_too_large"},
		{"files too large together", partsBody("x", `[`+file(half)+`,`+file(half)+`]`), 413, "message_too_large"},
		{"body too large", partsBody("x", `[{"type":"text","text":"`+strings.Repeat("a", 4096+200)+`"}]`), 413, "body_too_large"},
		{"empty", partsBody(" ", `[]`), 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, pm := partsFixture(t, false)
			conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
			code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", travellerKey, tc.body)
			if code != tc.status || out["error"] != tc.code {
				t.Fatalf("got %d %v, want %d %s", code, out, tc.status, tc.code)
			}
			if pm.prompt(0) != nil {
				t.Error("the model was called")
			}
			if msgs := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["messages"].([]any); len(msgs) != 0 {
				t.Errorf("stored %v", msgs)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestShowReasoningThroughPrivacy: with the agent's privacy guard, shown
// reasoning is tokenized like the rest of the view.
func TestShowReasoningThroughPrivacy(t *testing.T) {
	guard, err := privacy.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	const email = "ada.lovelace@example.com"
	model := scripted.New(scripted.Reply{
		Text:      "Booking it.",
		ToolCalls: []toolgate.ToolCall{{ID: "call_book", Name: "bookFlight", Arguments: `{"flight":"VX205"}`}},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "Book for " + email + ".", Provider: "anthropic", Signature: partsSignature},
			toolgate.TextPart{Text: "Booking it."},
			toolgate.ToolCallPart{Index: 0},
		},
	})
	f := newFixtureWith(t, nil, model, func(c *server.Config) {
		c.Agents["flights"].ShowReasoning = true
		c.Agents["flights"].Privacy = guard
	})
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"Book VX205."}`)
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	first := got["messages"].([]any)[1].(map[string]any)["parts"].([]any)[0].(map[string]any)
	text, _ := first["text"].(string)
	if first["type"] != "reasoning" || strings.Contains(text, email) || !strings.Contains(text, "[EMAIL_ADDRESS_") {
		t.Errorf("reasoning shown as %v, want it with the e-mail tokenized", first)
	}
	if raw := string(mustJSON(t, got)); strings.Contains(raw, partsSignature) || strings.Contains(raw, email) {
		t.Errorf("the view shows the signature or the e-mail: %s", raw)
	}
}

// TestStreamedMessageParts: a streamed turn takes the same parts and its
// events carry the text, never the reasoning or a signature.
func TestStreamedMessageParts(t *testing.T) {
	f, pm := partsFixture(t, true)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	s := serveInto(t, f.h, "POST", messagesPath(conv), travellerKey, partsBody("Book VX205.", `[`+pngPart()+`]`), "Accept", acceptEvents)
	if s.status != 200 {
		t.Fatalf("status %d", s.status)
	}
	text, last := turnEvents(t, s)
	if text != "Booking it." || last.Type != "paused" {
		t.Errorf("streamed %q then %q", text, last.Type)
	}
	for _, secret := range []string{partsReasoning, partsSignature, "call-signature"} {
		if strings.Contains(last.Data, secret) {
			t.Errorf("the outcome event shows %q: %s", secret, last.Data)
		}
	}
	user := pm.prompt(0).Messages[1].(*toolgate.UserMessage)
	if len(user.Parts) != 1 || !user.Parts[0].(toolgate.FilePart).IsImage() {
		t.Errorf("the model got %v", user.Parts)
	}

	// Refused parts are answered before the stream starts.
	code, out := f.do("POST", messagesPath(conv), travellerKey, partsBody("x", `[{"type":"reasoning","text":"x","provider":"anthropic"}]`))
	if code != 422 || out["error"] != "invalid_parts" {
		t.Errorf("refused parts: %d %v", code, out)
	}
}
