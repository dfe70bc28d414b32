package provider_test

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/toolgate/toolgate/provider"
)

// An adapter of your own reports a provider's failure as an [*provider.Error];
// a program asks for its kind with errors.Is.
func Example() {
	err := fmt.Errorf("turn: %w", &provider.Error{
		Provider:   "acme",
		Kind:       provider.KindRateLimit,
		StatusCode: http.StatusTooManyRequests,
		Message:    "slow down",
	})
	fmt.Println(errors.Is(err, provider.ErrRateLimited), errors.Is(err, provider.ErrServer))
	var pe *provider.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Kind, pe.StatusCode)
	}
	fmt.Println(err)
	// Output:
	// true false
	// rate_limit 429
	// turn: toolgate: acme: rate_limit error (HTTP 429): slow down
}
