package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/storekit"
)

// unavailableStore is a store whose appends fail as an unavailable
// database's do once failing is set.
type unavailableStore struct {
	toolgate.ConversationStore
	failing atomic.Bool
}

func (s *unavailableStore) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	if s.failing.Load() {
		return fmt.Errorf("append: %w", storekit.ErrUnavailable)
	}
	return s.ConversationStore.Append(ctx, id, p)
}

// postStreamed posts a message to conv as the traveller, asking for the
// turn as a stream, and returns the recorded answer.
func (f *fixture) postStreamed(conv, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/v1/conversations/"+conv+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+travellerKey)
	req.Header.Set("Accept", "text/event-stream")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// TestStreamedTurnStoreUnavailable: a streamed turn whose store becomes
// unavailable after the stream began ends with an "error" event saying
// store_unavailable (retry), not internal: the same as the 503 of a turn
// that had not begun streaming.
func TestStreamedTurnStoreUnavailable(t *testing.T) {
	store := &unavailableStore{ConversationStore: memory.New()}
	f := newFixtureWith(t, store, scripted.New(scripted.Reply{Text: "Your flight is on time."}), nil)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	store.failing.Store(true)
	rec := f.postStreamed(conv, `{"input":"hello"}`)
	body := rec.Body.String()
	switch rec.Code {
	case 200:
		if !strings.Contains(body, "event: error") || !strings.Contains(body, `"error":"store_unavailable"`) {
			t.Errorf("streamed turn: %s, want an error event with store_unavailable", body)
		}
	case 503:
		if !strings.Contains(body, `"error":"store_unavailable"`) || rec.Header().Get("Retry-After") == "" {
			t.Errorf("streamed turn: 503 %s (Retry-After %q), want store_unavailable with Retry-After", body, rec.Header().Get("Retry-After"))
		}
	default:
		t.Errorf("status %d %s, want 200 with an error event or 503", rec.Code, body)
	}
}
