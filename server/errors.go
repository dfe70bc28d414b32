package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolgate/toolgate/provider"
)

// The error codes of the API: the "error" field of every error body. Their
// values never change.
const (
	codeInvalidJSON      = "invalid_json"       // 400: not the JSON value expected
	codeUnknownField     = "unknown_field"      // 400: a field the endpoint does not take
	codeInvalidRequest   = "invalid_request"    // 400: well-formed but unusable (empty input)
	codeUnauthorized     = "unauthorized"       // 401: no or unknown API key
	codeForbidden        = "forbidden"          // 403: the caller's roles do not allow it
	codeOwnCall          = "own_call"           // 403: the requester may not decide their own call
	codeNotFound         = "not_found"          // 404: no such conversation (or not visible) or endpoint
	codePauseNotFound    = "pause_not_found"    // 404: the pause is not the open one and was not decided here
	codeMethodNotAllowed = "method_not_allowed" // 405
	codeAlreadyDecided   = "already_decided"    // 409: the pause was decided (or is being decided)
	codePauseOpen        = "pause_open"         // 409: new input while a pause waits
	codeConflict         = "conflict"           // 409: a concurrent turn on the conversation
	codeExpired          = "expired"            // 409: the pause expired before it was decided
	codeBodyTooLarge     = "body_too_large"     // 413
	codeUnknownAgent     = "unknown_agent"      // 422: no agent of that name
	codeInvalidDecisions = "invalid_decisions"  // 422: decisions break a rule; "problem" says which
	codeInternal         = "internal"           // 500
	codeModelError       = "model_error"        // 502: the model provider failed; "kind" says how
	codeClosed           = "unavailable"        // 503: the server is closed
)

// errorJSON is the body of every error response.
type errorJSON struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// modelErrorJSON is the body of a 502 for a model provider's failure.
type modelErrorJSON struct {
	errorJSON
	// Kind is the [provider.ErrorKind]: rate_limit, auth,
	// bad_request, server or other.
	Kind provider.ErrorKind `json:"kind"`
	// Provider names the provider, such as "openai".
	Provider string `json:"provider,omitempty"`
	// ProviderStatus is the provider's HTTP status; 0, omitted, when it
	// sent no answer.
	ProviderStatus int `json:"provider_status,omitempty"`
}

// modelErrorMessages say, by kind, what a model failure means to the
// caller. The provider's own message is logged, not answered: it may name
// the service's account.
var modelErrorMessages = map[provider.ErrorKind]string{
	provider.KindRateLimit:  "the model provider's rate limit was reached; retry later",
	provider.KindAuth:       "the model provider refused the service's credentials",
	provider.KindBadRequest: "the model provider refused the request",
	provider.KindServer:     "the model provider failed; retry later",
	provider.KindOther:      "the model call failed",
}

// modelError returns the body answering err when it is a model provider's
// failure.
func modelError(err error) (*modelErrorJSON, bool) {
	var me *provider.Error
	if !errors.As(err, &me) {
		return nil, false
	}
	msg, ok := modelErrorMessages[me.Kind]
	if !ok {
		msg = modelErrorMessages[provider.KindOther]
	}
	return &modelErrorJSON{errorJSON: errorJSON{Error: codeModelError, Message: msg}, Kind: me.Kind, Provider: me.Provider, ProviderStatus: me.StatusCode}, true
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorJSON{Error: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Answers hold conversations, pauses and decisions: no cache keeps
	// them.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
