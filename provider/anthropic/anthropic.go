package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/toolgate/toolgate"
)

// DefaultMaxOutputTokens is the max_tokens value sent when neither the
// prompt's [toolgate.ModelOptions] nor [Options.MaxOutputTokens] gives one:
// the Messages API requires it.
const DefaultMaxOutputTokens = 4096

// provider names the provider in [toolgate.ModelError].
const provider = "anthropic"

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
}

// Model is a [toolgate.Model] backed by the Anthropic Messages API. It is
// safe for concurrent use.
type Model struct {
	// fixed at creation
	client    sdk.Client
	model     string
	maxTokens int64
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
	return &Model{client: sdk.NewClient(reqOpts...), model: o.Model, maxTokens: maxTokens}, nil
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
// are [*toolgate.ModelError] values; a canceled context returns ctx.Err().
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

// Stream sends the prompt and yields the reply as it is produced: a first
// chunk with the response id and model, text deltas, tool-call fragments
// (the Index of a fragment is the call's position among the reply's tool
// calls), and a last chunk with the finish reason and usage. A stream that
// ends before the API's message_stop event yields an error. Breaking out
// of the loop closes the HTTP stream.
func (m *Model) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		params, opts, err := m.params(p)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream := m.client.Messages.NewStreaming(ctx, params, opts...)
		defer stream.Close()
		if err := readStream(stream, yield); err != nil {
			yield(nil, modelError(ctx, err))
		}
	}
}

// readStream yields the chunks of stream. It returns nil when the consumer
// stopped or the stream ended with message_stop, and the error that ended
// it otherwise.
func readStream(stream *ssestream.Stream[sdk.MessageStreamEventUnion], yield func(*toolgate.Chunk, error) bool) error {
	var s streamState
	for stream.Next() {
		ev := stream.Current()
		ch, err := s.event(&ev)
		if err != nil {
			return err
		}
		if ch != nil && !yield(ch, nil) {
			return nil
		}
		if s.stopped {
			return nil
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	return s.end()
}

// modelError maps an SDK error to a [*toolgate.ModelError], or returns the
// context's error when the context ended.
func modelError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var me *toolgate.ModelError
	if errors.As(err, &me) {
		return err
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		kind := toolgate.ModelErrorKindForStatus(code)
		if code < 400 {
			// An error event inside a stream that began with 200: its
			// type says what went wrong.
			code = 0
			kind = toolgate.ModelErrorKindForStatus(statusForErrorType(string(apiErr.Type())))
		}
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return &toolgate.ModelError{Provider: provider, Kind: kind, StatusCode: code, Message: msg, Err: err}
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
	return &toolgate.ModelError{Provider: provider, Kind: toolgate.ModelErrOther, Message: msg, Err: err}
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
	return &toolgate.ModelError{Provider: provider, Kind: toolgate.ModelErrOther,
		Message: "malformed response: " + fmt.Sprintf(format, args...)}
}
