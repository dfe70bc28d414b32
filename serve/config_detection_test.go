package serve_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/serve"
)

const privacyBlock = "\t\tprivacy:\n\t\t\tenabled: true\n\t\t\tvault_key_env: TG_TEST_VAULT_KEY\n\t\t\toutput: tokens\n"

// TestConfigDetection: the detection settings of an agent's privacy guard
// are checked when the file is loaded and built into its scanner.
func TestConfigDetection(t *testing.T) {
	t.Setenv("TG_TEST_VAULT_KEY", strings.Repeat("5a", 32))
	for _, tc := range []struct {
		name, detection string
		paths           []string // problem paths; nil: valid
	}{
		{"defaults", "", nil},
		{"embedded types, analyzer, min score", "\t\t\tdetection:\n\t\t\t\tembedded: [PERSON, ADDRESS]\n\t\t\t\tmin_score: 0.6\n\t\t\t\tanalyzers:\n\t\t\t\t\t- url: http://127.0.0.1:1/analyze\n\t\t\t\t\t  entities: [PERSON, GPE]\n\t\t\t\t\t  timeout: 2s\n\t\t\t\t\t  best_effort: true\n\t\t\t\t\t  labels: {GPE: LOCATION}\n", nil},
		{"embedded off", "\t\t\tdetection:\n\t\t\t\tembedded: [none]\n", nil},
		{"unknown embedded type", "\t\t\tdetection:\n\t\t\t\tembedded: [PERSON, EMAIL_ADDRESS]\n", []string{"agents.flights.privacy.detection.embedded[1]"}},
		{"none with types", "\t\t\tdetection:\n\t\t\t\tembedded: [none, PERSON]\n", []string{"agents.flights.privacy.detection.embedded[0]"}},
		{"bad score", "\t\t\tdetection:\n\t\t\t\tmin_score: 1.5\n", []string{"agents.flights.privacy.detection.min_score"}},
		{"bad analyzer", "\t\t\tdetection:\n\t\t\t\tanalyzers:\n\t\t\t\t\t- url: ftp://x/analyze\n\t\t\t\t\t  timeout: -1s\n\t\t\t\t\t  labels: {GPE: ''}\n", []string{"agents.flights.privacy.detection.analyzers[0].url", "agents.flights.privacy.detection.analyzers[0].timeout", "agents.flights.privacy.detection.analyzers[0].labels"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(validConfig, "\t\trequester_roles", privacyBlock+tc.detection+"\t\trequester_roles", 1)
			fc, err := serve.LoadConfig(writeConfig(t, text))
			if err == nil {
				var closeStore func() error
				_, closeStore, err = serve.Build(context.Background(), fc, nil)
				if err == nil {
					closeStore()
				}
			}
			var ce *serve.ConfigError
			switch {
			case tc.paths == nil && err != nil:
				t.Fatalf("got %v, want a valid config", err)
			case tc.paths != nil && !errors.As(err, &ce):
				t.Fatalf("got %v, want a *ConfigError", err)
			case tc.paths != nil:
				var got []string
				for _, p := range ce.Problems {
					got = append(got, p.Path)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.paths) {
					t.Errorf("problems at %v, want %v\n%v", got, tc.paths, err)
				}
			}
		})
	}
}
