package toolgate_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

// flightTools returns flightStatus (ungated) and bookFlight (gated), each
// counting its runs.
type flightTools struct {
	status, book atomic.Int32
	principals   chan *toolgate.Principal
}

type flightArgs struct {
	Flight string `json:"flight" jsonschema:"the flight number, such as VX205"`
}

func (f *flightTools) tools() []*toolgate.Tool {
	status := toolgate.NewToolFor("flightStatus", "Get the status of a flight",
		func(_ context.Context, req *toolgate.ToolRequest, in flightArgs) (string, error) {
			f.status.Add(1)
			if f.principals != nil {
				f.principals <- req.Principal
			}
			return "Flight " + in.Flight + " is on time", nil
		}, nil)
	book := toolgate.NewToolFor("bookFlight", "Book a flight",
		func(_ context.Context, _ *toolgate.ToolRequest, in flightArgs) (string, error) {
			f.book.Add(1)
			return "Booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})
	return []*toolgate.Tool{status, book}
}

func call(id, name, args string) toolgate.ToolCall {
	return toolgate.ToolCall{ID: id, Name: name, Arguments: args}
}

const vx = `{"flight":"VX205"}`

// validHistory reports whether every tool call of msgs has exactly one
// result in the tool message that follows its reply, as providers require.
func validHistory(msgs []toolgate.Message) error {
	for i, m := range msgs {
		reply, ok := m.(*toolgate.AssistantMessage)
		if !ok || !reply.HasToolCalls() {
			continue
		}
		if i+1 >= len(msgs) {
			return fmt.Errorf("message %d: reply with tool calls has no results", i)
		}
		tm, ok := msgs[i+1].(*toolgate.ToolMessage)
		if !ok {
			return fmt.Errorf("message %d: reply followed by %T, want tool message", i, msgs[i+1])
		}
		if len(tm.Results) != len(reply.ToolCalls) {
			return fmt.Errorf("message %d: %d calls, %d results", i, len(reply.ToolCalls), len(tm.Results))
		}
		for j, r := range tm.Results {
			if c := reply.ToolCalls[j]; r.CallID != c.ID || r.Name != c.Name {
				return fmt.Errorf("message %d: result %d answers %s/%s, want %s/%s", i, j, r.CallID, r.Name, c.ID, c.Name)
			}
		}
	}
	return nil
}

func load(t *testing.T, s toolgate.ConversationStore, id string) *toolgate.Conversation {
	t.Helper()
	conv, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	return conv
}

func roles(msgs []toolgate.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(m.Role()))
	}
	return b.String()
}

