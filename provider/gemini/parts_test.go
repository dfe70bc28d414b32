package gemini

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/store/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
)

// replayCase is a recorded turn replayed through a client.
type replayCase struct {
	name    string // the recording
	tools   func() []*toolgate.Tool
	input   string
	options *toolgate.ModelOptions
	parts   []string // the kinds of the paused reply's parts: "thought", "signed call", "call"
}

var replayCases = []replayCase{
	{"parallel_calls", fakeapi.Arithmetic, "Add and multiply the number 2 and 3", &toolgate.ModelOptions{MaxOutputTokens: 4000, ToolChoice: "auto"}, []string{"signed call", "call"}},
	{"parallel_calls_stream", fakeapi.Arithmetic, "Add and multiply the number 2 and 3", &toolgate.ModelOptions{MaxOutputTokens: 4000, ToolChoice: "auto"}, []string{"signed call", "call"}},
	{"thinking_tool", fakeapi.ConfirmedWeather, "What's the weather in Florence, Italy?", &toolgate.ModelOptions{ToolChoice: "auto"}, []string{"thought", "signed call"}},
	{"thinking_tool_stream", fakeapi.ConfirmedWeather, "What's the weather in Florence, Italy?", &toolgate.ModelOptions{ToolChoice: "auto"}, []string{"signed call"}},
}

// openClient returns a client for the case on the SQLite database at path,
// with the system prompt of the recorded request req.
func (c *replayCase) openClient(t *testing.T, m toolgate.Model, path string, req []byte) *toolgate.Client {
	t.Helper()
	var recorded struct {
		SystemInstruction struct{ Parts []struct{ Text string } }
	}
	if err := json.Unmarshal(req, &recorded); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return toolgate.NewClient(m, c.tools(), &toolgate.ClientOptions{
		Store:        store,
		SystemPrompt: recorded.SystemInstruction.Parts[0].Text,
		ModelOptions: c.options,
	})
}

// partKind names a part for replayCase.parts.
func partKind(p toolgate.Part) string {
	switch p := p.(type) {
	case toolgate.ReasoningPart:
		if p.Provider == "gemini" && p.Text != "" && p.Signature == "" {
			return "thought"
		}
	case toolgate.ToolCallPart:
		if p.Provider == "gemini" && p.Signature != "" {
			return "signed call"
		}
		if p.Provider == "" && p.Signature == "" {
			return "call"
		}
	}
	return fmt.Sprintf("%#v", p)
}

