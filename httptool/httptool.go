package httptool

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/argcheck"
)

// The defaults of [Options].
const (
	// DefaultTimeout bounds one call when [Options.Timeout] is 0.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes bounds a response body when
	// [Options.MaxResponseBytes] is 0.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultIdempotencyHeader carries the idempotency key when
	// [Options.IdempotencyHeader] is "".
	DefaultIdempotencyHeader = "Idempotency-Key"
	// maxErrorBody bounds the part of an error response's body that the
	// model reads.
	maxErrorBody = 1 << 10
)

// Options describe one HTTP tool. Only Name and URL are required.
type Options struct {
	// Name is the name the model calls the tool by; it must match
	// [toolgate.ValidToolName]. Required.
	Name string
	// Description tells the model what the tool does. "": none.
	Description string
	// InputSchema is the JSON schema of the arguments. The arguments of
	// every call are checked against it before any request is sent; a
	// call that breaks it becomes an error result for the model. nil: any
	// JSON object.
	InputSchema *jsonschema.Schema
	// Metadata is the tool's metadata, such as RequiresConfirmation.
	// Zero: no confirmation, the result goes back to the model.
	Metadata toolgate.ToolMetadata
	// URL is the endpoint, http or https. Its path may hold placeholders
	// such as {id}, each replaced by the argument of that name
	// (path-escaped; a string, number or boolean). Required.
	URL string
	// Method is GET, POST, PUT, PATCH or DELETE. With POST, PUT and PATCH
	// the arguments are the JSON body; with GET and DELETE the arguments
	// that fill no placeholder become query parameters (strings, numbers
	// and booleans as text, others as JSON). "": POST.
	Method string
	// Header is sent with every request, such as an Authorization
	// header. Its values are never logged nor shown to the model. nil:
	// none.
	Header http.Header
	// Timeout bounds one call, from connecting to reading the whole
	// response; past it the call is an error result. 0: [DefaultTimeout].
	// It must not be negative.
	Timeout time.Duration
	// IdempotencyHeader names the header that carries the call's
	// [toolgate.ToolRequest.IdempotencyKey] (calls that paused for a
	// decision have one; it is the same for every attempt at the call), so
	// that the service applies the call's effect once. "-": not sent. "":
	// [DefaultIdempotencyHeader].
	IdempotencyHeader string
	// MaxResponseBytes bounds the body of a response; a larger one is
	// refused and the call is an error result. 0:
	// [DefaultMaxResponseBytes]. It must not be negative.
	MaxResponseBytes int64
	// TLS configures the connections to an https URL. nil: the system's
	// roots, no client certificate.
	TLS *TLS
	// Client sends the requests; TLS must then be nil. Redirects are
	// never followed, whatever its CheckRedirect: a 3xx answer is an
	// error result. nil: a client of the tool's own.
	Client *http.Client
}

// TLS configures the connections of an HTTP tool.
type TLS struct {
	// CAFile is a PEM file of the certificate authorities to trust
	// instead of the system's. "": the system's.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// services that authenticate their clients (mutual TLS). Both or
	// neither. "": no client certificate.
	CertFile, KeyFile string
	// InsecureSkipVerify accepts any server certificate. It is for tests
	// against self-signed servers only: anybody on the path can then read
	// and change the calls. false: certificates are verified.
	InsecureSkipVerify bool
}

// Problem is one problem of [Options].
type Problem struct {
	// Field names the option at fault as a configuration file does:
	// "name", "url", "method", "headers.X-Api-Key", "timeout", "tls.ca_file", ….
	Field string
	// Message says what is wrong.
	Message string
}

// OptionsError is the error of [New] for unusable options: every problem
// found.
type OptionsError struct {
	Problems []Problem
}

func (e *OptionsError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return "httptool: " + strings.Join(parts, "; ")
}

// Errors of a call. Each reaches the model as an error result; none ends
// the turn.
var (
	// ErrTimeout: the call took longer than [Options.Timeout].
	ErrTimeout = errors.New("httptool: timed out")
	// ErrResponseTooLarge: the response body exceeded
	// [Options.MaxResponseBytes]; it was not read.
	ErrResponseTooLarge = errors.New("httptool: response too large")
	// ErrURLArgument: an argument a URL placeholder needs is missing or is
	// not a string, number or boolean.
	ErrURLArgument = errors.New("httptool: bad URL argument")
)

// StatusError is the error of a call answered with a status other than
// 2xx. Body is the start of the response body (at most 1 KiB, valid
// UTF-8), which the model reads with the status.
type StatusError struct {
	StatusCode int
	Body       string
}

