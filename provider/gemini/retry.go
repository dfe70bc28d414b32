package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/provider/internal/retryafter"
)

// MaxRetryWait is the longest wait the API may ask for (by Retry-After or
// RetryInfo.retryDelay) that a retry honours: when it asks for more, the
// request is not retried and the [provider.Error] carries the wait in
// RetryAfter.
const MaxRetryWait = time.Minute

// retryStatuses are the HTTP statuses retried, as the SDK retries them.
var retryStatuses = []int{408, 429, 500, 502, 503, 504}

// maxErrorBody bounds the error body read to find a retry delay.
const maxErrorBody = 1 << 20

// retrier is the HTTP transport of a [Model]: it retries failed requests
// (the SDK's own retries are off), honouring the wait the API asks for,
// and notes that wait for [provider.Error.RetryAfter]. It is safe for
// concurrent use.
type retrier struct {
	// fixed at creation
	next    http.RoundTripper
	retries int
	delay   time.Duration // the first backoff; 0: 1 s plus up to 1 s jitter
	sleep   func(ctx context.Context, d time.Duration) error
}

// noteKey is the context key of the *retryNote of a call.
type noteKey struct{}

// retryNote receives the wait asked for by the last answer of a call.
type retryNote struct {
	mu   sync.Mutex
	wait time.Duration
}

func (n *retryNote) set(d time.Duration) {
	n.mu.Lock()
	n.wait = d
	n.mu.Unlock()
}

func (n *retryNote) get() time.Duration {
	if n == nil {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.wait
}

// withNote returns ctx carrying a new note.
func withNote(ctx context.Context) (context.Context, *retryNote) {
	n := &retryNote{}
	return context.WithValue(ctx, noteKey{}, n), n
}

func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	note, _ := ctx.Value(noteKey{}).(*retryNote)
	for retry := 0; ; retry++ {
		resp, err := r.next.RoundTrip(req)
		var wait time.Duration
		if err == nil {
			if !slices.Contains(retryStatuses, resp.StatusCode) {
				return resp, nil
			}
			resp, wait = askedWait(resp)
			if note != nil {
				note.set(wait)
			}
		}
		if retry >= r.retries || wait > MaxRetryWait || ctx.Err() != nil || !rewind(req) {
			return resp, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		if wait == 0 {
			wait = r.backoff(retry)
		}
		if err := r.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// rewind resets req's body for another attempt; false when it cannot.
func rewind(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	if req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	req.Body = body
	return true
}

// backoff is the wait before retry n (from 0) when the API asked for none.
func (r *retrier) backoff(n int) time.Duration {
	if r.delay > 0 {
		return min(r.delay<<min(n, 16), MaxRetryWait)
	}
	d := time.Second << min(n, 5)
	return min(d+time.Duration(rand.Int64N(int64(time.Second))), MaxRetryWait)
}

// askedWait returns the wait a failed answer asks for: Retry-After, or the
// retryDelay of a RetryInfo detail in the first maxErrorBody bytes of its
// body, whichever is longer. The returned response has its body intact.
func askedWait(resp *http.Response) (*http.Response, time.Duration) {
	wait := retryafter.Header(resp.Header, time.Now())
	orig := resp.Body
	body, err := io.ReadAll(io.LimitReader(orig, maxErrorBody))
	// The SDK reads the whole body: what was read, then the rest.
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), orig), orig}
	if err != nil {
		return resp, wait
	}
	var v struct {
		Error struct {
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		wait = max(wait, retryafter.RetryInfo(v.Error.Details))
	}
	return resp, wait
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
