// Package modelerr classifies the HTTP answers of model providers for the
// adapters of package provider.
package modelerr

import "github.com/toolgate/toolgate/provider"

// KindForStatus returns the kind of a provider failure answered with the
// HTTP status code: 429 is a rate limit, 401 and 403 an authentication
// failure, other 4xx a bad request, 5xx a server error, and anything else
// (0 when no answer was received) is [provider.KindOther].
func KindForStatus(code int) provider.ErrorKind {
	switch {
	case code == 429:
		return provider.KindRateLimit
	case code == 401 || code == 403:
		return provider.KindAuth
	case code >= 500 && code <= 599:
		return provider.KindServer
	case code >= 400 && code <= 499:
		return provider.KindBadRequest
	}
	return provider.KindOther
}
