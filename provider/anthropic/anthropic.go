package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/modelerr"
	"github.com/toolgate/toolgate/provider/internal/retryafter"
)

// DefaultMaxOutputTokens is the max_tokens value sent when neither the
// prompt's [toolgate.ModelOptions] nor [Options.MaxOutputTokens] gives one:
// the Messages API requires it.
const DefaultMaxOutputTokens = 4096

// provider names the provider in [provider.Error].
const providerName = "anthropic"

// Options configure a [Model]. A nil *Options is not enough: Model must be
// set. The options are copied by [New].
type Options struct {
	// APIKey is the API key, sent as the SDK sends it (an Authorization
	// bearer header). "": no credential is sent (for a proxy that
	// authenticates by itself). Nothing is read from the environment; see
	// [FromEnv].
	APIKey string
	// BaseURL is the address of the API. "": https://api.anthropic.com/.
	BaseURL string
	// Model is the model to call when the prompt's ModelOptions.Model is
	// "", for example "claude-sonnet-4-5". It must not be "".
	Model string
	// MaxOutputTokens is sent as max_tokens when the prompt's
	// ModelOptions.MaxOutputTokens is 0. 0: [DefaultMaxOutputTokens].
	MaxOutputTokens int
	// HTTPClient sends the requests. nil: [http.DefaultClient].
	HTTPClient *http.Client
	// MaxRetries is how many times the SDK retries a request that failed
	// with a connection error, 408, 409, 429 or 5xx, with exponential
	// backoff (honouring retry-after headers). 0: the SDK's default, 2.
	// Negative: no retries.
	MaxRetries int
	// ThinkingBudget turns extended thinking on: the model may spend up to
	// this many tokens reasoning before it answers, sent as thinking
	// {"type":"enabled","budget_tokens":...}. The API requires at least
	// [MinThinkingBudget] and less than max_tokens; [New] checks it against
	// MaxOutputTokens (or its default) and each request against the
	// prompt's own max_tokens. With thinking on, the API accepts only the
	// tool choices "auto" and "none" and no temperature other than 1.
	// 0: thinking off. Negative: [New] fails.
	ThinkingBudget int
}

// Model is a [toolgate.Model] backed by the Anthropic Messages API. It is
// safe for concurrent use.
type Model struct {
	// fixed at creation
	client    sdk.Client
	model     string
	maxTokens int64
	thinking  int64 // the thinking budget; 0: thinking off
	retries   int   // how often a stream that failed early is retried
	retryWait func(retry int) time.Duration
}

// MinThinkingBudget is the smallest [Options.ThinkingBudget] the API
// accepts.
const MinThinkingBudget = 1024

// defaultRetries is the SDK's default number of retries.
const defaultRetries = 2

// defaultRetryWait is the wait before retry n (from 0) of a stream that
// failed with a retryable error event: 0.5 s doubling for each retry, at
// most 8 s, less up to a quarter of jitter, as the SDK waits between HTTP
// attempts.
func defaultRetryWait(n int) time.Duration {
	d := 500 * time.Millisecond << min(n, 4)
	d = min(d, 8*time.Second)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}

var _ toolgate.Model = (*Model)(nil)

// New returns a model configured by opts. It fails when opts is nil or
// names no model. New makes no request.
func New(opts *Options) (*Model, error) {
	if opts == nil || opts.Model == "" {
		return nil, errors.New(`anthropic: no model name: set Options.Model (for example "claude-sonnet-4-5")`)
	}
	o := *opts
	reqOpts := []option.RequestOption{option.WithoutEnvironmentDefaults()}
	if o.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(o.APIKey))
	}
	if o.BaseURL != "" {
		reqOpts = append(reqOpts, option.WithBaseURL(o.BaseURL))
	}
	if o.HTTPClient != nil {
		reqOpts = append(reqOpts, option.WithHTTPClient(o.HTTPClient))
	}
	switch {
	case o.MaxRetries < 0:
		reqOpts = append(reqOpts, option.WithMaxRetries(0))
	case o.MaxRetries > 0:
		reqOpts = append(reqOpts, option.WithMaxRetries(o.MaxRetries))
	}
	maxTokens := int64(o.MaxOutputTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxOutputTokens
	}
	thinking := int64(o.ThinkingBudget)
	if thinking != 0 {
		if err := checkBudget(thinking, maxTokens); err != nil {
			return nil, err
		}
	}
	retries := defaultRetries
	switch {
	case o.MaxRetries < 0:
		retries = 0
	case o.MaxRetries > 0:
		retries = o.MaxRetries
	}
	return &Model{client: sdk.NewClient(reqOpts...), model: o.Model, maxTokens: maxTokens,
		thinking: thinking, retries: retries, retryWait: defaultRetryWait}, nil
}

// checkBudget reports a thinking budget the API would reject with
// max_tokens maxTokens.
func checkBudget(budget, maxTokens int64) error {
	if budget < MinThinkingBudget || budget >= maxTokens {
		return fmt.Errorf("anthropic: thinking budget %d: want at least %d and less than max_tokens (%d)", budget, MinThinkingBudget, maxTokens)
	}
	return nil
}

