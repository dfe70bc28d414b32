package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/schemacache"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/modelerr"
	"github.com/toolgate/toolgate/provider/internal/retryafter"
)

// API selects the OpenAI HTTP API a [Model] speaks.
type API int

const (
	// ChatCompletions is the Chat Completions API (POST /chat/completions),
	// which OpenAI and most OpenAI-compatible servers (Ollama, vLLM,
	// llama.cpp, LM Studio, OpenRouter) serve. It is the default.
	ChatCompletions API = iota
	// Responses is the Responses API (POST /responses). Conversations are
	// sent whole with every request; no server-side state is used, and
	// responses are not stored at OpenAI unless [Options.StoreResponses]
	// is set.
	Responses
)

// String returns the API's name.
func (a API) String() string {
	switch a {
	case ChatCompletions:
		return "chat_completions"
	case Responses:
		return "responses"
	}
	return "API(" + strconv.Itoa(int(a)) + ")"
}

// DefaultBaseURL is the base URL used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// NoRetries, as [Options.MaxRetries], turns the SDK's retries off.
const NoRetries = -1

// Options configure a [Model]. A nil *Options is rejected by [New] because
// a model name is required. The options are copied by New.
type Options struct {
	// Model is the model used when a prompt's [toolgate.ModelOptions] names
	// none, for example "gpt-4.1-mini" or, on a local server, "qwen3:8b".
	// Required.
	Model string
	// APIKey is sent as a bearer token. "": no Authorization header, which
	// suits local servers. The package never reads the environment; see
	// [FromEnv] for that.
	APIKey string
	// BaseURL is the API's base URL, for OpenAI-compatible servers, for
	// example "http://localhost:11434/v1" for Ollama. "": [DefaultBaseURL].
	// It must be an absolute http or https URL.
	BaseURL string
	// HTTPClient sends the requests. nil: [http.DefaultClient].
	HTTPClient *http.Client
	// MaxRetries is how many times the SDK retries a request that failed
	// with a connection error, 408, 409, 429 or 5xx, with backoff. 0: the
	// SDK's default (2). [NoRetries] (or any negative value): none.
	MaxRetries int
	// API selects the HTTP API. Zero: [ChatCompletions].
	API API
	// StoreResponses, with the [Responses] API, lets OpenAI keep each
	// response (store true), for its dashboard or evaluations. false: every
	// request sends store false, and include ["reasoning.encrypted_content"]
	// so that a reasoning model's reasoning comes back encrypted instead
	// of being kept at OpenAI. It has no effect on [ChatCompletions].
	StoreResponses bool
	// MaxFileBytes limits the bytes of the files (images and others) that
	// one request carries inline ([toolgate.FilePart] with Data); a prompt
	// over it fails with [ErrFileTooLarge] before anything is sent. Files
	// given by URL do not count. 0: [DefaultMaxFileBytes]. Negative: no
	// limit.
	MaxFileBytes int64
}

// Model is a [toolgate.Model] backed by the OpenAI API, or by any server
// that speaks it. It is immutable and safe for concurrent use.
//
// Message content is never logged and never copied into errors.
type Model struct {
	// fixed at creation
	api   API
	model string
	store bool
	files int64 // Options.MaxFileBytes
	chat  sdk.ChatCompletionService
	resp  responses.ResponseService
}

var _ toolgate.Model = (*Model)(nil)

// New returns a model for opts. It fails when opts is nil, names no model,
// has an invalid base URL or an unknown API.
func New(opts *Options) (*Model, error) {
	if opts == nil || opts.Model == "" {
		return nil, errors.New("openai: Options.Model is required")
	}
	if opts.API != ChatCompletions && opts.API != Responses {
		return nil, fmt.Errorf("openai: unknown API %d", int(opts.API))
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("openai: invalid base URL: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: invalid base URL %q: want an absolute http or https URL", base)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("openai: invalid base URL: it must not hold credentials, a query or a fragment")
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	ropts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
	}
	if opts.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(opts.APIKey))
	}
	switch {
	case opts.MaxRetries < 0:
		ropts = append(ropts, option.WithMaxRetries(0))
	case opts.MaxRetries > 0:
		ropts = append(ropts, option.WithMaxRetries(opts.MaxRetries))
	}
	// The services, unlike the SDK's client, read no environment variables.
	m := &Model{api: opts.API, model: opts.Model, store: opts.StoreResponses, files: opts.MaxFileBytes}
	if opts.API == Responses {
		m.resp = responses.NewResponseService(ropts...)
	} else {
		m.chat = sdk.NewChatCompletionService(ropts...)
	}
	return m, nil
}

// FromEnv returns a Chat Completions model named model, configured from the
// environment: OPENAI_API_KEY (required) and OPENAI_BASE_URL (optional). It
// is meant for commands; libraries should pass [Options] to [New].
func FromEnv(model string) (*Model, error) {
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
		return nil, errors.New("openai: the environment variable OPENAI_API_KEY is not set")
	}
	return New(&Options{Model: model, APIKey: key, BaseURL: os.Getenv("OPENAI_BASE_URL")})
}

// API reports which API the model speaks.
func (m *Model) API() API { return m.api }

// Generate sends the prompt and returns the whole reply. Failures reported
// by the API are [*provider.Error] values; a canceled context gives an
// error wrapping ctx.Err().
func (m *Model) Generate(ctx context.Context, p *toolgate.Prompt) (*toolgate.Response, error) {
	if m.api == Responses {
		return m.generateResponses(ctx, p)
	}
	return m.generateChat(ctx, p)
}

