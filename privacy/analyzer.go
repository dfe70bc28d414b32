package privacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// AnalyzerOptions configure an [Analyzer]. The zero value (or nil) means
// the defaults given with each field.
type AnalyzerOptions struct {
	// Name names the analyzer in errors; "" means the host of its URL.
	Name string
	// HTTPClient sends the requests; nil means a client of its own.
	HTTPClient *http.Client
	// Timeout bounds each attempt; 0 means 5 seconds.
	Timeout time.Duration
	// Retries is the number of attempts after the first one, made after a
	// timeout, a transport error, a 429 or a 5xx status; 0 means 2, a
	// negative value means none.
	Retries int
	// Backoff is the wait before the first retry, doubled for each further
	// one; 0 means 100 milliseconds.
	Backoff time.Duration
	// MaxResponseBytes caps the size of a response body; 0 means 1 MiB.
	MaxResponseBytes int64
	// Language is the language code sent; "" means "en".
	Language string
	// Entities restricts the labels asked for; nil means all.
	Entities []string
	// ScoreThreshold is sent as score_threshold when not 0.
	ScoreThreshold float64
	// Labels maps labels of the analyzer to types, beyond the labels that
	// equal a type constant of this package (which map to themselves). Any
	// other label maps to [Generic].
	Labels map[string]EntityType
	// BestEffort makes a failing analyzer report no findings instead of
	// failing the scan; false means fail closed: the scan, and so the
	// request, fails.
	BestEffort bool
	// OnError, when not nil, is called with the error each time a
	// best-effort analyzer fails (to log it; the error holds no text).
	OnError func(error)
}

// Analyzer is a recognizer that calls an external analyzer speaking
// Presidio's /analyze protocol, for names, places and other values that
// need a language model. It posts {"text", "language", "entities",
// "score_threshold"} and reads a JSON array of {"entity_type", "start",
// "end", "score"} whose offsets count Unicode code points; fields beyond
// those are ignored, while a body that is not such an array, or a span
// outside the text, is an error.
//
// An Analyzer is immutable and safe for concurrent use.
type Analyzer struct {
	url  string
	opts AnalyzerOptions
}

