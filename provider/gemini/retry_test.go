package gemini

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// quotaAnswer is a 429 whose body carries a google.rpc.RetryInfo detail, in
// the error format the API documents.
func quotaAnswer(delay string) answer {
	return answer{Status: 429, Body: fmt.Sprintf(`{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":%q}]}}`, delay)}
}

// waits records the waits of m's retries instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return nil
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.d)
}

func retryModel(t *testing.T, f fakeAPI, retries int) (*Model, *waits) {
	t.Helper()
	m, err := New(&Options{APIKey: "k", BaseURL: f.URL, Model: "m", MaxRetries: retries, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	m.retry.sleep = w.sleep
	return m, w
}

// TestRetryDelayHonoured: a retried request waits as long as the API asked,
// by RetryInfo.retryDelay or Retry-After, streamed or not.
func TestRetryDelayHonoured(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			busy := errorAnswer(503, "UNAVAILABLE", "The model is overloaded.")
			busy.Header = map[string]string{"Retry-After": "2"}
			ok := jsonAnswer(simpleResponse)
			if stream {
				ok = sseAnswer(simpleResponse)
			}
			f := newFakeAPI(t, quotaAnswer("3s"), busy, errorAnswer(500, "INTERNAL", "boom"), ok)
			m, w := retryModel(t, f, 3)
			resp, err := fakeapi.Generate(t.Context(), m, hi, stream)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "Hi." || f.Count() != 4 {
				t.Errorf("got %q after %d requests, want Hi. after 4", resp.Text(), f.Count())
			}
			// The last wait is the backoff of the third retry: 4 times
			// RetryDelay.
			if diff := cmp.Diff([]time.Duration{3 * time.Second, 2 * time.Second, 4 * time.Millisecond}, w.got()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRetryAfterSurfaced: the wait the API asked for is in the provider.Error
// when no retry is left, or when it is longer than a retry waits.
func TestRetryAfterSurfaced(t *testing.T) {
	header := errorAnswer(429, "RESOURCE_EXHAUSTED", "slow down")
	header.Header = map[string]string{"Retry-After": "5"}
	for _, tt := range []struct {
		name     string
		a        answer
		retries  int
		want     time.Duration
		requests int
	}{
		{"retry info, no retries", quotaAnswer("37s"), 0, 37 * time.Second, 1},
		{"retry info, fractional", quotaAnswer("0.25s"), 0, 250 * time.Millisecond, 1},
		{"header, no retries", header, 0, 5 * time.Second, 1},
		{"longer than a retry waits", quotaAnswer("300s"), 2, 300 * time.Second, 1},
		{"none given", errorAnswer(429, "RESOURCE_EXHAUSTED", "slow down"), 0, 0, 1},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				f := newFakeAPI(t, tt.a, tt.a, tt.a)
				m, w := retryModel(t, f, tt.retries)
				var err error
				_, err = fakeapi.Generate(t.Context(), m, hi, stream)
				var me *provider.Error
				if !errors.As(err, &me) {
					t.Fatalf("got %v, want a provider.Error", err)
				}
				if me.RetryAfter != tt.want || me.Kind != provider.KindRateLimit {
					t.Errorf("got RetryAfter %v kind %s, want %v rate_limit", me.RetryAfter, me.Kind, tt.want)
				}
				if f.Count() != tt.requests || len(w.got()) != 0 {
					t.Errorf("%d requests, waits %v; want %d requests and no wait", f.Count(), w.got(), tt.requests)
				}
			})
		}
	}
}

func TestRetryWaitCanceled(t *testing.T) {
	f := newFakeAPI(t, quotaAnswer("3s"), jsonAnswer(simpleResponse))
	m, _ := retryModel(t, f, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m.retry.sleep = func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }
	if _, err := m.Generate(ctx, hi); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if f.Count() != 1 {
		t.Errorf("%d requests, want 1", f.Count())
	}
}
