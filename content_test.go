package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
)

// reasoningReply is a paused-to-be reply of a reasoning model: signed
// reasoning, text and a gated call, in that order.
func reasoningReply() scripted.Reply {
	return scripted.Reply{
		Text:      "I will book it.",
		ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx)},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "The user asked for VX205. Booking needs approval.", Provider: "anthropic", Signature: "sig-1"},
			toolgate.TextPart{Text: "I will book it."},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "call-sig"},
		},
	}
}

func marshal(t *testing.T, m toolgate.Message) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestClientRefusesDisagreeingReply(t *testing.T) {
	ctx := context.Background()
	bad := map[string]scripted.Reply{
		"text differs": {Text: "I will book it.", ToolCalls: []toolgate.ToolCall{call("b1", "flightStatus", vx)},
			Parts: toolgate.Parts{toolgate.TextPart{Text: "I will book VX206."}, toolgate.ToolCallPart{Index: 0}}},
		"call missing": {Text: "ok", ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx), call("s2", "flightStatus", vx)},
			Parts: toolgate.Parts{toolgate.TextPart{Text: "ok"}, toolgate.ToolCallPart{Index: 0}}},
		"calls out of order": {ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx), call("s2", "flightStatus", vx)},
			Parts: toolgate.Parts{toolgate.ToolCallPart{Index: 1}, toolgate.ToolCallPart{Index: 0}}},
		"part with no call": {Text: "done",
			Parts: toolgate.Parts{toolgate.TextPart{Text: "done"}, toolgate.ToolCallPart{Index: 0}}},
		"reasoning without provider": {Text: "done",
			Parts: toolgate.Parts{toolgate.ReasoningPart{Text: "hmm"}, toolgate.TextPart{Text: "done"}}},
	}
	for name, r := range bad {
		for _, stream := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/call", true: "/stream"}[stream], func(t *testing.T) {
				var ft flightTools
				c := toolgate.NewClient(scripted.New(r), ft.tools(), nil)
				p := &toolgate.CallParams{ConversationID: "c", Input: "status?"}
				var err error
				if stream {
					_, err = toolgate.Collect(c.Stream(ctx, p))
				} else {
					_, err = c.Call(ctx, p)
				}
				if !errors.Is(err, toolgate.ErrInvalidMessage) {
					t.Fatalf("got error %v, want one wrapping ErrInvalidMessage", err)
				}
				if ft.status.Load() != 0 || ft.book.Load() != 0 {
					t.Error("a call of the refused reply ran")
				}
				if conv := load(t, c.Store(), "c"); len(conv.Messages) != 0 {
					t.Errorf("stored %d messages of a refused turn", len(conv.Messages))
				}
			})
		}
	}
}