// NewAnalyzer returns an analyzer posting to endpoint (the full URL of
// /analyze); opts may be nil. It panics when the options are invalid (see
// [AnalyzerOptions.Check]): these are programming errors.
func NewAnalyzer(endpoint string, opts *AnalyzerOptions) *Analyzer {
	a := &Analyzer{url: endpoint}
	if opts != nil {
		a.opts = *opts
	}
	if err := a.opts.Check(); err != nil {
		panic(err.Error())
	}
	o := &a.opts
	if o.Name == "" {
		if u, err := url.Parse(endpoint); err == nil {
			o.Name = u.Host
		}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 2
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff == 0 {
		o.Backoff = 100 * time.Millisecond
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = 1 << 20
	}
	if o.Language == "" {
		o.Language = "en"
	}
	return a
}

// Check reports what is wrong with the options, or nil: a negative
// duration or size, or a score threshold that is not a number in [0, 1].
// [NewAnalyzer] panics on such options.
func (o *AnalyzerOptions) Check() error {
	switch {
	case o.Timeout < 0 || o.Backoff < 0:
		return errors.New("privacy: AnalyzerOptions has a negative Timeout or Backoff")
	case o.MaxResponseBytes < 0:
		return errors.New("privacy: AnalyzerOptions.MaxResponseBytes is negative")
	case !validScore(o.ScoreThreshold):
		return fmt.Errorf("privacy: AnalyzerOptions.ScoreThreshold %v is not a number in [0, 1]", o.ScoreThreshold)
	}
	return nil
}

type analyzeRequest struct {
	Text           string   `json:"text"`
	Language       string   `json:"language"`
	Entities       []string `json:"entities,omitempty"`
	ScoreThreshold float64  `json:"score_threshold,omitempty"`
}

type analyzeResult struct {
	EntityType *string  `json:"entity_type"`
	Start      *int     `json:"start"`
	End        *int     `json:"end"`
	Score      *float64 `json:"score"`
}

// errRetry marks an attempt that may be retried.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

// Recognize implements [Recognizer].
func (a *Analyzer) Recognize(ctx context.Context, text string, dst []Finding) ([]Finding, error) {
	if text == "" {
		return dst, nil
	}
	body, err := json.Marshal(analyzeRequest{Text: text, Language: a.opts.Language, Entities: a.opts.Entities, ScoreThreshold: a.opts.ScoreThreshold})
	if err != nil {
		return dst, err
	}
	var (
		results []analyzeResult
		status  int
	)
	attempts := 0
	backoff := a.opts.Backoff
	for {
		attempts++
		results, status, err = a.attempt(ctx, body)
		var re errRetry
		if err == nil || !errors.As(err, &re) || attempts > a.opts.Retries || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff *= 2
	}
	if err == nil {
		var n int
		if dst, n, err = a.convert(text, results, dst); err != nil {
			dst = dst[:len(dst)-n]
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		aerr := &AnalyzerError{Name: a.opts.Name, Attempts: attempts, StatusCode: status, Err: unwrapRetry(err)}
		if a.opts.BestEffort {
			if a.opts.OnError != nil {
				a.opts.OnError(aerr)
			}
			return dst, nil
		}
		return dst, aerr
	}
	return dst, nil
}

func unwrapRetry(err error) error {
	var re errRetry
	if errors.As(err, &re) {
		return re.err
	}
	return err
}

// attempt makes one request.
func (a *Analyzer) attempt(ctx context.Context, body []byte) ([]analyzeResult, int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, errors.New("invalid analyzer URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, errRetry{errors.New("timeout")}
		}
		// The error of the transport may quote the URL, never the body.
		return nil, 0, errRetry{errors.New("transport error")}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, resp.StatusCode, errRetry{fmt.Errorf("status %d", resp.StatusCode)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("status %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.opts.MaxResponseBytes+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, resp.StatusCode, errRetry{errors.New("timeout reading the response")}
		}
		return nil, resp.StatusCode, errRetry{errors.New("error reading the response")}
	}
	if int64(len(data)) > a.opts.MaxResponseBytes {
		return nil, resp.StatusCode, fmt.Errorf("response larger than %d bytes", a.opts.MaxResponseBytes)
	}
	var results []analyzeResult
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&results); err != nil || results == nil && !bytes.Equal(bytes.TrimSpace(data), []byte("[]")) {
		return nil, resp.StatusCode, errors.New("response is not a JSON array of results")
	}
	if dec.More() {
		return nil, resp.StatusCode, errors.New("response has data after the JSON array")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, resp.StatusCode, errors.New("response has data after the JSON array")
	}
	return results, resp.StatusCode, nil
}

// convert appends the results as findings with byte offsets. It returns
// the number of findings appended.
func (a *Analyzer) convert(text string, results []analyzeResult, dst []Finding) ([]Finding, int, error) {
	// byteAt[k] is the byte offset of code point k; byteAt[n] = len(text).
	byteAt := make([]int, 0, len(text)+1)
	for i := range text {
		byteAt = append(byteAt, i)
	}
	byteAt = append(byteAt, len(text))
	n0 := len(dst)
	for _, r := range results {
		if r.EntityType == nil || r.Start == nil || r.End == nil || r.Score == nil {
			return dst, len(dst) - n0, errors.New("result without entity_type, start, end or score")
		}
		s, e := *r.Start, *r.End
		if s < 0 || e > len(byteAt)-1 || s >= e {
			return dst, len(dst) - n0, errors.New("result span outside the text")
		}
		if !validScore(*r.Score) {
			return dst, len(dst) - n0, errors.New("result with a score that is not a number in [0, 1]")
		}
		dst = append(dst, Finding{Start: byteAt[s], End: byteAt[e], Type: a.label(*r.EntityType), Score: *r.Score})
	}
	return dst, len(dst) - n0, nil
}

func (a *Analyzer) label(l string) EntityType {
	if t, ok := a.opts.Labels[l]; ok {
		return t
	}
	for _, t := range knownTypes {
		if string(t) == l {
			return t
		}
	}
	return Generic
}
