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

// RecognizerError reports that a recognizer failed: it returned an error,
// panicked, or reported a finding with an invalid span or a score that is
// not a number in [0, 1]. The scan fails (fail closed). It names the
// recognizer by its position in [ScannerOptions.Recognizers] and its Go
// type, never the text scanned, the panic value or the text of the
// recognizer's own error, which may quote what it read.
type RecognizerError struct {
	// Index is the recognizer's position in the scanner's recognizers; -1 for
	// the fused built-in recognizers.
	Index int
	// Recognizer is the recognizer's Go type, such as "*privacy.Rule".
	Recognizer string
	// Reason is "error", "panic", "score" or "span".
	Reason string
	// Err is the recognizer's error for Reason "error", kept for
	// [errors.Is] and [errors.As]; Error does not print it.
	Err error
}

func (e *RecognizerError) Error() string {
	switch e.Reason {
	case "panic":
		return fmt.Sprintf("privacy: recognizer %d (%s) panicked", e.Index, e.Recognizer)
	case "score":
		return fmt.Sprintf("privacy: recognizer %d (%s) reported a score that is not a number in [0, 1]", e.Index, e.Recognizer)
	case "span":
		return fmt.Sprintf("privacy: recognizer %d (%s) reported a span outside the text", e.Index, e.Recognizer)
	}
	return fmt.Sprintf("privacy: recognizer %d (%s) failed", e.Index, e.Recognizer)
}

func (e *RecognizerError) Unwrap() error { return e.Err }