// TestClientStoreEveryRound runs a turn that calls an ungated tool, then
// pauses on a gated one, and checks what the resumed request carries.
func TestClientStoreEveryRound(t *testing.T) {
	for _, tc := range []struct {
		name       string
		everyRound bool
		// roles of the prompt the model receives after the resumption
		wantResumed string
		// roles stored at the pause
		wantStoredAtPause string
	}{
		{"outside", false, "system user assistant tool", "user assistant"},
		{"inside", true, "system user assistant tool assistant tool", "user assistant tool assistant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var ft flightTools
			model := scripted.New(
				scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}},
				scripted.Reply{Text: "It is on time; booking.", ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx)}},
				scripted.Reply{Text: "Booked VX205 for you."},
			)
			store := memory.New()
			c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{Store: store, StoreEveryRound: tc.everyRound, SystemPrompt: "You book flights."})
			resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "c1", Input: "Book VX205 if it is on time"})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Paused() || !cmp.Equal(resp.Awaiting, []string{"b1"}) {
				t.Fatalf("got paused=%v awaiting=%v, want paused on [b1]", resp.Paused(), resp.Awaiting)
			}
			if stored, _ := store.Load(ctx, "c1"); stored.Pause == nil || resp.PauseID != stored.Pause.ID {
				t.Errorf("PauseID = %q, want the stored pause's id %+v", resp.PauseID, stored.Pause)
			}
			if resp.FinishReason() != toolgate.FinishToolCalls || resp.Message().ToolCalls[0].Name != "bookFlight" {
				t.Errorf("got finish %q reply %+v, want the paused bookFlight reply", resp.FinishReason(), resp.Message())
			}
			if ft.status.Load() != 1 || ft.book.Load() != 0 {
				t.Fatalf("runs: status %d book %d, want 1 0", ft.status.Load(), ft.book.Load())
			}
			if resp.Usage.InputTokens == 0 {
				t.Error("paused response has no usage")
			}
			conv := load(t, store, "c1")
			if got := roles(conv.Messages); got != tc.wantStoredAtPause {
				t.Errorf("stored at pause: %q, want %q", got, tc.wantStoredAtPause)
			}
			if conv.Pause == nil || conv.Pause.Index != len(conv.Messages)-1 {
				t.Fatalf("stored pause %+v, want one on the last message", conv.Pause)
			}

			resp, err = c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "c1", Decisions: []toolgate.Decision{toolgate.Allow("b1")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Paused() || resp.Text() != "Booked VX205 for you." {
				t.Errorf("after resume: paused=%v text=%q", resp.Paused(), resp.Text())
			}
			if ft.status.Load() != 1 || ft.book.Load() != 1 {
				t.Errorf("runs: status %d book %d, want 1 1", ft.status.Load(), ft.book.Load())
			}
			prompts := model.Prompts()
			if len(prompts) != 3 {
				t.Fatalf("model called %d times, want 3", len(prompts))
			}
			if got := roles(prompts[2].Messages); got != tc.wantResumed {
				t.Errorf("resumed request: %q, want %q", got, tc.wantResumed)
			}
			conv = load(t, store, "c1")
			if conv.Pause != nil {
				t.Errorf("pause still stored: %+v", conv.Pause)
			}
			if err := validHistory(conv.Messages); err != nil {
				t.Errorf("stored history invalid: %v", err)
			}
			if last := conv.Messages[len(conv.Messages)-1]; last.(*toolgate.AssistantMessage).Text != "Booked VX205 for you." {
				t.Errorf("last stored message %+v, want the final answer", last)
			}
		})
	}
}

func TestClientSecondPause(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx)}},
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b2", "bookFlight", `{"flight":"VX206"}`)}},
		scripted.Reply{Text: "Both booked."},
	)
	c := toolgate.NewClient(model, ft.tools(), nil)
	resp, err := c.Call(ctx, &toolgate.CallParams{Input: "book two"})
	if err != nil || !resp.Paused() {
		t.Fatalf("Call: %v paused=%v", err, resp.Paused())
	}
	id := resp.ConversationID
	if id == "" {
		t.Fatal("no conversation id assigned")
	}
	resp, err = c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: id, Decisions: []toolgate.Decision{toolgate.Allow("b1")}})
	if err != nil || !cmp.Equal(resp.Awaiting, []string{"b2"}) {
		t.Fatalf("first resume: %v awaiting=%v, want a second pause on b2", err, resp.Awaiting)
	}
	resp, err = c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: id, Decisions: []toolgate.Decision{toolgate.Deny("b2", "One is enough.")}})
	if err != nil || resp.Text() != "Both booked." {
		t.Fatalf("second resume: %v text=%q", err, resp.Text())
	}
	if ft.book.Load() != 1 {
		t.Errorf("book ran %d times, want 1", ft.book.Load())
	}
	conv := load(t, c.Store(), id)
	tm := conv.Messages[len(conv.Messages)-2].(*toolgate.ToolMessage)
	if r := tm.Results[0]; r.Status != toolgate.ResultDenied || r.Content != "One is enough." {
		t.Errorf("denied result %+v", r)
	}
}

// TestClientResumeNamedPause checks that decisions naming a pause are not
// applied to a later pause whose calls have the same keys.
func TestClientResumeNamedPause(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b", "bookFlight", vx)}},
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b", "bookFlight", `{"flight":"VX206"}`)}},
		scripted.Reply{Text: "done"},
	)
	c := toolgate.NewClient(model, ft.tools(), nil)
	if resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "n", Input: "book two"}); err != nil || !resp.Paused() {
		t.Fatalf("Call: %v", err)
	}
	first := load(t, c.Store(), "n").Pause.ID
	p := &toolgate.ResumeTurnParams{ConversationID: "n", PauseID: first, Decisions: []toolgate.Decision{toolgate.Allow("b")}}
	if resp, err := c.Resume(ctx, p); err != nil || !resp.Paused() {
		t.Fatalf("first resume: %v, want a second pause", err)
	}
	if _, err := c.Resume(ctx, p); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("resume naming the first pause again: %v, want ErrNoOpenPause", err)
	}
	if got := ft.book.Load(); got != 1 {
		t.Errorf("book ran %d times, want 1", got)
	}
	if conv := load(t, c.Store(), "n"); conv.Pause == nil || conv.Pause.Claimed {
		t.Errorf("the second pause was claimed: %+v", conv.Pause)
	}
}