// Stream sends the prompt and yields the reply as it arrives: text deltas,
// reasoning deltas, tool-call fragments exactly as the API sends them, and a
// last chunk with the finish reason, the usage (when reported), the response
// id, the model and the reply's parts (when it has any; see the package
// documentation). A stream that ends before the API said it was complete yields an
// error. Breaking out of the loop closes the HTTP response.
func (m *Model) Stream(ctx context.Context, p *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	if m.api == Responses {
		return m.streamResponses(ctx, p)
	}
	return m.streamChat(ctx, p)
}

// modelName returns the model the prompt asks for.
func (m *Model) modelName(p *toolgate.Prompt) string {
	if p.Options != nil && p.Options.Model != "" {
		return p.Options.Model
	}
	return m.model
}

func checkPrompt(p *toolgate.Prompt) error {
	if p == nil {
		return errors.New("openai: nil prompt")
	}
	for i, msg := range p.Messages {
		var isNil bool
		switch msg := msg.(type) {
		case nil:
			isNil = true
		case *toolgate.SystemMessage:
			isNil = msg == nil
		case *toolgate.UserMessage:
			isNil = msg == nil
		case *toolgate.AssistantMessage:
			isNil = msg == nil
		case *toolgate.ToolMessage:
			isNil = msg == nil
		}
		if isNil {
			return fmt.Errorf("openai: message %d is nil", i)
		}
	}
	return nil
}

// toolParameters converts a tool's input schema into the map the SDK sends
// as the function's parameters. A nil schema is {"type":"object"}. Each
// schema is converted once (see internal/schemacache); the map is shared
// and only read.
func toolParameters(s *jsonschema.Schema) (map[string]any, error) {
	if s == nil {
		return map[string]any{"type": "object"}, nil
	}
	return parameterCache.Get(s)
}

var parameterCache = schemacache.New(func(s *jsonschema.Schema) (map[string]any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		out[k] = v
	}
	if len(out) == 0 {
		out["type"] = json.RawMessage(`"object"`)
	}
	return out, nil
})

// wireIDs returns the tool call ids sent for the calls of the reply at
// message index msg: a call's own id when it is non-empty and unique in the
// reply, otherwise "call_<msg>_<position>". The APIs require an id on every
// call and pair results with calls by id; deriving it from positions keeps
// a call and its result paired in every request built from the same
// conversation.
func wireIDs(msg int, calls []toolgate.ToolCall) []string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		unique := c.ID != ""
		for j := range calls {
			if j != i && calls[j].ID == c.ID {
				unique = false
				break
			}
		}
		if unique {
			ids[i] = c.ID
		} else {
			ids[i] = "call_" + strconv.Itoa(msg) + "_" + strconv.Itoa(i)
		}
	}
	return ids
}

// resultIDs returns the ids sent for the results of a tool message at
// message index msg, given the calls (and their wire ids) of the reply it
// answers. Results answer the reply's calls in order; a result whose call
// id does not match the call at its position is paired by id instead.
func resultIDs(msg int, calls []toolgate.ToolCall, ids []string, results []toolgate.ToolResult) []string {
	out := make([]string, len(results))
	for j, r := range results {
		switch {
		case j < len(calls) && calls[j].ID == r.CallID:
			out[j] = ids[j]
		case r.CallID != "":
			out[j] = r.CallID
			for k := range calls {
				if calls[k].ID == r.CallID {
					out[j] = ids[k]
					break
				}
			}
		case j < len(calls):
			out[j] = ids[j]
		default:
			out[j] = "call_" + strconv.Itoa(msg) + "_" + strconv.Itoa(j)
		}
	}
	return out
}

// wrapErr turns an SDK error into the error Generate and Stream return.
func wrapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("openai: %w", cerr)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("openai: %w", err)
	}
	var me *provider.Error
	if errors.As(err, &me) {
		return err
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		var wait time.Duration
		if apiErr.Response != nil {
			wait = retryafter.Header(apiErr.Response.Header, time.Now())
		}
		return &provider.Error{
			Provider:   "openai",
			Kind:       modelerr.KindForStatus(apiErr.StatusCode),
			StatusCode: apiErr.StatusCode,
			Message:    apiErr.Message,
			Err:        err,
			RetryAfter: wait,
		}
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var v struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &v)
		code, _ := v.Error.Code.(string)
		kind := kindForCode(code)
		if kind == provider.KindOther {
			kind = kindForCode(v.Error.Type)
		}
		return &provider.Error{Provider: "openai", Kind: kind, Message: v.Error.Message, Err: err}
	}
	return &provider.Error{Provider: "openai", Kind: provider.KindOther, Message: err.Error(), Err: err}
}

// kindForCode classifies an error reported inside a successful HTTP answer
// (a stream's error event, a failed response) by its code.
func kindForCode(code string) provider.ErrorKind {
	switch code {
	case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota":
		return provider.KindRateLimit
	case "server_error", "api_error", "internal_error", "server_overloaded", "overloaded_error":
		return provider.KindServer
	case "invalid_request_error", "invalid_prompt", "context_length_exceeded", "invalid_request":
		return provider.KindBadRequest
	case "authentication_error", "invalid_api_key", "permission_error":
		return provider.KindAuth
	}
	return provider.KindOther
}

// errMalformed reports an answer that does not have the documented shape.
func errMalformed(format string, args ...any) error {
	return &provider.Error{Provider: "openai", Kind: provider.KindOther, Message: fmt.Sprintf(format, args...)}
}

// rawArguments returns a call's arguments text: the JSON string's value, or
// the raw JSON when a server sent the arguments as an object.
func rawArguments(s, raw string) string {
	if s == "" && raw != "" && raw != "null" && raw[0] != '"' {
		return raw
	}
	return s
}
