package server_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

// failingModel fails every call with err once the model it wraps has
// answered after replies.
type failingModel struct {
	toolgate.Model
	after int
	err   error
	calls int
}

func (m *failingModel) Generate(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	m.calls++
	if m.calls > m.after {
		return nil, m.err
	}
	return m.Model.Generate(ctx, p)
}

func (m *failingModel) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	m.calls++
	if m.calls > m.after {
		return func(yield func(*toolgate.Chunk, error) bool) { yield(nil, m.err) }
	}
	return m.Model.Stream(ctx, p)
}

// TestModelErrorIs502: a failure of the model provider answers 502 with
// the error's kind, on a posted message, on a decision's resumed turn and
// in a streamed turn, never 500 "internal", and says nothing of the
// provider's own message.
func TestModelErrorIs502(t *testing.T) {
	for _, tc := range []struct {
		kind   provider.ErrorKind
		status int
	}{{provider.KindRateLimit, 429}, {provider.KindAuth, 401}, {provider.KindBadRequest, 400}, {provider.KindServer, 503}, {provider.KindOther, 0}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			merr := &provider.Error{Provider: "openai", Kind: tc.kind, StatusCode: tc.status, Message: "org-secret-id quota", Err: fmt.Errorf("sdk error")}
			want := func(where string, code int, out map[string]any) {
				t.Helper()
				if code != 502 || out["error"] != "model_error" || out["kind"] != string(tc.kind) {
					t.Errorf("%s: %d %v, want 502 model_error with kind %s", where, code, out, tc.kind)
				}
				if strings.Contains(fmt.Sprint(out), "org-secret-id") {
					t.Errorf("%s: the answer shows the provider's message: %v", where, out)
				}
			}

			f := newFixtureWith(t, memory.New(), &failingModel{Model: scripted.New(), err: merr}, nil)
			conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
			code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"hello"}`)
			want("message", code, out)

			// The pause's resumed turn fails at its model call.
			f = newFixtureWith(t, memory.New(), &failingModel{Model: flightdemo.Model(), after: 1, err: merr}, nil)
			conv, pause := f.paused()
			code, out = f.do("POST", decisionsPath(conv, pause), approverKey, `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
			want("decision", code, out)
		})
	}
}

// TestModelErrorStreamed: in a streamed turn, a model failure before the
// first chunk is a 502, and after it an "error" event with the kind.
func TestModelErrorStreamed(t *testing.T) {
	merr := &provider.Error{Provider: "anthropic", Kind: provider.KindRateLimit, StatusCode: 429}
	f := newFixtureWith(t, memory.New(), &failingModel{Model: scripted.New(), err: merr}, nil)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	rec := f.postStreamed(conv, `{"input":"hello"}`)
	body := rec.Body.String()
	if !strings.Contains(body, `"error":"model_error"`) || !strings.Contains(body, `"kind":"rate_limit"`) {
		t.Errorf("streamed turn: %d %s, want model_error with kind rate_limit", rec.Code, body)
	}
	if rec.Code != 200 && rec.Code != 502 {
		t.Errorf("status %d, want 502 (or 200 with an error event)", rec.Code)
	}
}
