package gemini

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// signatureAPI is a fake Gemini API that answers with recorded replies, in
// order, and enforces the rule the Gemini API documents for Gemini 3
// models (Gemini API documentation, "Thought signatures"): in the current
// turn (the contents after the last user text), the first functionCall
// part of every model step must carry the thoughtSignature the model
// returned with it, or the request fails with 400 INVALID_ARGUMENT; in
// parallel calls only the first call has a signature. The same page
// documents the value "skip_thought_signature_validator" for calls whose
// signature is not known (for example calls made by another model).
//
// The fake learns the signatures of the calls it serves (complete or
// streamed) and rejects a request when, in the current turn, a step's
// first functionCall part has no signature, or one that is not the
// signature served with that call. The bypass value passes only when
// bypass is set, as the API accepts it; toolgate's own rule is stricter:
// a call that came from this model goes back with its real signature, so
// tests leave bypass off.
//
// A replay through the client is a few lines: serve the recording's
// replies, give the model (see [signatureAPI.model]) the recording's tools,
// run the turn and check f.Rejected().
type signatureAPI struct {
	*fakeapi.Referee

	// guarded by the referee's lock (see [fakeapi.Rule])
	bypass bool
	served map[string]string // call key: the signature served with it
}

func newSignatureAPI(t *testing.T, replies ...recording.Exchange) *signatureAPI {
	t.Helper()
	f := &signatureAPI{served: map[string]string{}}
	refuse := func(reason string) fakeapi.Answer {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "message": reason, "status": "INVALID_ARGUMENT"}})
		return fakeapi.Answer{Status: http.StatusBadRequest, Body: string(b)}
	}
	f.Referee = fakeapi.NewReferee(t, f, refuse,
		&fakeapi.Options{NoAnswer: `{"error":{"code":418,"message":"no reply left in the test","status":"UNAVAILABLE"}}`}, replies...)
	return f
}

// model returns a model talking to the fake.
func (f *signatureAPI) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(&Options{APIKey: "k", BaseURL: f.URL, Model: "gemini-3-pro-preview"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// part is a content part as the fake reads it.
type part struct {
	Text         *string `json:"text,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse json.RawMessage `json:"functionResponse,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
}

type content struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

// callKey names a call: by its id, or by name and arguments.
func callKey(p *part) string {
	if p.FunctionCall.ID != "" {
		return "id:" + p.FunctionCall.ID
	}
	var args any
	json.Unmarshal(p.FunctionCall.Args, &args)
	b, _ := json.Marshal(args) // sorted keys
	return p.FunctionCall.Name + ":" + string(b)
}

// Learn records the signatures of the calls of a served reply.
func (f *signatureAPI) Learn(e recording.Exchange) error {
	if e.Status != http.StatusOK {
		return nil
	}
	bodies := [][]byte{e.Response}
	if e.Stream {
		bodies = nil
		sc := bufio.NewScanner(bytes.NewReader(e.Response))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				bodies = append(bodies, []byte(data))
			}
		}
	}
	for _, b := range bodies {
		var r struct{ Candidates []struct{ Content content } }
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		for _, c := range r.Candidates {
			for i := range c.Content.Parts {
				if p := &c.Content.Parts[i]; p.FunctionCall != nil {
					f.served[callKey(p)] = p.ThoughtSignature
				}
			}
		}
	}
	return nil
}

