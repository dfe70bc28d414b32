package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/recording"
	"github.com/toolgate/toolgate/provider/openai"
)

// responsesAPI is a fake Responses API that answers with recorded replies,
// in order, and enforces what OpenAI documents for reasoning models when
// the caller manages the conversation (store false):
//
//   - Reasoning guide (https://platform.openai.com/docs/guides/reasoning,
//     "Keeping reasoning items in context"): "If the model calls multiple
//     functions consecutively, you should pass back all reasoning items,
//     function call items, and function call output items, since the last
//     user message."
//   - API reference, include parameter
//     (https://platform.openai.com/docs/api-reference/responses/create):
//     "reasoning.encrypted_content: Includes an encrypted version of
//     reasoning tokens in reasoning item outputs. This enables reasoning
//     items to be used in multi-turn conversations when using the Responses
//     API statelessly (like when the store parameter is set to false ...)."
//   - API reference, input parameter: "reasoning items must always be
//     immediately followed by their corresponding message item in the
//     input ... A reasoning item without its following message item will
//     result in a 400 error."
//   - API reference, phase of an assistant message: "when sending
//     follow-up requests, preserve and resend phase on all assistant
//     messages".
//
// It answers 400, with the messages the API gives, when a reasoning item
// is sent without encrypted content while store is false ("Item with id
// ... not found. Items are not persisted when `store` is set to false."),
// when a call item with its id comes without the reasoning item served
// before it ("Item ... of type 'function_call' was provided without its
// required 'reasoning' item"), and when a reasoning item is not followed by
// an item of its response. It is stricter than the API in three ways that
// follow the documentation rather than the API's checks: a served call
// replayed without its encrypted reasoning, a reasoning item replayed
// changed or out of order, and a phased message replayed without its phase
// are rejected too.
type responsesAPI struct {
	*fakeapi.Referee
	t *testing.T

	// guarded by the referee's lock (see [fakeapi.Rule])
	served map[string][]map[string]json.RawMessage // call_id: the output items of its response
}

func newResponsesAPI(t *testing.T, replies ...recording.Exchange) *responsesAPI {
	t.Helper()
	f := &responsesAPI{t: t, served: map[string][]map[string]json.RawMessage{}}
	refuse := func(reason string) fakeapi.Answer {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": reason, "type": "invalid_request_error", "param": "input", "code": nil}})
		return fakeapi.Answer{Status: http.StatusBadRequest, Body: string(b)}
	}
	f.Referee = fakeapi.NewReferee(t, f, refuse, &fakeapi.Options{NoAnswer: noReplyLeft}, replies...)
	return f
}

