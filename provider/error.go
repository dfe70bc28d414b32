// Package provider holds what the model adapters (provider/openai,
// provider/anthropic, provider/gemini, or one of your own) share: the
// error a provider's failure becomes, classified by kind.
//
// A [toolgate.Model] that calls a provider returns an [*Error] for a
// failure the provider reported, after the SDK's own retries. A program
// asks for the kind with errors.Is and the sentinels below, or reads the
// whole error with errors.As:
//
//	if errors.Is(err, provider.ErrRateLimited) {
//		// slow down
//	}
package provider

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a provider failure. Its values are stable: they
// cross the wire in the service's errors.
type ErrorKind string

// The kinds of [Error].
const (
	KindRateLimit  ErrorKind = "rate_limit"  // 429: slow down and retry later
	KindAuth       ErrorKind = "auth"        // 401/403: bad or missing credentials
	KindBadRequest ErrorKind = "bad_request" // 400/404/413/422: the request is wrong
	KindServer     ErrorKind = "server"      // 5xx: the provider failed
	KindOther      ErrorKind = "other"       // anything else (a cut stream, bad JSON)
)

// Errors matched by an [*Error] of the corresponding kind.
var (
	ErrRateLimited = errors.New("toolgate: model rate limit")
	ErrAuth        = errors.New("toolgate: model authentication failed")
	ErrBadRequest  = errors.New("toolgate: model rejected the request")
	ErrServer      = errors.New("toolgate: model server error")
)

// Error is a failure reported by a model provider, after the provider
// SDK's own retries. Check for one with [errors.As], or for its kind with
// errors.Is and [ErrRateLimited], [ErrAuth], [ErrBadRequest] or
// [ErrServer]. Message is the provider's own message; it never holds
// prompt content.
type Error struct {
	Provider   string
	Kind       ErrorKind
	StatusCode int    // 0 when no HTTP answer was received
	Message    string // the provider's message
	Err        error  // the SDK's error
	// RetryAfter is how long the provider asked to wait before trying
	// again (a Retry-After header, or a retry delay in the error body);
	// 0 when it gave none.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	s := fmt.Sprintf("toolgate: %s: %s error", e.Provider, e.Kind)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	switch {
	case e.Message != "":
		s += ": " + e.Message
	case e.Err != nil:
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the SDK's error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of the error's kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Kind == KindRateLimit
	case ErrAuth:
		return e.Kind == KindAuth
	case ErrBadRequest:
		return e.Kind == KindBadRequest
	case ErrServer:
		return e.Kind == KindServer
	}
	return false
}
