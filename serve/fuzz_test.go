package serve_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/serve"
)

// FuzzParseConfig checks that no file makes the configuration decoder
// panic, and that a refused file comes with at least one problem.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte("agents: {a: {model: {provider: openai, name: 1.10}, tools: [bookFlight, bookFlight]}}\nstore: {sqlite: x}\n"))
	f.Add([]byte("a: &a [*a, *a]\nagents: *a\n"))
	f.Add([]byte("authentication:\n  oidc: {issuer: i, clock_skew: 1m, algorithms: [none]}\n"))
	f.Add([]byte("--- 1\n--- 2\n"))
	f.Add([]byte(strings.ReplaceAll(httpToolConfig, "\t", "  ")))
	f.Add([]byte("agents: {a: {http_tools: [{name: t, url: 'https://x/{a}', input_schema: {type: object, properties: {a: &s {items: *s}}}, tls: {ca_file: /dev/null}}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := serve.ParseConfig("fuzz/serve.yaml", data)
		var ce *serve.ConfigError
		if err != nil && (!errors.As(err, &ce) || len(ce.Problems) == 0) {
			t.Fatalf("got %v, want a *ConfigError with problems", err)
		}
	})
}