func TestClientResumeOnce(t *testing.T) {
	ctx := context.Background()
	t.Run("sequential", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx)}}, scripted.Reply{Text: "done"})
		c := toolgate.NewClient(model, ft.tools(), nil)
		resp, _ := c.Call(ctx, &toolgate.CallParams{ConversationID: "r", Input: "book"})
		if !resp.Paused() {
			t.Fatal("not paused")
		}
		p := &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "r", Decisions: []toolgate.Decision{toolgate.Allow("b1")}}
		if _, err := c.Resume(ctx, p); err != nil {
			t.Fatal(err)
		}
		_, err := c.Resume(ctx, p)
		if !errors.Is(err, toolgate.ErrNoOpenPause) {
			t.Errorf("second resume: %v, want ErrNoOpenPause", err)
		}
		if ft.book.Load() != 1 {
			t.Errorf("book ran %d times, want 1", ft.book.Load())
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx)}}, scripted.Reply{Text: "done"})
		c := toolgate.NewClient(model, ft.tools(), nil)
		if resp, _ := c.Call(ctx, &toolgate.CallParams{ConversationID: "r", Input: "book"}); !resp.Paused() {
			t.Fatal("not paused")
		}
		const n = 8
		var wg sync.WaitGroup
		var ok, refused atomic.Int32
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				_, err := c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, c, "r"), ConversationID: "r", Decisions: []toolgate.Decision{toolgate.Allow("b1")}})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, toolgate.ErrNoOpenPause):
					refused.Add(1)
				default:
					t.Errorf("resume: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 || refused.Load() != n-1 || ft.book.Load() != 1 {
			t.Errorf("ok %d refused %d book runs %d, want 1 %d 1", ok.Load(), refused.Load(), ft.book.Load(), n-1)
		}
	})
}

func TestClientOpenPauseRefusesInput(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx), call("b1", "bookFlight", vx)}},
		scripted.Reply{Text: "Sure, what else?"},
	)
	c := toolgate.NewClient(model, ft.tools(), nil)
	if resp, _ := c.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "book"}); !resp.Paused() {
		t.Fatal("not paused")
	}
	_, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "never mind"})
	if !errors.Is(err, toolgate.ErrPauseOpen) {
		t.Fatalf("new input on open pause: %v, want ErrPauseOpen", err)
	}
	if err := c.DenyOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p", PauseID: "pause_other"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("deny naming another pause: %v, want ErrNoOpenPause", err)
	}
	if err := c.DenyOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p", Message: "The user moved on."}); err != nil {
		t.Fatal(err)
	}
	if err := c.DenyOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("second DenyOpenPause: %v, want ErrNoOpenPause", err)
	}
	resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "never mind"})
	if err != nil || resp.Text() != "Sure, what else?" {
		t.Fatalf("after deny-all: %v %q", err, resp.Text())
	}
	if ft.status.Load() != 0 || ft.book.Load() != 0 {
		t.Errorf("tools ran: status %d book %d", ft.status.Load(), ft.book.Load())
	}
	// The request the model got is valid for a provider.
	prompts := model.Prompts()
	if err := validHistory(prompts[1].Messages); err != nil {
		t.Errorf("provider-facing history invalid: %v", err)
	}
	if got, want := roles(prompts[1].Messages), "user assistant tool user"; got != want {
		t.Errorf("history %q, want %q", got, want)
	}
	tm := prompts[1].Messages[2].(*toolgate.ToolMessage)
	for _, r := range tm.Results {
		if r.Status != toolgate.ResultDenied || r.Content != "The user moved on." {
			t.Errorf("result %+v, want denied with the message", r)
		}
	}
}