func (e *StatusError) Error() string {
	s := "httptool: HTTP " + strconv.Itoa(e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// methods are the methods an HTTP tool may use, and whether they carry
// the arguments as the body.
var methods = map[string]bool{
	http.MethodGet:    false,
	http.MethodDelete: false,
	http.MethodPost:   true,
	http.MethodPut:    true,
	http.MethodPatch:  true,
}

// placeholder matches a URL placeholder such as {id}.
var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Check returns the problems of the options, nil when [New] can build the
// tool from them. It reads the TLS files.
func (o *Options) Check() []Problem {
	_, problems := o.build()
	return problems
}

// tool is an HTTP tool as built.
type tool struct {
	// fixed at creation
	url        string   // the URL template
	params     []string // the placeholders' names, in order of appearance
	method     string
	body       bool // the arguments are the body
	header     http.Header
	timeout    time.Duration
	idemHeader string // "": not sent
	maxBytes   int64
	client     *http.Client
	check      *argcheck.Validator // nil: any object
}

// build checks the options and returns the tool they describe.
func (o *Options) build() (*tool, []Problem) {
	var problems []Problem
	bad := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	t := &tool{method: o.Method, timeout: o.Timeout, maxBytes: o.MaxResponseBytes, idemHeader: o.IdempotencyHeader}
	if !toolgate.ValidToolName(o.Name) {
		bad("name", "want 1 to 64 of the characters A-Z a-z 0-9 _ . -, got %q", o.Name)
	}
	if t.method == "" {
		t.method = http.MethodPost
	}
	body, ok := methods[t.method]
	if !ok {
		bad("method", "want GET, POST, PUT, PATCH or DELETE, got %q", o.Method)
	}
	t.body = body
	t.url = o.URL
	if msg := checkURL(o.URL); msg != "" {
		bad("url", "%s", msg)
	} else {
		for _, m := range placeholder.FindAllStringSubmatch(o.URL, -1) {
			if !slices.Contains(t.params, m[1]) {
				t.params = append(t.params, m[1])
			}
		}
	}
	t.header = http.Header{}
	for _, k := range slices.Sorted(maps.Keys(o.Header)) {
		if !validHeaderName(k) {
			bad("headers."+k, "not a valid header name")
			continue
		}
		for _, v := range o.Header[k] {
			if strings.ContainsAny(v, "\r\n\x00") {
				// The value is not repeated: it may be a secret.
				bad("headers."+k, "the value holds a line break or NUL")
			}
			t.header.Add(k, v)
		}
	}
	switch {
	case t.idemHeader == "-":
		t.idemHeader = ""
	case t.idemHeader == "":
		t.idemHeader = DefaultIdempotencyHeader
	case !validHeaderName(t.idemHeader):
		bad("idempotency_header", "not a valid header name: %q", t.idemHeader)
	}
	if t.idemHeader != "" && t.header.Get(t.idemHeader) != "" {
		bad("idempotency_header", "%s is also one of the headers", t.idemHeader)
	}
	switch {
	case t.timeout < 0:
		bad("timeout", "must not be negative")
	case t.timeout == 0:
		t.timeout = DefaultTimeout
	}
	switch {
	case t.maxBytes < 0:
		bad("max_response_bytes", "must not be negative")
	case t.maxBytes == 0:
		t.maxBytes = DefaultMaxResponseBytes
	}
	if s := o.InputSchema; s != nil {
		if s.Type != "" && s.Type != "object" {
			bad("input_schema", "the arguments are a JSON object: want type object, got %q", s.Type)
		}
		resolved, err := s.Resolve(nil)
		if err != nil {
			bad("input_schema", "%v", strings.TrimPrefix(err.Error(), "jsonschema: "))
		} else {
			t.check = argcheck.Compile(s, resolved)
		}
	}
	switch {
	case o.Client != nil && o.TLS != nil:
		bad("tls", "give TLS settings or a client, not both")
	case o.Client != nil:
		c := *o.Client
		t.client = &c
	default:
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if o.TLS != nil {
			cfg, tp := o.TLS.config(strings.HasPrefix(strings.ToLower(o.URL), "https:"))
			problems = append(problems, tp...)
			tr.TLSClientConfig = cfg
		}
		t.client = &http.Client{Transport: tr}
	}
	if t.client != nil {
		t.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return t, problems
}

// checkURL returns what is wrong with an HTTP tool's URL template, or "".
func checkURL(raw string) string {
	if raw == "" {
		return "required: an http or https URL"
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "not an http or https URL"
	}
	host, _, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(host, "{}") {
		return "placeholders such as {id} may be in the path only"
	}
	u, err := url.Parse(placeholder.ReplaceAllString(raw, "x"))
	switch {
	case err != nil || (strings.ToLower(scheme) != "http" && strings.ToLower(scheme) != "https") || u.Host == "":
		return "not an http or https URL"
	case u.User != nil:
		return "credentials belong in a header, not in the URL"
	case u.Fragment != "":
		return "a URL with a fragment"
	case strings.ContainsAny(placeholder.ReplaceAllString(raw, ""), "{}"):
		return "a brace that is no placeholder: want {name}, name a letter or _ then letters, digits or _"
	}
	return ""
}

// validHeaderName reports whether name is an HTTP header name (an RFC 9110
// token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// config returns the TLS configuration of the settings.
func (s *TLS) config(https bool) (*tls.Config, []Problem) {
	var problems []Problem
	bad := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: "tls." + field, Message: fmt.Sprintf(format, args...)})
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.InsecureSkipVerify}
	if !https {
		bad("", "TLS settings need an https URL")
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			bad("ca_file", "%v", err)
		case !pool.AppendCertsFromPEM(pem):
			bad("ca_file", "%s holds no PEM certificate", s.CAFile)
		default:
			cfg.RootCAs = pool
		}
	}
	switch {
	case (s.CertFile == "") != (s.KeyFile == ""):
		bad("cert_file", "a client certificate needs both cert_file and key_file")
	case s.CertFile != "":
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			bad("cert_file", "%v", err)
		} else {
			cfg.Certificates = []tls.Certificate{cert}
		}
	}
	if s.InsecureSkipVerify && s.CAFile != "" {
		bad("insecure_skip_verify", "with ca_file: certificates are then not verified at all")
	}
	return cfg, problems
}

