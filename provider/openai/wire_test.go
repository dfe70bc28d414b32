package openai_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/openai"
)

// TestResponsesStoreOff: by default a Responses request asks OpenAI not to
// keep the response (store false) and to return the reasoning encrypted
// (include reasoning.encrypted_content), as the API reference describes
// for callers that send the whole conversation each time ("Conversation
// state" and "Reasoning" guides); [openai.Options.StoreResponses] turns
// both off.
func TestResponsesStoreOff(t *testing.T) {
	for _, store := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			s := newServer(t)
			m, err := openai.New(&openai.Options{Model: "gpt-test", BaseURL: s.URL + "/v1", HTTPClient: s.Client(),
				MaxRetries: openai.NoRetries, API: openai.Responses, StoreResponses: store})
			if err != nil {
				t.Fatal(err)
			}
			if stream {
				s.add(sseReply(endClean, evCreated, evText("ok"), evCompleted))
				_, err = toolgate.Collect(m.Stream(t.Context(), hiPrompt))
			} else {
				s.add(jsonReply(200, response("completed", "ok")))
				_, err = m.Generate(t.Context(), hiPrompt)
			}
			if err != nil {
				t.Fatal(err)
			}
			body := s.body(0)
			if store {
				if body["store"] != true || body["include"] != nil {
					t.Errorf("StoreResponses, stream=%v: store %v, include %v; want true and none", stream, body["store"], body["include"])
				}
				continue
			}
			if body["store"] != false {
				t.Errorf("stream=%v: store %v, want false", stream, body["store"])
			}
			if diff := cmp.Diff([]any{"reasoning.encrypted_content"}, body["include"]); diff != "" {
				t.Errorf("stream=%v: include (-want +got):\n%s", stream, diff)
			}
		}
	}
}

var hiPrompt = &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}}}

// TestRefusalFinish: a refusal (the chat message's refusal field, the
// Responses API's refusal content part, as the API reference documents
// them; no recording was found) is its own finish reason, streamed or not.
func TestRefusalFinish(t *testing.T) {
	refusal := "I can't help with that."
	chatChunk := `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","refusal":` + mustJSON(refusal) + `}}]}`
	chatEnd := `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	respJSON := mustJSON(responseObject("completed", []any{map[string]any{
		"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "refusal", "refusal": refusal}},
	}}))
	evRefusal := responsesEvent("response.refusal.delta", `"output_index":0,"item_id":"msg_1","content_index":0,"delta":`+mustJSON(refusal))
	for _, tt := range []struct {
		name   string
		api    openai.API
		stream bool
		r      reply
	}{
		{"chat", openai.ChatCompletions, false, jsonReply(200, `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":`+mustJSON(refusal)+`}}]}`)},
		{"chat stream", openai.ChatCompletions, true, sseReply(endDone, chatChunk, chatEnd)},
		{"responses", openai.Responses, false, jsonReply(200, respJSON)},
		{"responses stream", openai.Responses, true, sseReply(endClean, evCreated, evRefusal, evCompleted)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.r)
			m := s.model(tt.api)
			resp, err := fakeapi.Generate(t.Context(), m, hiPrompt, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason() != toolgate.FinishRefusal || resp.Text() != refusal {
				t.Errorf("got %q %q, want refusal with its explanation", resp.FinishReason(), resp.Text())
			}
		})
	}
}

// TestRetryAfterSurfaced: the wait a 429 asks for is in the provider.Error.
func TestRetryAfterSurfaced(t *testing.T) {
	for _, api := range []openai.API{openai.ChatCompletions, openai.Responses} {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "12")
			apiError(429, "Rate limit reached.")(w, r)
		})
		_, err := s.model(api).Generate(t.Context(), hiPrompt)
		var me *provider.Error
		if !errors.As(err, &me) || me.RetryAfter != 12*time.Second {
			t.Errorf("%s: got %#v, want a provider.Error with RetryAfter 12s", api, err)
		}
	}
}