func TestClientExpireOpenPause(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx), call("b1", "bookFlight", vx)}},
		scripted.Reply{Text: "Sure, what else?"},
	)
	store := memory.New()
	c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{Store: store})
	if resp, _ := c.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "book"}); !resp.Paused() {
		t.Fatal("not paused")
	}
	conv, err := store.Load(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	pauseID := conv.Pause.ID

	// Another pause id is not the open pause, and nothing is claimed.
	if err := c.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p", PauseID: "pause_other"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("expire of an unknown pause: %v, want ErrNoOpenPause", err)
	}
	if err := c.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "nobody"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("expire in a conversation without a pause: %v, want ErrNoOpenPause", err)
	}
	if err := c.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p", PauseID: pauseID}); err != nil {
		t.Fatalf("ExpireOpenPause: %v", err)
	}
	if n := len(model.Prompts()); n != 1 {
		t.Errorf("the model was called %d times, want once (expiry calls no model)", n)
	}
	// Expired once: a second expiry and a late resumption find no open pause.
	if err := c.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p", PauseID: pauseID}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("second ExpireOpenPause: %v, want ErrNoOpenPause", err)
	}
	_, err = c.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "p", PauseID: pauseID,
		Decisions: []toolgate.Decision{toolgate.Allow("s1"), toolgate.Allow("b1")}})
	if !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("resume after expiry: %v, want ErrNoOpenPause", err)
	}

	stored, err := store.Load(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Pause != nil {
		t.Errorf("pause after expiry: %+v, want none", stored.Pause)
	}
	want := &toolgate.ToolMessage{Results: []toolgate.ToolResult{
		{CallID: "s1", Name: "flightStatus", Content: toolgate.ExpiredMessage, Status: toolgate.ResultExpired},
		{CallID: "b1", Name: "bookFlight", Content: toolgate.ExpiredMessage, Status: toolgate.ResultExpired},
	}}
	if diff := cmp.Diff(toolgate.Message(want), stored.Messages[len(stored.Messages)-1]); diff != "" {
		t.Errorf("stored results (-want +got):\n%s", diff)
	}

	// New input is accepted, and the model's request holds the expired
	// results in a history valid for providers.
	resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "never mind"})
	if err != nil || resp.Text() != "Sure, what else?" {
		t.Fatalf("after expiry: %v %q", err, resp.Text())
	}
	if ft.status.Load() != 0 || ft.book.Load() != 0 {
		t.Errorf("tools ran: status %d book %d", ft.status.Load(), ft.book.Load())
	}
	prompts := model.Prompts()
	if err := validHistory(prompts[1].Messages); err != nil {
		t.Errorf("provider-facing history invalid: %v", err)
	}
	if got, want := roles(prompts[1].Messages), "user assistant tool user"; got != want {
		t.Errorf("history %q, want %q", got, want)
	}
	if diff := cmp.Diff(toolgate.Message(want), prompts[1].Messages[2]); diff != "" {
		t.Errorf("results the model read (-want +got):\n%s", diff)
	}
}