func TestClientStreamReasoningAndPausedParts(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	r := reasoningReply()
	model := scripted.New(r, scripted.Reply{Text: "Booked."})
	c := toolgate.NewClient(model, ft.tools(), nil)
	var reasoning, text strings.Builder
	var last *toolgate.Chunk
	for ch, err := range c.Stream(ctx, &toolgate.CallParams{ConversationID: "s", Input: "book VX205"}) {
		if err != nil {
			t.Fatal(err)
		}
		reasoning.WriteString(ch.Reasoning)
		text.WriteString(ch.Text)
		last = ch
	}
	if got, want := reasoning.String(), r.Parts[0].(toolgate.ReasoningPart).Text; got != want {
		t.Errorf("reasoning deltas %q, want %q", got, want)
	}
	if text.String() != r.Text {
		t.Errorf("text %q, want %q", text.String(), r.Text)
	}
	if diff := cmp.Diff(r.Parts, last.Parts); diff != "" {
		t.Errorf("the paused last chunk's parts (-want +got):\n%s", diff)
	}
	want := &toolgate.AssistantMessage{Text: r.Text, ToolCalls: r.ToolCalls, Parts: r.Parts}
	conv := load(t, c.Store(), "s")
	if got := marshal(t, conv.Messages[conv.Pause.Index]); got != marshal(t, want) {
		t.Errorf("stored paused reply %s, want %s", got, marshal(t, want))
	}

	// Collect of a paused client stream gives the paused reply, as Call.
	model2 := scripted.New(r)
	c2 := toolgate.NewClient(model2, ft.tools(), nil)
	resp, err := toolgate.Collect(c2.Stream(ctx, &toolgate.CallParams{ConversationID: "s", Input: "book VX205"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := marshal(t, resp.Message()); got != marshal(t, want) {
		t.Errorf("collected paused stream %s, want %s", got, marshal(t, want))
	}
	called, err := toolgate.NewClient(scripted.New(r), ft.tools(), nil).Call(ctx, &toolgate.CallParams{Input: "book VX205"})
	if err != nil {
		t.Fatal(err)
	}
	if got := marshal(t, called.Message()); got != marshal(t, want) {
		t.Errorf("paused Call %s, want %s", got, marshal(t, want))
	}
}

// TestClientCollectPausedAfterRound: a paused client stream whose turn ran a
// round first still collects to the paused reply with its parts.
func TestClientCollectPausedAfterRound(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(scripted.Reply{Text: "Checking first.", ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}}, reasoningReply())
	c := toolgate.NewClient(model, ft.tools(), nil)
	resp, err := toolgate.Collect(c.Stream(ctx, &toolgate.CallParams{Input: "book VX205"}))
	if err != nil {
		t.Fatal(err)
	}
	r := reasoningReply()
	if !resp.Paused() || resp.Text() != r.Text || !cmp.Equal(resp.Message().Parts, r.Parts) {
		t.Errorf("collected %+v, want the paused reply with its parts", resp.Message())
	}
}

// replyRecorder allows every call and records the replies it is
// asked about, as their JSON form.
type replyRecorder struct{ replies []string }

func (a *replyRecorder) CheckPrompt(context.Context, []*toolgate.Tool, *toolgate.Prompt) error {
	return nil
}
func (a *replyRecorder) CheckReply(_ context.Context, _ *toolgate.Prompt, reply *toolgate.AssistantMessage) ([]toolgate.ToolResult, error) {
	b, err := json.Marshal(reply)
	if err != nil {
		return nil, err
	}
	a.replies = append(a.replies, string(b))
	return nil, nil
}

// TestClientRecheckKeepsParts: the recheck of the allowed calls on
// resumption judges a reply whose parts agree with the calls it holds.
func TestClientRecheckKeepsParts(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	tools := ft.tools()
	r := scripted.Reply{
		Text:      "Both.",
		ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx), call("b2", "bookFlight", `{"flight":"VX206"}`)},
		Parts: toolgate.Parts{
			toolgate.ReasoningPart{Text: "two bookings", Provider: "anthropic", Signature: "s"},
			toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "first"},
			toolgate.TextPart{Text: "Both."},
			toolgate.ToolCallPart{Index: 1, Provider: "gemini", Signature: "second"},
		},
	}
	authz := &replyRecorder{}
	c := toolgate.NewClient(scripted.New(r, scripted.Reply{Text: "Done."}), tools, &toolgate.ClientOptions{Authorize: toolsAuthorizer{authz, tools}.Begin})
	resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "r", Input: "book both"})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v, %+v", err, resp)
	}
	authz.replies = nil
	_, err = c.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "r", PauseID: resp.PauseID,
		Decisions: []toolgate.Decision{toolgate.Deny("b1", ""), toolgate.Allow("b2")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(authz.replies) == 0 {
		t.Fatal("the allowed calls were not rechecked")
	}
	recheck := authz.replies[0]
	if _, err := toolgate.UnmarshalMessage([]byte(recheck)); err != nil {
		t.Fatalf("the rechecked reply is not valid: %v\n%s", err, recheck)
	}
	want := marshal(t, &toolgate.AssistantMessage{Text: "Both.", ToolCalls: r.ToolCalls[1:], Parts: toolgate.Parts{
		toolgate.ReasoningPart{Text: "two bookings", Provider: "anthropic", Signature: "s"},
		toolgate.TextPart{Text: "Both."},
		toolgate.ToolCallPart{Index: 0, Provider: "gemini", Signature: "second"},
	}})
	if recheck != want {
		t.Errorf("rechecked reply\n got %s\nwant %s", recheck, want)
	}
}

// toolsAuthorizer offers tools and delegates the checks.
type toolsAuthorizer struct {
	*replyRecorder
	tools []*toolgate.Tool
}

func (a toolsAuthorizer) Begin(context.Context, *toolgate.BeginParams) (toolgate.Authorizer, error) {
	return a, nil
}
func (a toolsAuthorizer) Tools(context.Context) ([]*toolgate.Tool, error) { return a.tools, nil }