// model returns a Responses model talking to the fake.
func (f *responsesAPI) model(t *testing.T) *openai.Model {
	t.Helper()
	m, err := openai.New(&openai.Options{Model: "gpt-5", API: openai.Responses, BaseURL: f.URL + "/v1", HTTPClient: f.Client(), MaxRetries: openai.NoRetries})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Learn records the output items of a served response with function
// calls.
func (f *responsesAPI) Learn(e recording.Exchange) error {
	if e.Status == http.StatusOK {
		items := recordedOutput(f.t, e)
		for _, item := range items {
			if str(item["type"]) == "function_call" {
				f.served[str(item["call_id"])] = items
			}
		}
	}
	return nil
}

// str returns a JSON string's value, or "".
func str(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// Check applies the rules to a request body.
func (f *responsesAPI) Check(body []byte) error {
	var req struct {
		Store *bool                        `json:"store"`
		Input []map[string]json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("the request body is not JSON: %v", err)
	}
	stateless := req.Store != nil && !*req.Store
	last := map[string]bool{}
	for i, it := range req.Input {
		typ, id := str(it["type"]), str(it["id"])
		switch typ {
		case "reasoning":
			if stateless && str(it["encrypted_content"]) == "" {
				return fmt.Errorf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
			}
			if i+1 >= len(req.Input) {
				return fmt.Errorf("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
			next := req.Input[i+1]
			if nt := str(next["type"]); nt == "function_call_output" || str(next["role"]) == "user" || (nt == "" && str(next["role"]) == "") {
				return fmt.Errorf("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
		case "function_call":
			callID := str(it["call_id"])
			items, ok := f.served[callID]
			if !ok || last[callID] {
				continue
			}
			// Every served call of the response, and everything served
			// before its first call, must be in the input, in order,
			// before this call; reasoning items unchanged.
			want := servedReplay(items, stateless)
			got := inputFrom(req.Input, items)
			if diff := cmp.Diff(generic(want), generic(got)); diff != "" {
				if id != "" {
					for _, s := range items {
						if str(s["type"]) == "reasoning" && !containsID(req.Input, str(s["id"])) {
							return fmt.Errorf("Item '%s' of type 'function_call' was provided without its required 'reasoning' item: '%s'.", id, str(s["id"]))
						}
					}
				}
				return fmt.Errorf("the items of the response that made call %s are not passed back as served (-served +sent):\n%s", callID, diff)
			}
			for _, s := range items {
				if str(s["type"]) == "function_call" {
					last[str(s["call_id"])] = true
				}
			}
			// Outputs come after all calls of the response.
			seenOutput := false
			for _, in := range req.Input {
				switch str(in["type"]) {
				case "function_call_output":
					if _, ok := f.served[str(in["call_id"])]; ok {
						seenOutput = true
					}
				case "function_call":
					if seenOutput && sameResponse(f.served[str(in["call_id"])], items) {
						return fmt.Errorf("Item '%s' of type 'function_call' was provided without its required 'reasoning' item: the calls and outputs of one response are interleaved", str(in["id"]))
					}
				}
			}
		}
	}
	return nil
}

// servedReplay returns what the documentation asks to send back of a
// response's output items: all of them, in order; without encrypted
// content and with store false, reasoning items cannot go back, and the
// other items go without their ids.
func servedReplay(items []map[string]json.RawMessage, stateless bool) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	dropIDs := false
	for _, it := range items {
		if str(it["type"]) == "reasoning" && stateless && str(it["encrypted_content"]) == "" {
			dropIDs = true
		}
	}
	for _, it := range items {
		typ := str(it["type"])
		if typ == "reasoning" && dropIDs {
			continue
		}
		if typ == "message" || typ == "function_call" {
			c := map[string]json.RawMessage{}
			for k, v := range it {
				if dropIDs && (k == "id" || k == "status") {
					continue
				}
				c[k] = v
			}
			it = c
		}
		out = append(out, normalize(it))
	}
	return out
}

// inputFrom returns the input items that belong to a served response, in
// input order: its reasoning and messages by id, its calls by call id.
func inputFrom(input, items []map[string]json.RawMessage) []map[string]json.RawMessage {
	ids, calls := map[string]bool{}, map[string]bool{}
	texts := map[string]bool{}
	for _, it := range items {
		switch str(it["type"]) {
		case "function_call":
			calls[str(it["call_id"])] = true
		case "message":
			texts[messageText(it)] = true
			ids[str(it["id"])] = true
		default:
			ids[str(it["id"])] = true
		}
	}
	var out []map[string]json.RawMessage
	for _, in := range input {
		typ := str(in["type"])
		switch {
		case typ == "function_call" && calls[str(in["call_id"])],
			typ != "function_call" && typ != "function_call_output" && str(in["id"]) != "" && ids[str(in["id"])],
			str(in["role"]) == "assistant" && str(in["id"]) == "" && texts[messageText(in)]:
			out = append(out, normalize(in))
		}
	}
	return out
}

// normalize gives an item the form it is compared in: an easy assistant
// message ({"role","content":"..."}) as the message item it stands for.
func normalize(it map[string]json.RawMessage) map[string]json.RawMessage {
	if str(it["role"]) != "assistant" {
		return it
	}
	out := map[string]json.RawMessage{"type": json.RawMessage(`"message"`), "text": mustRaw(messageText(it))}
	for _, k := range []string{"id", "status", "phase"} {
		if v, ok := it[k]; ok && string(v) != "null" {
			out[k] = v
		}
	}
	return out
}

// generic returns v decoded into maps, slices and strings, to compare JSON
// by value.
func generic(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func mustRaw(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

// messageText returns the text of a message item or easy message.
func messageText(it map[string]json.RawMessage) string {
	if s := str(it["content"]); s != "" {
		return s
	}
	var parts []struct{ Text string }
	json.Unmarshal(it["content"], &parts)
	var t string
	for _, p := range parts {
		t += p.Text
	}
	return t
}

func containsID(input []map[string]json.RawMessage, id string) bool {
	for _, in := range input {
		if str(in["id"]) == id {
			return true
		}
	}
	return false
}

func sameResponse(a, b []map[string]json.RawMessage) bool {
	return len(a) > 0 && len(b) > 0 && str(a[0]["id"]) == str(b[0]["id"])
}

// TestResponsesAPIEnforcesRule checks the fake itself with the recorded
// first exchange and a follow-up built from its output: the output items
// passed back whole are accepted; reasoning left out, changed, without
// encrypted content, or last is rejected.
func TestResponsesAPIEnforcesRule(t *testing.T) {
	for _, name := range []string{"responses_reasoning_tool", "responses_reasoning_tool_stream"} {
		t.Run(name, func(t *testing.T) {
			rec := recording.Load(t, name)
			items := recordedOutput(t, rec[0])
			follow := func(mutate func([]map[string]json.RawMessage) []map[string]json.RawMessage) []byte {
				var req map[string]json.RawMessage
				if err := json.Unmarshal(rec[0].Request, &req); err != nil {
					t.Fatal(err)
				}
				var input []map[string]json.RawMessage
				json.Unmarshal(req["input"], &input)
				out := append([]map[string]json.RawMessage(nil), items...)
				for _, it := range items {
					if str(it["type"]) == "function_call" {
						out = append(out, map[string]json.RawMessage{"type": mustRaw("function_call_output"), "call_id": it["call_id"], "output": mustRaw("40 C")})
					}
				}
				if mutate != nil {
					out = mutate(out)
				}
				req["input"] = compactJSON(t, append(input, out...))
				delete(req, "stream")
				return compactJSON(t, req)
			}
			without := func(typ string) func([]map[string]json.RawMessage) []map[string]json.RawMessage {
				return func(in []map[string]json.RawMessage) []map[string]json.RawMessage {
					var out []map[string]json.RawMessage
					for _, it := range in {
						if str(it["type"]) != typ {
							out = append(out, it)
						}
					}
					return out
				}
			}
			setReasoning := func(key string, v json.RawMessage) func([]map[string]json.RawMessage) []map[string]json.RawMessage {
				return func(in []map[string]json.RawMessage) []map[string]json.RawMessage {
					for i, it := range in {
						if str(it["type"]) == "reasoning" {
							c := map[string]json.RawMessage{}
							for k, v := range it {
								c[k] = v
							}
							if v == nil {
								delete(c, key)
							} else {
								c[key] = v
							}
							in[i] = c
						}
					}
					return in
				}
			}
			for _, tt := range []struct {
				what   string
				mutate func([]map[string]json.RawMessage) []map[string]json.RawMessage
				want   int
			}{
				{"output items passed back", nil, http.StatusOK},
				{"reasoning left out", without("reasoning"), http.StatusBadRequest},
				{"reasoning without encrypted content", setReasoning("encrypted_content", nil), http.StatusBadRequest},
				{"reasoning changed", setReasoning("encrypted_content", mustRaw("gAAAAA-other")), http.StatusBadRequest},
				{"reasoning last", func(in []map[string]json.RawMessage) []map[string]json.RawMessage {
					return append(without("reasoning")(in), in[0])
				}, http.StatusBadRequest},
			} {
				t.Run(tt.what, func(t *testing.T) {
					f := newResponsesAPI(t, rec[0])
					recording.Post(t, f.URL+"/v1/responses", rec[0].Request, http.StatusOK)
					f.AddReplies(recording.Exchange{Status: 200, Response: []byte(`{"id":"resp_x","status":"completed","output":[]}`)})
					recording.Post(t, f.URL+"/v1/responses", follow(tt.mutate), tt.want)
				})
			}
		})
	}
}