func TestClientExpireClaimedPause(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx)}})
	store := memory.New()
	c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{Store: store})
	if resp, _ := c.Call(ctx, &toolgate.CallParams{ConversationID: "p", Input: "book"}); !resp.Paused() {
		t.Fatal("not paused")
	}
	conv, err := store.Load(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	// A resumption claimed the pause and is running its calls.
	if err := store.ClaimPause(ctx, "p", conv.Pause.ID, &toolgate.Claim{Token: "other"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ExpireOpenPause(ctx, &toolgate.ClosePauseParams{ConversationID: "p", PauseID: conv.Pause.ID}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("expire of a claimed pause: %v, want ErrNoOpenPause", err)
	}
	after, err := store.Load(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Messages) != len(conv.Messages) || after.Pause == nil || !after.Pause.Claimed {
		t.Errorf("the claimed pause changed: %d messages, pause %+v", len(after.Messages), after.Pause)
	}
}

func TestClientResumeErrors(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx), call("b1", "bookFlight", vx)}}, scripted.Reply{Text: "ok"})
	c := toolgate.NewClient(model, ft.tools(), nil)

	if _, err := c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, c, "none"), ConversationID: "none"}); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("resume unknown conversation: %v, want ErrNoOpenPause", err)
	}
	if _, err := c.Resume(ctx, nil); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("resume nil params: %v, want ErrNoOpenPause", err)
	}
	if resp, _ := c.Call(ctx, &toolgate.CallParams{ConversationID: "e", Input: "x"}); !resp.Paused() {
		t.Fatal("not paused")
	}
	bad := [][]toolgate.Decision{
		nil,
		{toolgate.Allow("b1")},
		{toolgate.Allow("b1"), toolgate.Allow("s1"), toolgate.Allow("zz")},
		{toolgate.Allow("b1"), toolgate.Allow("b1"), toolgate.Allow("s1")},
		{{Key: "b1"}, toolgate.Allow("s1")},
	}
	for i, ds := range bad {
		_, err := c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, c, "e"), ConversationID: "e", Decisions: ds})
		if !errors.Is(err, toolgate.ErrInvalidDecisions) {
			t.Errorf("case %d: %v, want ErrInvalidDecisions", i, err)
		}
	}
	// The pause id is required: valid decisions without it run nothing.
	valid := []toolgate.Decision{toolgate.Allow("s1"), toolgate.Deny("b1", "")}
	if _, err := c.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "e", Decisions: valid}); !errors.Is(err, toolgate.ErrNoOpenPause) || !strings.Contains(err.Error(), "PauseID is empty") {
		t.Errorf("resume without a pause id: %v, want ErrNoOpenPause naming the empty PauseID", err)
	}
	if ft.status.Load()+ft.book.Load() != 0 {
		t.Fatal("a tool ran on invalid decisions")
	}
	// The pause is still open: valid decisions work.
	if _, err := c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, c, "e"), ConversationID: "e", Decisions: []toolgate.Decision{toolgate.Allow("s1"), toolgate.Deny("b1", "")}}); err != nil {
		t.Fatalf("valid resume after invalid ones: %v", err)
	}
	if ft.status.Load() != 1 || ft.book.Load() != 0 {
		t.Errorf("runs status %d book %d, want 1 0", ft.status.Load(), ft.book.Load())
	}
}

func TestClientLimits(t *testing.T) {
	ctx := context.Background()
	t.Run("tool limit", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(
			scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}},
			scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s2", "flightStatus", vx), call("s3", "flightStatus", vx)}},
		)
		c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{MaxCalls: 2})
		resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "l", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason() != toolgate.FinishToolLimit || resp.Metadata["limit"] == "" {
			t.Errorf("finish %q metadata %v, want tool_limit with a reason", resp.FinishReason(), resp.Metadata)
		}
		if ft.status.Load() != 1 {
			t.Errorf("status ran %d times, want 1", ft.status.Load())
		}
		if len(resp.Results) != 3 || resp.Results[0].Status != toolgate.ResultOK || resp.Results[2].Status != toolgate.ResultSkipped {
			t.Errorf("results %+v, want one ok and two skipped", resp.Results)
		}
		conv := load(t, c.Store(), "l")
		if err := validHistory(conv.Messages); err != nil {
			t.Error(err)
		}
	})
	t.Run("resumption over the limit", func(t *testing.T) {
		// bookFlight needs a decision: the pause counts no call; allowing
		// both calls of the paused reply would pass the limit, so the
		// resumption is refused before anything runs.
		var ft flightTools
		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("b1", "bookFlight", vx), call("b2", "bookFlight", vx)}})
		c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{MaxCallsPerTool: map[string]int{"bookFlight": 1}})
		resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "rl", Input: "go"})
		if err != nil || !resp.Paused() {
			t.Fatalf("Call: %v, paused %v; want a pause", err, resp.Paused())
		}
		_, err = c.Resume(ctx, &toolgate.ResumeTurnParams{ConversationID: "rl", PauseID: resp.PauseID,
			Decisions: []toolgate.Decision{toolgate.Allow("b1"), toolgate.Allow("b2")}})
		if !errors.Is(err, toolgate.ErrLimitExceeded) {
			t.Errorf("Resume: got %v, want ErrLimitExceeded", err)
		}
		if n := ft.book.Load(); n != 0 {
			t.Errorf("bookFlight ran %d times, want 0", n)
		}
	})
	t.Run("round limit", func(t *testing.T) {
		var ft flightTools
		var replies []scripted.Reply
		for i := range 3 {
			replies = append(replies, scripted.Reply{ToolCalls: []toolgate.ToolCall{call(fmt.Sprint("s", i), "flightStatus", vx)}})
		}
		model := scripted.New(replies...)
		c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{MaxRounds: 2})
		resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "r", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason() != toolgate.FinishRoundLimit || ft.status.Load() != 2 || model.Remaining() != 1 {
			t.Errorf("finish %q, runs %d, remaining %d; want round_limit, 2, 1", resp.FinishReason(), ft.status.Load(), model.Remaining())
		}
		conv := load(t, c.Store(), "r")
		if got := roles(conv.Messages); got != "user assistant tool" {
			t.Errorf("stored %q", got)
		}
		if err := validHistory(conv.Messages); err != nil {
			t.Error(err)
		}
	})
}

