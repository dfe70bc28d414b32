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

// PauseAndResume runs the turn the adapters' resume tests share, through
// a client of m, as calls or with stream as streams. The model's first
// reply, which the test's server gives, has the text "I will ship both."
// and three calls: ship {"box":1} and ship {"box":2}, with no id of their
// own or the same id, and get_weather {"city":"Oslo"} with the id
// weatherID. ship needs a person's decision ([RawTool]); get_weather is
// [WeatherTool]. The turn must pause on the ship calls, as "#0" and "#1";
// it resumes allowing "#0", denying "#1" with "Box 2 stays." and allowing
// weatherID, and must end with the second reply's text, "Shipped box 1.".
// The client's system prompt is "Be careful.". The test then checks the
// second request, which the adapter built from the stored turn.
func PauseAndResume(t testing.TB, m toolgate.Model, stream bool, weatherID string) {
	t.Helper()
	gated := RawTool("ship", toolgate.ToolMetadata{RequiresConfirmation: true})
	client := toolgate.NewClient(m, []*toolgate.Tool{gated, WeatherTool()}, &toolgate.ClientOptions{SystemPrompt: "Be careful."})
	ctx := t.Context()
	resp, err := Call(ctx, client, &toolgate.CallParams{ConversationID: "c1", Input: "Ship both boxes."}, stream)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"#0", "#1"}, resp.Awaiting); diff != "" {
		t.Fatalf("awaiting (-want +got):\n%s", diff)
	}
	rp := &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "c1", Decisions: []toolgate.Decision{
		toolgate.Allow("#0"), toolgate.Deny("#1", "Box 2 stays."), toolgate.Allow(weatherID),
	}}
	resp, err = Resume(ctx, client, rp, stream)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Shipped box 1." {
		t.Errorf("final text %q", resp.Text())
	}
}

// Collect collects chunks, as a stream would yield them, into a response.
func Collect(chunks []*toolgate.Chunk) (*toolgate.Response, error) {
	return toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
		for _, ch := range chunks {
			if !yield(ch, nil) {
				return
			}
		}
	})
}

// CheckStored fails tb unless reply, a reply an adapter read from its
// API, marshals as a stored message and reads back.
func CheckStored(tb testing.TB, reply *toolgate.AssistantMessage) {
	tb.Helper()
	b, err := json.Marshal(reply)
	if err != nil {
		tb.Fatalf("the reply does not marshal: %v", err)
	}
	if _, err := toolgate.UnmarshalMessage(b); err != nil {
		tb.Fatalf("the stored reply does not read back: %v\n%s", err, b)
	}
}
