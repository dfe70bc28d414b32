package fakeapi

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// Generate answers p with m: one call, or with stream a stream collected
// into a response.
func Generate(ctx context.Context, m toolgate.Model, p *toolgate.Prompt, stream bool) (*toolgate.Response, error) {
	if stream {
		return toolgate.Collect(m.Stream(ctx, p))
	}
	return m.Generate(ctx, p)
}

// Call runs a turn through c, with stream as a stream collected into a
// response.
func Call(ctx context.Context, c *toolgate.Client, p *toolgate.CallParams, stream bool) (*toolgate.Response, error) {
	if stream {
		return toolgate.Collect(c.Stream(ctx, p))
	}
	return c.Call(ctx, p)
}

// Resume resumes a paused turn through c, with stream as a stream
// collected into a response.
func Resume(ctx context.Context, c *toolgate.Client, p *toolgate.ResumeTurnParams, stream bool) (*toolgate.Response, error) {
	if stream {
		return toolgate.Collect(c.ResumeStream(ctx, p))
	}
	return c.Resume(ctx, p)
}

// SameRequest checks that sent, a request body an adapter sent, is the
// JSON of recorded, a request recorded against the real API: all of it,
// or with keys only those top-level fields. what names the request in the
// report.
func SameRequest(tb testing.TB, what string, recorded, sent []byte, keys ...string) {
	tb.Helper()
	var want, got map[string]any
	if err := json.Unmarshal(recorded, &want); err != nil {
		tb.Fatalf("the recorded %s: %v", what, err)
	}
	if err := json.Unmarshal(sent, &got); err != nil {
		tb.Fatalf("the %s sent: %v", what, err)
	}
	if len(keys) == 0 {
		if diff := cmp.Diff(want, got); diff != "" {
			tb.Errorf("%s differs from the recorded one (-recorded +adapter):\n%s", what, diff)
		}
		return
	}
	for _, k := range keys {
		if diff := cmp.Diff(want[k], got[k]); diff != "" {
			tb.Errorf("%s: %s differs from the recorded one (-recorded +adapter):\n%s", what, k, diff)
		}
	}
}

// RecordedReply returns the message an adapter makes of the first reply
// of the recording at path, a complete JSON answer: a server answers with
// it, model returns the adapter's model for the server's base URL, and
// the model answers a one-line prompt. It lets one adapter's tests start
// from a reply as another adapter reads it.
func RecordedReply(t *testing.T, path string, model func(baseURL string) (toolgate.Model, error)) *toolgate.AssistantMessage {
	t.Helper()
	f, err := recording.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	s := New(t, nil, JSON(string(f.Exchanges[0].Response)))
	m, err := model(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Message()
}