func TestClientReturnDirect(t *testing.T) {
	ctx := context.Background()
	lookup := toolgate.NewTool(toolgate.ToolDefinition{Name: "lookup"}, toolgate.ToolMetadata{ReturnDirect: true},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "42", nil })
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("l1", "lookup", "")}})
	c := toolgate.NewClient(model, []*toolgate.Tool{lookup}, nil)
	resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "d", Input: "?"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "42" || resp.FinishReason() != toolgate.FinishReturnDirect || model.Remaining() != 0 {
		t.Errorf("got %q %q", resp.Text(), resp.FinishReason())
	}
	conv := load(t, c.Store(), "d")
	if got := roles(conv.Messages); got != "user assistant tool" {
		t.Errorf("stored %q, want user assistant tool", got)
	}
}

func TestClientPrincipalAndMiddleware(t *testing.T) {
	ctx := context.Background()
	ft := flightTools{principals: make(chan *toolgate.Principal, 1)}
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	mw := func(name string) func(toolgate.ModelFunc) toolgate.ModelFunc {
		return func(next toolgate.ModelFunc) toolgate.ModelFunc {
			return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
				note(name + ">")
				r, err := next(ctx, p)
				note("<" + name)
				return r, err
			}
		}
	}
	tmw := func(name string) func(toolgate.ToolFunc) toolgate.ToolFunc {
		return func(next toolgate.ToolFunc) toolgate.ToolFunc {
			return func(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
				note(name + ":" + req.Call.Name + ":" + string(req.Arguments))
				return next(ctx, req)
			}
		}
	}
	model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}}, scripted.Reply{Text: "ok"})
	c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{mw("a"), mw("b")},
		ToolMiddleware:  []func(toolgate.ToolFunc) toolgate.ToolFunc{tmw("t1"), tmw("t2")},
	})
	who := &toolgate.Principal{ID: "alice", Roles: []string{"agent"}}
	if _, err := c.Call(ctx, &toolgate.CallParams{Input: "status?", Principal: who}); err != nil {
		t.Fatal(err)
	}
	if got := <-ft.principals; got != who {
		t.Errorf("tool saw principal %+v, want %+v", got, who)
	}
	want := []string{"a>", "b>", "<b", "<a", "t1:flightStatus:" + vx, "t2:flightStatus:" + vx, "a>", "b>", "<b", "<a"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("middleware order (-want +got):\n%s", diff)
	}
}

// failingModel fails or misbehaves in configurable ways.
type failingModel struct {
	resp   *toolgate.Response
	err    error
	chunks []*toolgate.Chunk
}

func (m failingModel) Generate(context.Context, *toolgate.Prompt) (*toolgate.Response, error) {
	return m.resp, m.err
}

func (m failingModel) Stream(context.Context, *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		for _, c := range m.chunks {
			if !yield(c, nil) {
				return
			}
		}
		if m.err != nil {
			yield(nil, m.err)
		}
	}
}

func TestClientBadModel(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("provider down")
	for _, tc := range []struct {
		name  string
		model failingModel
		want  error
	}{
		{"error", failingModel{err: boom}, boom},
		{"nil response", failingModel{}, nil},
		{"no generations", failingModel{resp: &toolgate.Response{}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memory.New()
			c := toolgate.NewClient(tc.model, nil, &toolgate.ClientOptions{Store: store})
			_, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "x", Input: "hi"})
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want an error (%v)", err, tc.want)
			}
			if n := len(load(t, store, "x").Messages); n != 0 {
				t.Errorf("%d messages stored after a failed turn, want 0", n)
			}
		})
	}
	t.Run("bad stream index", func(t *testing.T) {
		m := failingModel{chunks: []*toolgate.Chunk{{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1 << 30, Name: "x"}}}}}
		c := toolgate.NewClient(m, nil, nil)
		_, err := toolgate.Collect(c.Stream(ctx, &toolgate.CallParams{Input: "hi"}))
		if !errors.Is(err, toolgate.ErrBadStream) {
			t.Errorf("got %v, want ErrBadStream", err)
		}
	})
	t.Run("nil params", func(t *testing.T) {
		c := toolgate.NewClient(scripted.New(scripted.Reply{Text: "hello"}), nil, nil)
		resp, err := c.Call(ctx, nil)
		if err != nil || resp.Text() != "hello" {
			t.Errorf("Call(nil) = %v, %v", resp, err)
		}
	})
}

