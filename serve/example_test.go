package serve_test

import (
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/serve"
)

// An invalid file is refused with every problem and its position.
func ExampleParseConfig() {
	_, err := serve.ParseConfig("serve.yaml", []byte(`agents:
  flights:
    model: {provider: openia}
store: {sqlite: toolgate.db}
authentication: {api_keys: []}
`))
	var ce *serve.ConfigError
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Printf("%d:%d %s: %s\n", p.Line, p.Column, p.Path, p.Message)
		}
	}
	// Output:
	// 3:23 agents.flights.model.provider: unknown provider "openia" (want openai, anthropic, gemini or scripted-demo)
	// 5:17 authentication: required: api_keys, oidc or both (otherwise nobody can call the service)
}
