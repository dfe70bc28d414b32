package provider

import (
	"errors"
	"testing"
)

// TestErrorIs: each kind matches its own sentinel only; KindOther none.
func TestErrorIs(t *testing.T) {
	sentinels := map[ErrorKind]error{
		KindRateLimit:  ErrRateLimited,
		KindAuth:       ErrAuth,
		KindBadRequest: ErrBadRequest,
		KindServer:     ErrServer,
	}
	for _, kind := range []ErrorKind{KindRateLimit, KindAuth, KindBadRequest, KindServer, KindOther, "unknown"} {
		e := &Error{Provider: "p", Kind: kind}
		for k, s := range sentinels {
			if got, want := errors.Is(e, s), k == kind; got != want {
				t.Errorf("kind %q: errors.Is(%v) = %v, want %v", kind, s, got, want)
			}
		}
	}
}

// TestErrorMessage: the message names provider, kind and status, and falls
// back to the SDK's error; Unwrap reaches it.
func TestErrorMessage(t *testing.T) {
	sdk := errors.New("connection reset")
	for _, tc := range []struct {
		e    *Error
		want string
	}{
		{&Error{Provider: "openai", Kind: KindServer, StatusCode: 503, Message: "overloaded", Err: sdk}, "toolgate: openai: server error (HTTP 503): overloaded"},
		{&Error{Provider: "gemini", Kind: KindOther, Err: sdk}, "toolgate: gemini: other error: connection reset"},
		{&Error{Provider: "anthropic", Kind: KindAuth, StatusCode: 401}, "toolgate: anthropic: auth error (HTTP 401)"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	if e := (&Error{Kind: KindOther, Err: sdk}); !errors.Is(e, sdk) {
		t.Error("errors.Is does not reach the SDK's error")
	}
}