func TestClientInputParts(t *testing.T) {
	ctx := context.Background()
	png := toolgate.FilePart{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n0123"), Name: "boarding-pass.png"}
	t.Run("stored and sent", func(t *testing.T) {
		model := scripted.New(scripted.Reply{Text: "A boarding pass."})
		c := toolgate.NewClient(model, nil, nil)
		parts := toolgate.Parts{png, toolgate.TextPart{Text: "What is this?"}}
		if _, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "i", Input: "Look:", Parts: parts}); err != nil {
			t.Fatal(err)
		}
		parts[0] = toolgate.TextPart{Text: "changed by the caller afterwards"}
		want := &toolgate.UserMessage{Text: "Look:", Parts: toolgate.Parts{png, toolgate.TextPart{Text: "What is this?"}}}
		if got := marshal(t, model.Prompts()[0].Messages[0]); got != marshal(t, want) {
			t.Errorf("sent %s, want %s", got, marshal(t, want))
		}
		if got := marshal(t, load(t, c.Store(), "i").Messages[0]); got != marshal(t, want) {
			t.Errorf("stored %s, want %s", got, marshal(t, want))
		}
	})
	bad := []struct {
		name  string
		parts toolgate.Parts
		limit int
		check func(error) bool
	}{
		{"file too large", toolgate.Parts{toolgate.TextPart{Text: "x"}, png}, 8, func(err error) bool {
			var fe *toolgate.FileTooLargeError
			return errors.As(err, &fe) && fe.Part == 1 && fe.Size == len(png.Data) && fe.Limit == 8
		}},
		{"reasoning", toolgate.Parts{toolgate.ReasoningPart{Text: "x", Provider: "anthropic"}}, 0, isInvalid},
		{"tool call", toolgate.Parts{toolgate.ToolCallPart{Index: 0}}, 0, isInvalid},
		{"signed text", toolgate.Parts{toolgate.TextPart{Text: "x", Provider: "gemini", Signature: "s"}}, 0, isInvalid},
		{"nil part", toolgate.Parts{nil}, 0, isInvalid},
		{"file without data", toolgate.Parts{toolgate.FilePart{MediaType: "image/png"}}, 0, isInvalid},
		{"file with a file URL", toolgate.Parts{toolgate.FilePart{MediaType: "image/png", URL: "file:///etc/passwd"}}, 0, isInvalid},
		{"bad media type", toolgate.Parts{toolgate.FilePart{MediaType: "png", Data: []byte("x")}}, 0, isInvalid},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			model := scripted.New(scripted.Reply{Text: "no"})
			c := toolgate.NewClient(model, nil, &toolgate.ClientOptions{MaxFileSize: tt.limit})
			_, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "b", Input: "hi", Parts: tt.parts})
			if !tt.check(err) {
				t.Fatalf("got error %v", err)
			}
			if len(model.Prompts()) != 0 || len(load(t, c.Store(), "b").Messages) != 0 {
				t.Error("a refused input reached the model or the store")
			}
		})
	}
	t.Run("no limit", func(t *testing.T) {
		c := toolgate.NewClient(scripted.New(scripted.Reply{Text: "ok"}), nil, &toolgate.ClientOptions{MaxFileSize: -1})
		big := toolgate.FilePart{MediaType: "application/pdf", Data: make([]byte, 20<<20+1)}
		if _, err := c.Call(ctx, &toolgate.CallParams{Input: "hi", Parts: toolgate.Parts{big}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("default limit", func(t *testing.T) {
		c := toolgate.NewClient(scripted.New(scripted.Reply{Text: "ok"}), nil, nil)
		big := toolgate.FilePart{MediaType: "application/pdf", Data: make([]byte, 20<<20+1)}
		var fe *toolgate.FileTooLargeError
		if _, err := c.Call(ctx, &toolgate.CallParams{Input: "hi", Parts: toolgate.Parts{big}}); !errors.As(err, &fe) {
			t.Fatalf("got %v, want a *FileTooLargeError", err)
		}
	})
}

func isInvalid(err error) bool { return errors.Is(err, toolgate.ErrInvalidMessage) }

// TestRecoverKeepsParts: a recovered pause continues with the paused reply
// sent back with its parts as the model gave them, with and without
// StoreEveryRound.
func TestRecoverKeepsParts(t *testing.T) {
	for _, everyRound := range []bool{false, true} {
		g := newGatedTools()
		store := memory.New()
		r := abcReply()
		r.Parts = toolgate.Parts{
			toolgate.ReasoningPart{Text: "a, b and c", Provider: "openai.responses", Opaque: json.RawMessage(`{"id":"rs_1","encrypted_content":"gAAA"}`)},
			toolgate.ToolCallPart{Index: 0}, toolgate.ToolCallPart{Index: 1}, toolgate.ToolCallPart{Index: 2, Provider: "gemini", Signature: "c"},
		}
		want := marshal(t, &toolgate.AssistantMessage{ToolCalls: r.ToolCalls, Parts: r.Parts})
		model := scripted.New(r, scripted.Reply{Text: "Here is what happened."})
		c := toolgate.NewClient(model, g.tools(), &toolgate.ClientOptions{Store: store, StoreEveryRound: everyRound})
		pause := pauseABC(t, c, "conv")
		deadClaim(t, store, "conv", pause, time.Now().Add(-time.Hour), allowABDenyC(), "ca")
		if _, err := c.RecoverPause(t.Context(), &toolgate.RecoverParams{ConversationID: "conv", PauseID: pause.ID, Lease: time.Minute}); err != nil {
			t.Fatalf("RecoverPause: %v", err)
		}
		prompts := model.Prompts()
		if len(prompts) != 2 {
			t.Fatalf("the model was called %d times, want 2", len(prompts))
		}
		if got := marshal(t, prompts[1].Messages[1]); got != want {
			t.Errorf("every round %v: the recovered turn sent\n %s\nwant %s", everyRound, got, want)
		}
		if got := marshal(t, load(t, store, "conv").Messages[1]); got != want {
			t.Errorf("every round %v: stored %s, want %s", everyRound, got, want)
		}
	}
}
