package gemini

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/modelerr"
	"github.com/toolgate/toolgate/provider/internal/retryafter"
)

// provider names the provider in [provider.Error].
const providerName = "gemini"

// Options configure a [Model]. A nil *Options is not enough: Model must be
// set. The options are copied by [New].
type Options struct {
	// APIKey is the Gemini API key, sent in the x-goog-api-key header.
	// "": the SDK falls back to GOOGLE_API_KEY or GEMINI_API_KEY and [New]
	// fails when neither is set.
	APIKey string
	// BaseURL is the address of the API. "": the SDK's default,
	// https://generativelanguage.googleapis.com/ (or
	// GOOGLE_GEMINI_BASE_URL when set).
	BaseURL string
	// Model is the model to call when the prompt's ModelOptions.Model is
	// "", for example "gemini-2.5-flash". It must not be "".
	Model string
	// HTTPClient sends the requests; [New] uses a copy whose transport
	// makes the retries (see MaxRetries) around the client's own. nil: a
	// new [http.Client].
	HTTPClient *http.Client
	// MaxRetries is how many times a request that failed with a
	// connection error, 408, 429, 500, 502, 503 or 504 is retried. A retry
	// waits as long as the API asked (Retry-After, or the retryDelay of a
	// google.rpc.RetryInfo error detail) when it asked for at most
	// [MaxRetryWait], and is not made when it asked for more; otherwise it
	// backs off (see RetryDelay). 0: no retries, the SDK's default.
	MaxRetries int
	// RetryDelay is the wait before the first retry the API gave no wait
	// for, doubling for each further one. 0: 1 s plus up to 1 s of jitter,
	// as the SDK waits; a set delay has no jitter.
	RetryDelay time.Duration
	// IncludeThoughts asks for thought summaries (thinkingConfig
	// includeThoughts): replies then hold their readable reasoning as
	// [toolgate.ReasoningPart] text, and streams yield it as
	// [toolgate.Chunk] Reasoning. false: not asked for; a thinking model
	// still thinks and signs its parts, and the signatures are kept.
	IncludeThoughts bool
	// ThinkingLevel is how much a Gemini 3 model thinks (thinkingConfig
	// thinkingLevel): "minimal", "low", "medium" or "high", in any case.
	// "": the model's default. Another value makes [New] fail.
	ThinkingLevel string
}

// Model is a [toolgate.Model] backed by the Gemini API (generateContent and
// streamGenerateContent). It is safe for concurrent use.
type Model struct {
	// fixed at creation
	client   *genai.Client
	model    string
	retry    *retrier
	thinking *genai.ThinkingConfig // nil: the model's default
}

var _ toolgate.Model = (*Model)(nil)

// New returns a model configured by opts. It fails when opts is nil or
// names no model, or when the SDK rejects the configuration (no API key).
// New makes no request.
func New(opts *Options) (*Model, error) {
	if opts == nil || opts.Model == "" {
		return nil, errors.New(`gemini: no model name: set Options.Model (for example "gemini-2.5-flash")`)
	}
	o := *opts
	thinking, err := thinkingConfig(o.IncludeThoughts, o.ThinkingLevel)
	if err != nil {
		return nil, err
	}
	// Retries are made by the transport, which reads the wait the API
	// asks for; the SDK's own are left off.
	hc := &http.Client{}
	if o.HTTPClient != nil {
		*hc = *o.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	rt := &retrier{next: next, retries: max(o.MaxRetries, 0), delay: max(o.RetryDelay, 0), sleep: sleep}
	hc.Transport = rt
	cc := &genai.ClientConfig{
		APIKey:      o.APIKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: o.BaseURL},
	}
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		if o.APIKey == "" {
			return nil, errors.New("gemini: no API key: set Options.APIKey")
		}
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return &Model{client: client, model: o.Model, retry: rt, thinking: thinking}, nil
}

