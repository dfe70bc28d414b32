package privacy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidJSON is returned (wrapped) by the JSON rewriting methods when the
// payload is not valid JSON. The error never quotes the payload.
var ErrInvalidJSON = errors.New("privacy: payload is not valid JSON")

// LimitError reports that an input exceeded one of the [Limits]. It names
// the limit and its value, never the input.
type LimitError struct {
	// Limit is "bytes", "depth", "nodes" or "findings".
	Limit string
	// Max is the configured maximum that was exceeded.
	Max int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("privacy: input exceeds the %s limit (%d)", e.Limit, e.Max)
}

// BlockedError is returned by [ModeBlock] when the text holds personal data
// that is not in the vault already. It names the types and the number of
// values, never the values.
type BlockedError struct {
	Types []EntityType // sorted, unique
	Count int
}

func (e *BlockedError) Error() string {
	ss := make([]string, len(e.Types))
	for i, t := range e.Types {
		ss[i] = string(t)
	}
	return fmt.Sprintf("privacy: output blocked: %d new value(s) of type %s", e.Count, strings.Join(ss, ","))
}

// AnalyzerError reports that an external analyzer failed (after its
// retries). It carries the status code and the cause, never the text sent
// or the body received.
type AnalyzerError struct {
	// Name is the analyzer's name (its [AnalyzerOptions.Name]).
	Name string
	// Attempts is the number of requests made.
	Attempts int
	// StatusCode is the last HTTP status, 0 when there was no response.
	StatusCode int
	// Err is the cause: a timeout, a transport error, a decoding error.
	Err error
}

func (e *AnalyzerError) Error() string {
	s := fmt.Sprintf("privacy: analyzer %q failed after %d attempt(s)", e.Name, e.Attempts)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (last status %d)", e.StatusCode)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *AnalyzerError) Unwrap() error { return e.Err }