func TestNewClientPanics(t *testing.T) {
	tool := toolgate.NewTool(toolgate.ToolDefinition{Name: "a"}, toolgate.ToolMetadata{}, func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	for name, f := range map[string]func(){
		"nil model": func() { toolgate.NewClient(nil, nil, nil) },
		"nil tool":  func() { toolgate.NewClient(scripted.New(), []*toolgate.Tool{nil}, nil) },
		"duplicate": func() { toolgate.NewClient(scripted.New(), []*toolgate.Tool{tool, tool}, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

func TestClientStream(t *testing.T) {
	ctx := context.Background()
	t.Run("paused", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(
			scripted.Reply{Text: "Checking the flight first.", ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}},
			scripted.Reply{Text: "It is on time, so I will book it.", ToolCalls: []toolgate.ToolCall{call("s2", "flightStatus", vx), call("b1", "bookFlight", vx)}},
			scripted.Reply{Text: "Booked."},
		)
		c := toolgate.NewClient(model, ft.tools(), nil)
		var chunks []*toolgate.Chunk
		var text strings.Builder
		sawEarlyText := false
		for ch, err := range c.Stream(ctx, &toolgate.CallParams{ConversationID: "s", Input: "book"}) {
			if err != nil {
				t.Fatal(err)
			}
			if ch.Text != "" {
				text.WriteString(ch.Text)
				// A text chunk of the first reply arrives before its tool ran.
				if strings.HasPrefix("Checking the flight first.", text.String()) && ft.status.Load() == 0 && model.Remaining() == 2 {
					sawEarlyText = true
				}
			}
			if len(ch.ToolCallDeltas) > 0 {
				t.Error("tool call fragments reached the caller")
			}
			chunks = append(chunks, ch)
		}
		if !sawEarlyText {
			t.Error("no text arrived before the turn ended")
		}
		if got, want := text.String(), "Checking the flight first.It is on time, so I will book it."; got != want {
			t.Errorf("text %q, want %q", got, want)
		}
		last := chunks[len(chunks)-1]
		if !cmp.Equal(last.Awaiting, []string{"b1"}) || len(last.ToolCalls) != 2 || last.FinishReason != toolgate.FinishToolCalls || last.Usage == nil {
			t.Errorf("last chunk %+v, want the paused reply's calls, keys, finish reason and usage", last)
		}
		if stored, _ := c.Store().Load(ctx, "s"); stored.Pause == nil || last.PauseID != stored.Pause.ID {
			t.Errorf("last chunk's PauseID %q, want the stored pause's id %+v", last.PauseID, stored.Pause)
		}
		usages := 0
		for _, ch := range chunks {
			if ch.Usage != nil {
				usages++
			}
		}
		if usages != 1 {
			t.Errorf("usage reported %d times, want once", usages)
		}
		if ft.status.Load() != 1 || ft.book.Load() != 0 {
			t.Errorf("runs status %d book %d, want 1 0", ft.status.Load(), ft.book.Load())
		}
		resp, err := toolgate.Collect(c.ResumeStream(ctx, &toolgate.ResumeTurnParams{PauseID: last.PauseID, ConversationID: "s", Decisions: []toolgate.Decision{toolgate.Allow("s2"), toolgate.Allow("b1")}}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Paused() || resp.Text() != "Booked." || len(resp.Results) != 2 {
			t.Errorf("resumed stream collected to %+v", resp)
		}
	})
	t.Run("collect paused", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(scripted.Reply{ToolCalls: []toolgate.ToolCall{call("", "bookFlight", vx)}})
		c := toolgate.NewClient(model, ft.tools(), nil)
		resp, err := toolgate.Collect(c.Stream(ctx, &toolgate.CallParams{Input: "book"}))
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Paused() || !cmp.Equal(resp.Awaiting, []string{"#0"}) || len(resp.Message().ToolCalls) != 1 {
			t.Errorf("collected %+v, want paused on #0 with the call", resp)
		}
	})
	t.Run("consumer stops", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(scripted.Reply{Text: "one two three", ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}}, scripted.Reply{Text: "x"})
		store := memory.New()
		c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{Store: store, StoreEveryRound: true})
		n := 0
		for _, err := range c.Stream(ctx, &toolgate.CallParams{ConversationID: "stop", Input: "go"}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			break
		}
		if n != 1 || ft.status.Load() != 0 || model.Remaining() != 1 {
			t.Errorf("chunks %d, status runs %d, remaining %d; want 1 0 1", n, ft.status.Load(), model.Remaining())
		}
		if got := len(load(t, store, "stop").Messages); got != 0 {
			t.Errorf("%d messages stored for an abandoned round", got)
		}
	})
	t.Run("context canceled", func(t *testing.T) {
		var ft flightTools
		model := scripted.New(scripted.Reply{Text: "one two three", ToolCalls: []toolgate.ToolCall{call("s1", "flightStatus", vx)}})
		c := toolgate.NewClient(model, ft.tools(), nil)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var gotErr error
		for ch, err := range c.Stream(cctx, &toolgate.CallParams{Input: "go"}) {
			if err != nil {
				gotErr = err
				break
			}
			if ch.Text != "" {
				cancel()
			}
		}
		if !errors.Is(gotErr, context.Canceled) || ft.status.Load() != 0 {
			t.Errorf("got %v with %d runs, want context.Canceled and none", gotErr, ft.status.Load())
		}
	})
}

// loopModel answers a user message with a call of "noop" and a tool
// message with text, forever: one turn is two rounds.
type loopModel struct{}

func (loopModel) reply(p *toolgate.Prompt) *toolgate.AssistantMessage {
	if _, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage); ok {
		return &toolgate.AssistantMessage{Text: "done"}
	}
	return &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "noop", Arguments: "{}"}}}
}