// FromEnv returns a model named model, with the API key read from
// ANTHROPIC_API_KEY and the base URL from ANTHROPIC_BASE_URL (optional).
// It fails when ANTHROPIC_API_KEY is unset or empty, or model is "".
func FromEnv(model string) (*Model, error) {
	key := os.Getenv("ANTHROPIC_API_KEY")
	if key == "" {
		return nil, errors.New("anthropic: the environment variable ANTHROPIC_API_KEY is not set")
	}
	return New(&Options{APIKey: key, BaseURL: os.Getenv("ANTHROPIC_BASE_URL"), Model: model})
}

// Generate sends the prompt and returns the whole reply. Provider failures
// are [*provider.Error] values; a canceled context returns ctx.Err().
func (m *Model) Generate(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	params, opts, err := m.params(p)
	if err != nil {
		return nil, err
	}
	msg, err := m.client.Messages.New(ctx, params, opts...)
	if err != nil {
		return nil, modelError(ctx, err)
	}
	return fromMessage(msg)
}

// Stream sends the prompt and yields the reply as it is produced: text
// deltas, each tool call as a first fragment with its id and name and a
// second with its whole arguments once the API has sent them (the Index of
// a fragment is the call's position among the reply's tool calls), and a
// last chunk with the finish reason and usage. The first chunk also
// carries the response id and model. A stream that ends before the API's
// message_stop event yields an error. Breaking out of the loop closes the
// HTTP stream.
//
// An error event that arrives before any chunk was yielded is retried like
// the HTTP status its type stands for (overloaded_error like 529,
// rate_limit_error like 429, api_error like 500), as often as
// [Options.MaxRetries] allows, with the SDK's backoff.
func (m *Model) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		params, opts, err := m.params(p)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for retry := 0; ; retry++ {
			sent, err := m.attempt(ctx, params, opts, yield)
			if err == nil {
				return
			}
			if sent || retry >= m.retries || !retryableEvent(err) || ctx.Err() != nil {
				yield(nil, modelError(ctx, err))
				return
			}
			t := time.NewTimer(m.retryWait(retry))
			select {
			case <-ctx.Done():
				t.Stop()
				yield(nil, ctx.Err())
				return
			case <-t.C:
			}
		}
	}
}

// attempt makes one streaming request and yields its chunks (see
// readStream).
func (m *Model) attempt(ctx context.Context, params sdk.MessageNewParams, opts []option.RequestOption, yield func(*toolgate.Chunk, error) bool) (sent bool, err error) {
	stream := m.client.Messages.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	return readStream(stream, yield)
}

// readStream yields the chunks of stream. It returns a nil error when the
// consumer stopped or the stream ended with message_stop, and the error
// that ended it otherwise; sent reports whether a chunk was yielded.
func readStream(stream *ssestream.Stream[sdk.MessageStreamEventUnion], yield func(*toolgate.Chunk, error) bool) (sent bool, err error) {
	var s streamState
	for stream.Next() {
		ev := stream.Current()
		ch, err := s.event(&ev)
		if err != nil {
			return sent, err
		}
		if ch != nil {
			sent = true
			if !yield(ch, nil) {
				return sent, nil
			}
		}
		if s.stopped {
			return sent, nil
		}
	}
	if err := stream.Err(); err != nil {
		return sent, err
	}
	return sent, s.end()
}

// retryableEvent reports whether err is an error event inside a stream
// (the HTTP answer was 200) whose type stands for a status the SDK retries:
// 408, 409, 429 or 5xx.
func retryableEvent(err error) bool {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode >= 400 {
		return false
	}
	switch code := statusForErrorType(string(apiErr.Type())); {
	case code == 408, code == 409, code == 429, code >= 500:
		return true
	}
	return false
}

// modelError maps an SDK error to a [*provider.Error], or returns the
// context's error when the context ended.
func modelError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var me *provider.Error
	if errors.As(err, &me) {
		return err
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		kind := modelerr.KindForStatus(code)
		if code < 400 {
			// An error event inside a stream that began with 200: its
			// type says what went wrong.
			code = 0
			kind = modelerr.KindForStatus(statusForErrorType(string(apiErr.Type())))
		}
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		var wait time.Duration
		if apiErr.Response != nil {
			wait = retryafter.Header(apiErr.Response.Header, time.Now())
		}
		return &provider.Error{Provider: providerName, Kind: kind, StatusCode: code, Message: msg, Err: err, RetryAfter: wait}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The SDK's other errors may quote the response; only a description
	// is kept in the message.
	msg := "the response was malformed or cut short"
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = "the request failed: " + ue.Err.Error()
	}
	return &provider.Error{Provider: providerName, Kind: provider.KindOther, Message: msg, Err: err}
}

// statusForErrorType returns the HTTP status the API documents for an
// error type, for errors reported inside a stream.
func statusForErrorType(t string) int {
	switch t {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "billing_error":
		return 402
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "api_error":
		return 500
	case "overloaded_error":
		return 529
	}
	return 0
}

// malformed returns the error for a response that does not follow the API.
func malformed(format string, args ...any) error {
	return &provider.Error{Provider: providerName, Kind: provider.KindOther,
		Message: "malformed response: " + fmt.Sprintf(format, args...)}
}