// TestSignaturePauseResume replays recorded turns of a thinking model
// (Gemini 3), complete and streamed, through a client that pauses on the
// call that needs confirmation, keeps the conversation in SQLite, and
// resumes it from a new client on the reopened database: two parallel
// calls, the first signed, and one signed call after a thought summary.
//
// The rule the resumed request must follow (Gemini API documentation,
// "Thought signatures", https://ai.google.dev/gemini-api/docs/thought-signatures):
// "When using Gemini 3 models, you must pass back thought signatures during
// function calling, otherwise you will get a validation error (4xx status
// code)"; in parallel function calls only the first functionCall part
// carries the signature, and the parts must come back in their order. The
// fake API answers 400 when the first call's signature is missing, changed
// or replaced by the bypass value, and the calls the adapter sends on
// resume must be the ones recorded against the real API, part for part.
func TestSignaturePauseResume(t *testing.T) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) {
			rec := recording.Load(t, c.name)
			f := newSignatureAPI(t, rec...)
			path := filepath.Join(t.TempDir(), "toolgate.db")
			stream := rec[0].Stream

			first := c.openClient(t, f.model(t), path, rec[0].Request)
			resp, err := fakeapi.Call(t.Context(), first, &toolgate.CallParams{ConversationID: "c", Input: c.input}, stream)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Paused() {
				t.Fatalf("the turn did not pause: %+v", resp)
			}

			second := c.openClient(t, f.model(t), path, rec[0].Request) // a new client on the reopened store
			conv, err := second.Store().Load(t.Context(), "c")
			if err != nil {
				t.Fatal(err)
			}
			reply := conv.Messages[len(conv.Messages)-1].(*toolgate.AssistantMessage)
			var kinds []string
			for _, p := range reply.Parts {
				kinds = append(kinds, partKind(p))
			}
			if diff := cmp.Diff(c.parts, kinds); diff != "" {
				t.Fatalf("stored reply parts (-want +got):\n%s", diff)
			}
			var decisions []toolgate.Decision
			for _, call := range reply.ToolCalls {
				decisions = append(decisions, toolgate.Allow(call.ID))
			}
			params := &toolgate.ResumeTurnParams{ConversationID: "c", PauseID: toolgatetest.OpenPauseID(t, second, "c"), Decisions: decisions}
			resp, err = fakeapi.Resume(t.Context(), second, params, stream)
			if err != nil {
				t.Fatalf("resume: %v (rejected: %q)", err, f.Rejected())
			}
			f.CheckAccepted(t)
			if resp.Text() == "" {
				t.Errorf("resumed turn ended without the recorded answer: %+v", resp)
			}
			sent := f.Body(1)
			// The calls go back as recorded, thought summaries (which the
			// recording's client left out) before them. (The recording's
			// client sent results as {"result": ...}; toolgate sends
			// {"output": ...}, so the results are not compared.)
			type content struct{ Parts []map[string]any }
			var got, want struct{ Contents []content }
			if err := json.Unmarshal(sent, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rec[1].Request, &want); err != nil {
				t.Fatal(err)
			}
			if len(got.Contents) != 3 {
				t.Fatalf("resumed request has %d contents, want user, model, results", len(got.Contents))
			}
			var calls, thoughts []map[string]any
			for _, p := range got.Contents[1].Parts {
				if p["thought"] == true {
					thoughts = append(thoughts, p)
				} else {
					calls = append(calls, p)
				}
			}
			if diff := cmp.Diff(want.Contents[1].Parts, calls); diff != "" {
				t.Errorf("calls differ from the recorded ones (-recorded +adapter):\n%s", diff)
			}
			for i, p := range thoughts {
				r := reply.Parts[i].(toolgate.ReasoningPart)
				if p["text"] != r.Text || len(p) != 2 {
					t.Errorf("thought part %d: got %v, want the stored thought", i, p)
				}
			}
			if len(thoughts) > 0 && got.Contents[1].Parts[0]["thought"] != true {
				t.Errorf("the thought does not come first: %v", got.Contents[1].Parts)
			}
		})
	}
}

// responseAsStream splits a complete response into the responses a stream
// of it may bring: each text or thought in two fragments with its
// signature on a third fragment without text, each call whole, and the
// finish reason and usage on the last response.
func responseAsStream(t testing.TB, body string) []string {
	t.Helper()
	var r struct {
		Candidates []struct {
			Content      struct{ Parts []map[string]any }
			FinishReason string
		}
		UsageMetadata map[string]any
		ModelVersion  string
		ResponseID    string
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	var out []string
	emit := func(part map[string]any) {
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}}},
			"modelVersion": r.ModelVersion, "responseId": r.ResponseID})
		out = append(out, string(b))
	}
	for _, p := range r.Candidates[0].Content.Parts {
		text, isText := p["text"].(string)
		if !isText {
			emit(p)
			continue
		}
		half := len(text) / 2
		for _, frag := range []string{text[:half], text[half:]} {
			q := map[string]any{"text": frag}
			if p["thought"] != nil {
				q["thought"] = p["thought"]
			}
			emit(q)
		}
		if sig := p["thoughtSignature"]; sig != nil {
			q := map[string]any{"text": "", "thoughtSignature": sig}
			if p["thought"] != nil {
				q["thought"] = p["thought"]
			}
			emit(q)
		}
	}
	last, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": ""}}}, "finishReason": r.Candidates[0].FinishReason}},
		"usageMetadata": r.UsageMetadata, "modelVersion": r.ModelVersion, "responseId": r.ResponseID})
	return append(out, string(last))
}