// Check applies the rule to a request body.
func (f *signatureAPI) Check(body []byte) error {
	var req struct{ Contents []content }
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("the request body is not JSON: %v", err)
	}
	start := 0 // the current turn begins after the last user text
	for i, c := range req.Contents {
		if c.Role != "user" {
			continue
		}
		for _, p := range c.Parts {
			if p.Text != nil {
				start = i + 1
			}
		}
	}
	for i := start; i < len(req.Contents); i++ {
		c := req.Contents[i]
		if c.Role != "model" {
			continue
		}
		for j := range c.Parts {
			p := &c.Parts[j]
			if p.FunctionCall == nil {
				continue
			}
			switch sig := p.ThoughtSignature; {
			case sig == "":
				return fmt.Errorf("Function call is missing a thought_signature in functionCall parts (contents[%d].parts[%d])", i, j)
			case sig == string(skipSignature) || sig == base64.StdEncoding.EncodeToString(skipSignature):
				// The documented value, as written in JSON or as the SDKs
				// send it when it is set on their bytes field.
				if !f.bypass {
					return fmt.Errorf("contents[%d].parts[%d]: the call was sent back with the bypass signature instead of its own", i, j)
				}
			case sig != f.served[callKey(p)]:
				return fmt.Errorf("Corrupted thought signature (contents[%d].parts[%d])", i, j)
			}
			break // only a step's first call is checked
		}
	}
	return nil
}

// TestSignatureAPIEnforcesRule checks the fake itself: after serving a
// recorded reply with two parallel calls (the first signed), it accepts
// the recorded follow-up request, and rejects it with the signature left
// out, changed, or replaced by the bypass value; the bypass value passes
// when the fake is told to accept it, as the API does.
func TestSignatureAPIEnforcesRule(t *testing.T) {
	for _, name := range []string{"parallel_calls", "parallel_calls_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			for _, tt := range []struct {
				what   string
				mutate func(p map[string]any)
				bypass bool
				want   int
			}{
				{"accepted unchanged", nil, false, http.StatusOK},
				{"signature left out", func(p map[string]any) { delete(p, "thoughtSignature") }, false, http.StatusBadRequest},
				{"signature changed", func(p map[string]any) { p["thoughtSignature"] = "AAAA" + p["thoughtSignature"].(string)[4:] }, false, http.StatusBadRequest},
				{"bypass value", func(p map[string]any) { p["thoughtSignature"] = string(skipSignature) }, false, http.StatusBadRequest},
				{"bypass value accepted", func(p map[string]any) { p["thoughtSignature"] = string(skipSignature) }, true, http.StatusOK},
			} {
				t.Run(tt.what, func(t *testing.T) {
					f := newSignatureAPI(t, rec...)
					f.bypass = tt.bypass
					recording.Post(t, f.URL+"/v1beta/models/gemini-3-pro-preview:generateContent", rec[0].Request, http.StatusOK)
					body := rec[1].Request
					if tt.mutate != nil {
						body = mutateFirstCall(t, body, tt.mutate)
					}
					recording.Post(t, f.URL+"/v1beta/models/gemini-3-pro-preview:generateContent", body, tt.want)
				})
			}
		})
	}
}