// thinkingConfig returns the thinkingConfig for the options, nil when they
// ask for nothing.
func thinkingConfig(include bool, level string) (*genai.ThinkingConfig, error) {
	if !include && level == "" {
		return nil, nil
	}
	c := &genai.ThinkingConfig{IncludeThoughts: include}
	switch l := genai.ThinkingLevel(strings.ToUpper(level)); l {
	case "":
	case genai.ThinkingLevelMinimal, genai.ThinkingLevelLow, genai.ThinkingLevelMedium, genai.ThinkingLevelHigh:
		c.ThinkingLevel = l
	default:
		return nil, fmt.Errorf(`gemini: thinking level %q: want "minimal", "low", "medium" or "high"`, level)
	}
	return c, nil
}

// FromEnv returns a model named model, with the API key read from
// GEMINI_API_KEY, or GOOGLE_API_KEY when that is unset, and the base URL
// from GEMINI_BASE_URL (optional). It fails when neither key variable is
// set, or model is "".
func FromEnv(model string) (*Model, error) {
	key := os.Getenv("GEMINI_API_KEY")
	if key == "" {
		key = os.Getenv("GOOGLE_API_KEY")
	}
	if key == "" {
		return nil, errors.New("gemini: the environment variable GEMINI_API_KEY (or GOOGLE_API_KEY) is not set")
	}
	return New(&Options{APIKey: key, BaseURL: os.Getenv("GEMINI_BASE_URL"), Model: model})
}

// Generate sends the prompt and returns the whole reply. Provider failures
// are [*provider.Error] values; a canceled context returns ctx.Err().
func (m *Model) Generate(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	model, contents, config, err := m.request(p)
	if err != nil {
		return nil, err
	}
	callCtx, note := withNote(ctx)
	resp, err := m.client.Models.GenerateContent(callCtx, model, contents, config)
	if err != nil {
		return nil, modelError(ctx, err, note)
	}
	return fromResponse(resp)
}

// Stream sends the prompt and yields the reply as it is produced: the text
// of each streamed response, each function call as one complete
// [toolgate.ToolCallDelta] (Index counts the calls across the stream), and
// a last chunk with the finish reason and usage. A stream that ends before
// a response with a finish reason yields an error. Breaking out of the
// loop closes the HTTP stream.
func (m *Model) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) {
		model, contents, config, err := m.request(p)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		callCtx, note := withNote(ctx)
		var s streamState
		for resp, err := range m.client.Models.GenerateContentStream(callCtx, model, contents, config) {
			if err != nil {
				yield(nil, modelError(ctx, err, note))
				return
			}
			ch, err := s.response(resp)
			if err != nil {
				yield(nil, err)
				return
			}
			if ch != nil && !yield(ch, nil) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		last, err := s.end()
		if err != nil {
			yield(nil, err)
			return
		}
		yield(last, nil)
	}
}

// modelError maps an SDK error to a [*provider.Error], or returns the
// context's error when the context ended. note holds the wait the last
// answer asked for, if any.
func modelError(ctx context.Context, err error, note *retryNote) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var me *provider.Error
	if errors.As(err, &me) {
		return err
	}
	var apiErr genai.APIError
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) && apiErrPtr != nil {
		apiErr = *apiErrPtr
	} else if !errors.As(err, &apiErr) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		// The SDK's other errors may quote the response; only a
		// description is kept in the message.
		msg := "the response was malformed or cut short"
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = "the request failed: " + ue.Err.Error()
		}
		return &provider.Error{Provider: providerName, Kind: provider.KindOther, Message: msg, Err: err}
	}
	msg := apiErr.Message
	if msg == "" {
		msg = apiErr.Status
	}
	return &provider.Error{
		Provider:   providerName,
		Kind:       modelerr.KindForStatus(apiErr.Code),
		StatusCode: apiErr.Code,
		Message:    msg,
		Err:        err,
		RetryAfter: max(note.get(), retryafter.RetryInfo(apiErr.Details)),
	}
}

// malformed returns the error for a response that does not follow the API.
func malformed(format string, args ...any) error {
	return &provider.Error{Provider: providerName, Kind: provider.KindOther,
		Message: "malformed response: " + fmt.Sprintf(format, args...)}
}