// TestStreamedAndGeneratedAlike: a reply gives the same message whether it
// came whole or streamed in fragments (the signature of a text on a last
// fragment without text, as the API streams it): the recorded replies
// (signed calls, signed text) and one with a signed thought before text
// and a call.
func TestStreamedAndGeneratedAlike(t *testing.T) {
	rec := recording.Load(t, "parallel_calls")
	bodies := map[string]string{
		"recorded parallel calls":            string(rec[0].Response),
		"recorded signed answer":             string(rec[1].Response),
		"recorded thought and signed call":   string(recording.Load(t, "thinking_tool")[0].Response),
		"recorded thought and signed answer": string(recording.Load(t, "thinking_tool")[1].Response),
		"signed thought": `{"candidates":[{"content":{"role":"model","parts":[
			{"text":"Two numbers, so both tools.","thought":true,"thoughtSignature":"dGhvdWdodA=="},
			{"text":"Adding them."},
			{"functionCall":{"name":"add","args":{"a":2,"b":3}}}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7,"thoughtsTokenCount":3}}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t, jsonAnswer(body), sseAnswer(responseAsStream(t, body)...))
			m := f.model(t)
			whole, err := m.Generate(t.Context(), hi)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := toolgate.Collect(m.Stream(t.Context(), hi))
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.Message().Parts) == 0 {
				t.Errorf("the reply has no parts: %+v", whole.Message())
			}
			if diff := cmp.Diff(whole, streamed); diff != "" {
				t.Errorf("streamed reply differs from the complete one (-complete +streamed):\n%s", diff)
			}
		})
	}

	// The recorded streamed answer sends its signature on a last fragment
	// without text: it belongs to the text before it.
	rec = recording.Load(t, "parallel_calls_stream")
	f := newFakeAPI(t, answer{Header: map[string]string{"Content-Type": "text/event-stream"}, Body: string(rec[1].Response)})
	got, err := toolgate.Collect(f.model(t).Stream(t.Context(), hi))
	if err != nil {
		t.Fatal(err)
	}
	parts := got.Message().Parts
	if p, ok := parts[0].(toolgate.TextPart); len(parts) != 1 || !ok || p.Text != got.Text() || p.Signature == "" || p.Provider != "gemini" {
		t.Errorf("recorded stream: parts %+v, want one signed text part with the whole text", parts)
	}
}

// TestThinkingOptionsThroughAdapter: with thought summaries and a thinking
// level set, the adapter sends the recorded thinking turns' requests: the
// contents, system instruction, generation settings (thinkingConfig) and
// tool config are the recorded ones, field for field.
func TestThinkingOptionsThroughAdapter(t *testing.T) {
	for _, name := range []string{"thinking_tool", "thinking_tool_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			f := newSignatureAPI(t, rec...)
			m, err := New(&Options{APIKey: "k", BaseURL: f.URL, Model: "gemini-3-pro-preview", IncludeThoughts: true, ThinkingLevel: "high"})
			if err != nil {
				t.Fatal(err)
			}
			prompt := &toolgate.Prompt{
				Messages: []toolgate.Message{
					&toolgate.SystemMessage{Text: "You are a helpful assistant"},
					&toolgate.UserMessage{Text: "What's the weather in Florence, Italy?"},
				},
				Tools:   fakeapi.ConfirmedWeather(),
				Options: &toolgate.ModelOptions{ToolChoice: "auto"},
			}
			_, err = fakeapi.Generate(t.Context(), m, prompt, rec[0].Stream)
			if err != nil {
				t.Fatal(err)
			}
			fakeapi.SameRequest(t, "request", rec[0].Request, f.Body(0), "contents", "systemInstruction", "generationConfig", "toolConfig")
		})
	}
	if _, err := New(&Options{APIKey: "k", Model: "m", ThinkingLevel: "extreme"}); err == nil {
		t.Error("New accepted an unknown thinking level")
	}
}