// TestSignatureAPIPastTurns: calls of earlier turns are not checked.
func TestSignatureAPIPastTurns(t *testing.T) {
	rec := recording.Load(t, "parallel_calls")
	f := newSignatureAPI(t, rec...)
	recording.Post(t, f.URL+"/v1beta/models/gemini-3-pro-preview:generateContent", rec[0].Request, http.StatusOK)
	var req map[string]any
	if err := json.Unmarshal(mutateFirstCall(t, rec[1].Request, func(p map[string]any) { delete(p, "thoughtSignature") }), &req); err != nil {
		t.Fatal(err)
	}
	req["contents"] = append(req["contents"].([]any), map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Thanks."}}})
	body, _ := json.Marshal(req)
	recording.Post(t, f.URL+"/v1beta/models/gemini-3-pro-preview:generateContent", body, http.StatusOK)
}

// mutateFirstCall applies mutate to the first functionCall part of a
// request body.
func mutateFirstCall(t *testing.T, body []byte, mutate func(map[string]any)) []byte {
	t.Helper()
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, c := range req["contents"].([]any) {
		for _, p := range c.(map[string]any)["parts"].([]any) {
			if p := p.(map[string]any); p["functionCall"] != nil {
				mutate(p)
				out, _ := json.Marshal(req)
				return out
			}
		}
	}
	t.Fatal("no functionCall part")
	return nil
}

// TestRecordedParallelCalls reads the recorded replies with two parallel
// calls, complete and streamed: the calls in order with their ids, the
// first with the signature the recorded follow-up sends back, the thinking
// tokens in the usage, and the same stored form either way.
func TestRecordedParallelCalls(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ids      [2]string
		in, out  int64
		thoughts int64
	}{
		{"parallel_calls", [2]string{"wxvlv0tv", "75p2opbh"}, 299, 32, 495},
		{"parallel_calls_stream", [2]string{"8hd01vsf", "k0srpqrc"}, 157, 32, 438},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.Load(t, tt.name)
			f := newFakeAPI(t, fakeapi.Recorded(rec[0]))
			m := f.model(t)
			got, err := fakeapi.Generate(t.Context(), m, hi, rec[0].Stream)
			if err != nil {
				t.Fatal(err)
			}
			var next struct {
				Contents []struct {
					Parts []struct{ ThoughtSignature string }
				}
			}
			if err := json.Unmarshal(rec[1].Request, &next); err != nil {
				t.Fatal(err)
			}
			want := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{
				{ID: tt.ids[0], Name: "add", Arguments: `{"a":2,"b":3}`},
				{ID: tt.ids[1], Name: "multiply", Arguments: `{"a":2,"b":3}`},
			}, Parts: toolgate.Parts{
				toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: next.Contents[1].Parts[0].ThoughtSignature},
				toolgate.ToolCallPart{Index: 1},
			}}
			if diff := cmp.Diff(want, got.Message()); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			wantUsage := toolgate.Usage{InputTokens: tt.in, OutputTokens: tt.out + tt.thoughts, ReasoningTokens: tt.thoughts}
			if got.FinishReason() != toolgate.FinishToolCalls || got.Usage != wantUsage || got.Model != "gemini-3.1-pro-preview" {
				t.Errorf("got finish %s, usage %+v, model %s; want tool_calls, %+v, gemini-3.1-pro-preview", got.FinishReason(), got.Usage, got.Model, wantUsage)
			}
		})
	}
}

// TestSignatureAPIThroughAdapter runs the recorded first round through the
// adapter: the contents, system instruction and generation settings the
// adapter sends for the recorded prompt are the recorded ones, and the
// fake serves them. (The second round needs the signatures kept in the
// conversation; see signatureAPI.)
func TestSignatureAPIThroughAdapter(t *testing.T) {
	for _, name := range []string{"parallel_calls", "parallel_calls_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			var want map[string]any
			if err := json.Unmarshal(rec[0].Request, &want); err != nil {
				t.Fatal(err)
			}
			system := want["systemInstruction"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
			prompt := &toolgate.Prompt{
				Messages: []toolgate.Message{
					&toolgate.SystemMessage{Text: system},
					&toolgate.UserMessage{Text: "Add and multiply the number 2 and 3"},
				},
				Tools:   []*toolgate.Tool{fakeapi.NumberTool("add", "Add two numbers", "5", false), fakeapi.NumberTool("multiply", "Multiply two numbers", "5", false)},
				Options: &toolgate.ModelOptions{MaxOutputTokens: 4000, ToolChoice: "auto"},
			}
			f := newSignatureAPI(t, rec...)
			m := f.model(t)
			resp, err := fakeapi.Generate(t.Context(), m, prompt, rec[0].Stream)
			if err != nil {
				t.Fatal(err)
			}
			f.CheckAccepted(t)
			if calls := resp.Message().ToolCalls; len(calls) != 2 {
				t.Errorf("got calls %+v, want the two recorded calls", calls)
			}
			fakeapi.SameRequest(t, "request", rec[0].Request, f.Body(0), "contents", "systemInstruction", "generationConfig", "toolConfig")
		})
	}
}
