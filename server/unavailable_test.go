package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/provider/scripted"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/server"
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

// flakyKeys is a record store whose first fail releases of key records
// fail as an unavailable database's do; released receives once a release
// went through.
type flakyKeys struct {
	records.Store
	fail     atomic.Int32
	released chan struct{}
}

func (k *flakyKeys) ReleaseKey(ctx context.Context, scope, key, token string, at time.Time) error {
	if k.fail.Add(-1) >= 0 {
		return fmt.Errorf("release: %w", storekit.ErrUnavailable)
	}
	if err := k.Store.ReleaseKey(ctx, scope, key, token, at); err != nil {
		return err
	}
	select {
	case k.released <- struct{}{}:
	default:
	}
	return nil
}

// TestKeyReleasedOnceStoreAnswers: a keyed request answered 503 because
// the database was unavailable, whose key record could not be released
// then either, has it released in the background once the database
// answers, so that a retry with the key runs afresh right away instead of
// being refused as in use until the hold ends (the turn timeout and a
// margin).
func TestKeyReleasedOnceStoreAnswers(t *testing.T) {
	store := &unavailableStore{ConversationStore: memory.New()}
	keys := &flakyKeys{Store: records.NewMemory(), released: make(chan struct{}, 1)}
	f := newFixtureWith(t, store, flightdemo.Model(), func(c *server.Config) { c.Records = keys })
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)

	store.failing.Store(true)
	keys.fail.Store(2)
	first := f.sendKeyed(t.Context(), "POST", messagesPath(conv), travellerKey, "k-flaky", flightInput)
	if first.Code != 503 {
		t.Fatalf("first: %d %s, want 503 (the store is unavailable)", first.Code, first.Body)
	}
	select {
	case <-keys.released:
	case <-time.After(30 * time.Second):
		t.Fatal("the key record was never released after the database answered again")
	}
	store.failing.Store(false)
	retry := f.sendKeyed(t.Context(), "POST", messagesPath(conv), travellerKey, "k-flaky", flightInput)
	if retry.Code != 200 || decodeBody(t, retry)["status"] != "paused" {
		t.Errorf("retry: %d %s, want the turn run afresh (200, paused)", retry.Code, retry.Body)
	}
}

// TestCloseStopsKeySettling: Close returns while a key record is still
// being retried in the background, and the retries stop.
func TestCloseStopsKeySettling(t *testing.T) {
	store := &unavailableStore{ConversationStore: memory.New()}
	keys := &flakyKeys{Store: records.NewMemory(), released: make(chan struct{}, 1)}
	f := newFixtureWith(t, store, flightdemo.Model(), func(c *server.Config) { c.Records = keys })
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	store.failing.Store(true)
	keys.fail.Store(1 << 30)
	if rec := f.sendKeyed(t.Context(), "POST", messagesPath(conv), travellerKey, "k-closed", flightInput); rec.Code != 503 {
		t.Fatalf("first: %d %s, want 503", rec.Code, rec.Body)
	}
	f.srv.Close()
	n := keys.fail.Load()
	f.srv.Close()
	if keys.fail.Load() != n {
		t.Error("releases were still tried after Close returned")
	}
}
