package toolgate_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

// countingStore counts the Loads of the store it wraps.
type countingStore struct {
	toolgate.ConversationStore
	loads atomic.Int32
}

func (s *countingStore) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	s.loads.Add(1)
	return s.ConversationStore.Load(ctx, id)
}

// TestClientResumeGivenConversation checks ResumeTurnParams.Conversation
// and ResumeTurnParams.Resolved: a conversation the caller loaded is used
// as it is, a stale one decides nothing, and the hook sees the stored
// resolution before the model answers it.
func TestClientResumeGivenConversation(t *testing.T) {
	ctx := context.Background()
	var ft flightTools
	store := &countingStore{ConversationStore: memory.New()}
	var order []string
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{call("s", "flightStatus", vx), call("b", "bookFlight", vx)}},
		scripted.Reply{Text: "Booked."},
	)
	c := toolgate.NewClient(model, ft.tools(), &toolgate.ClientOptions{Store: store,
		ModelMiddleware: []func(toolgate.ModelFunc) toolgate.ModelFunc{func(next toolgate.ModelFunc) toolgate.ModelFunc {
			return func(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
				order = append(order, "model")
				return next(ctx, p)
			}
		}}})
	if resp, err := c.Call(ctx, &toolgate.CallParams{ConversationID: "g", Input: "book"}); err != nil || !resp.Paused() {
		t.Fatalf("Call: %v", err)
	}
	conv := load(t, store, "g")
	before := len(conv.Messages)
	order = nil

	// The conversation of another id is refused, and nothing runs.
	other := *conv
	other.ID = "h"
	_, err := c.Resume(ctx, &toolgate.ResumeTurnParams{PauseID: toolgatetest.OpenPauseID(t, c, "g"), ConversationID: "g", Decisions: []toolgate.Decision{toolgate.Allow("b")}, Conversation: &other})
	if err == nil {
		t.Fatal("Resume with the conversation of another id succeeded")
	}

	var resolved []*toolgate.ToolMessage
	store.loads.Store(0)
	p := &toolgate.ResumeTurnParams{ConversationID: "g", PauseID: conv.Pause.ID, Decisions: []toolgate.Decision{toolgate.Allow("s"), toolgate.Allow("b")}, Conversation: conv,
		Resolved: func(m *toolgate.ToolMessage) {
			order = append(order, "resolved")
			resolved = append(resolved, m)
		}}
	resp, err := c.Resume(ctx, p)
	if err != nil || resp.Text() != "Booked." {
		t.Fatalf("Resume: %v %q", err, resp.Text())
	}
	if n := store.loads.Load(); n != 0 {
		t.Errorf("Resume with a conversation loaded it %d times, want 0", n)
	}
	if len(conv.Messages) != before {
		t.Errorf("the given conversation was modified: %d messages, had %d", len(conv.Messages), before)
	}
	if diff := cmp.Diff([]string{"resolved", "model"}, order); diff != "" {
		t.Errorf("order of the hook and the model (-want +got):\n%s", diff)
	}
	after := load(t, store, "g")
	if len(resolved) != 1 || !cmp.Equal(resolved[0], after.Messages[before]) {
		t.Errorf("Resolved got %v, want the stored tool message %v", resolved, after.Messages[before])
	}
	if ft.status.Load() != 1 || ft.book.Load() != 1 {
		t.Errorf("runs: status %d, book %d; want 1 each", ft.status.Load(), ft.book.Load())
	}

	// The same, now stale, conversation decides nothing again.
	resolved = nil
	p.PauseID = ""
	if _, err := c.Resume(ctx, p); !errors.Is(err, toolgate.ErrNoOpenPause) {
		t.Errorf("Resume with a stale conversation: %v, want ErrNoOpenPause", err)
	}
	if ft.status.Load() != 1 || ft.book.Load() != 1 || len(resolved) != 0 {
		t.Errorf("a stale resume ran something: status %d, book %d, resolved %d", ft.status.Load(), ft.book.Load(), len(resolved))
	}
}
