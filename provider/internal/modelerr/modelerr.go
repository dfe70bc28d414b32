// Package modelerr classifies the HTTP answers of model providers for the
// adapters of package provider.
package modelerr

import "github.com/toolgate/toolgate"

// KindForStatus returns the kind of a provider failure answered with the
// HTTP status code: 429 is a rate limit, 401 and 403 an authentication
// failure, other 4xx a bad request, 5xx a server error, and anything else
// (0 when no answer was received) is [toolgate.ModelErrOther].
func KindForStatus(code int) toolgate.ModelErrorKind {
	switch {
	case code == 429:
		return toolgate.ModelErrRateLimit
	case code == 401 || code == 403:
		return toolgate.ModelErrAuth
	case code >= 500 && code <= 599:
		return toolgate.ModelErrServer
	case code >= 400 && code <= 499:
		return toolgate.ModelErrBadRequest
	}
	return toolgate.ModelErrOther
}