// New returns the HTTP tool the options describe: a call checks its
// arguments against the input schema, sends one request and returns the
// response body as the text the model reads. A response with a status
// other than 2xx is a [*StatusError], a call past the timeout
// [ErrTimeout], a body over the limit [ErrResponseTooLarge]: each becomes an
// error result for the model, not an error of the turn. The error for
// unusable options is an [*OptionsError]; New never panics on them.
//
// The tool is safe for concurrent use; it keeps the options' values, not
// opts.
func New(opts *Options) (*toolgate.Tool, error) {
	if opts == nil {
		opts = &Options{}
	}
	t, problems := opts.build()
	if len(problems) > 0 {
		return nil, &OptionsError{Problems: problems}
	}
	def := toolgate.ToolDefinition{Name: opts.Name, Description: opts.Description, InputSchema: opts.InputSchema}
	if def.InputSchema == nil {
		def.InputSchema = &jsonschema.Schema{Type: "object"}
	}
	return toolgate.NewTool(def, opts.Metadata, t.call), nil
}

// call runs one call of the tool.
func (t *tool) call(ctx context.Context, req *toolgate.ToolRequest) (string, error) {
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if t.check != nil {
		if err := t.check.Validate(args); err != nil {
			return "", fmt.Errorf("%w: %v", toolgate.ErrInvalidArguments, err)
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil || fields == nil {
		return "", fmt.Errorf("%w: want a JSON object", toolgate.ErrInvalidArguments)
	}
	target, err := t.target(fields)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.timeout, ErrTimeout)
	defer cancel()
	var body io.Reader
	if t.body {
		body = bytes.NewReader(args)
	}
	hr, err := http.NewRequestWithContext(ctx, t.method, target, body)
	if err != nil {
		return "", fmt.Errorf("httptool: %s: %w", t.method, err)
	}
	hr.Header = t.header.Clone()
	if t.body {
		hr.Header.Set("Content-Type", "application/json")
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.1")
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "toolgate-httptool")
	}
	if t.idemHeader != "" && req.IdempotencyKey != "" {
		hr.Header.Set(t.idemHeader, req.IdempotencyKey)
	}
	resp, err := t.client.Do(hr)
	if err != nil {
		return "", t.failure(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBytes+1))
	if err != nil {
		return "", t.failure(ctx, err)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if int64(len(data)) > t.maxBytes {
		if !ok {
			return "", &StatusError{StatusCode: resp.StatusCode, Body: snippet(data)}
		}
		return "", fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, t.maxBytes)
	}
	if !ok {
		return "", &StatusError{StatusCode: resp.StatusCode, Body: snippet(data)}
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), nil
}

// failure returns the error of a request that got no complete answer.
func (t *tool) failure(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return fmt.Errorf("%w after %v", ErrTimeout, t.timeout)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("httptool: %w", err)
}

// target returns the request's URL for the arguments: placeholders filled
// and, without a body, the other arguments as query parameters.
func (t *tool) target(fields map[string]json.RawMessage) (string, error) {
	var fillErr error
	u := placeholder.ReplaceAllStringFunc(t.url, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := scalar(fields[name])
		if !ok && fillErr == nil {
			fillErr = fmt.Errorf("%w: the URL needs the argument %q as a string, number or boolean", ErrURLArgument, name)
		}
		return url.PathEscape(v)
	})
	if fillErr != nil {
		return "", fillErr
	}
	if t.body {
		return u, nil
	}
	q := url.Values{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if slices.Contains(t.params, k) {
			continue
		}
		if v, ok := scalar(fields[k]); ok {
			q.Set(k, v)
		} else if string(fields[k]) != "null" {
			q.Set(k, string(fields[k]))
		}
	}
	if len(q) == 0 {
		return u, nil
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + q.Encode(), nil
}

// scalar returns the text of a JSON string, number or boolean.
func scalar(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case 't', 'f':
		return string(raw), true
	case '[', '{', 'n':
		return "", false
	}
	return string(raw), true // a number
}

// snippet returns the start of an error response's body, as valid UTF-8.
func snippet(data []byte) string {
	if len(data) > maxErrorBody {
		data = data[:maxErrorBody] // a rune cut in two becomes U+FFFD
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(data), "\uFFFD"))
}