func (m loopModel) Generate(_ context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	return &toolgate.Response{Generations: []toolgate.Generation{{Message: m.reply(p)}}}, nil
}

func (m loopModel) Stream(_ context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		r := m.reply(p)
		if r.Text != "" && !yield(&toolgate.Chunk{Text: r.Text}, nil) {
			return
		}
		for i, c := range r.ToolCalls {
			if !yield(&toolgate.Chunk{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: i, ID: c.ID, Name: c.Name, Arguments: c.Arguments}}}, nil) {
				return
			}
		}
		yield(&toolgate.Chunk{FinishReason: toolgate.FinishStop, Usage: &toolgate.Usage{InputTokens: 1}}, nil)
	}
}

// BenchmarkClientTurn measures the loop's own cost for a turn of two
// rounds (a no-op tool call, then the answer) with the in-memory store.
func BenchmarkClientTurn(b *testing.B) {
	noop := toolgate.NewTool(toolgate.ToolDefinition{Name: "noop"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "ok", nil })
	ctx := context.Background()
	for _, mode := range []string{"blocking", "streaming"} {
		b.Run(mode, func(b *testing.B) {
			c := toolgate.NewClient(loopModel{}, []*toolgate.Tool{noop}, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				p := &toolgate.CallParams{ConversationID: fmt.Sprint("b", i), Input: "go"}
				if mode == "blocking" {
					if _, err := c.Call(ctx, p); err != nil {
						b.Fatal(err)
					}
				} else {
					for _, err := range c.Stream(ctx, p) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/round")
		})
	}
}

// TestCollectInterleavedCallFragments feeds fragments of two calls in an
// order providers allow: the first call's arguments continue after the
// second call started.
func TestCollectInterleavedCallFragments(t *testing.T) {
	chunks := []*toolgate.Chunk{
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, ID: "a", Name: "f", Arguments: `{"x":`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, ID: "b", Name: "g", Arguments: `{"y":`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 0, Arguments: `1}`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 3, ID: "d", Name: "h", Arguments: `{}`}}},
		{ToolCallDeltas: []toolgate.ToolCallDelta{{Index: 1, Arguments: `2}`}}},
		{FinishReason: toolgate.FinishToolCalls},
	}
	resp, err := toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []toolgate.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{"y":2}`}, {ID: "d", Name: "h", Arguments: `{}`}}
	if diff := cmp.Diff(want, resp.Message().ToolCalls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
