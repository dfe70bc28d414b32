package serve_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/serve"
)

// openAIConfig is a file with one agent on an OpenAI-compatible server;
// BASE is replaced by a base_url line or removed.
const openAIConfig = `agents:
	chat:
		model: {provider: openai, name: local-model, api_key_env: TG_TEST_OPENAI_KEY BASE}
store:
	sqlite: data/toolgate.db
authentication:
	api_keys:
		- sha256: 84f71c9ac07c9c3ab0d2c54334bcf5cab957f375e87468b71092eacc65ffed75
			principal: {id: alice, roles: [traveller]}
`

// fakeOpenAI is an OpenAI-compatible server answering every chat
// completion with text, and reporting the path and key of each request.
func fakeOpenAI(t *testing.T, text string) (*httptest.Server, <-chan string) {
	t.Helper()
	seen := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seen <- r.URL.Path + " " + r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"local-model","choices":[{"index":0,"message":{"role":"assistant","content":"`+text+`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

// TestOpenAIBaseURL checks that an agent reaches the OpenAI-compatible
// server of base_url, or of OPENAI_BASE_URL when the file gives none, as
// toolgate demo does; base_url wins over the variable.
func TestOpenAIBaseURL(t *testing.T) {
	t.Setenv("TG_TEST_OPENAI_KEY", "sk-local")
	fromFile, fileSeen := fakeOpenAI(t, "from the file's server")
	fromEnv, envSeen := fakeOpenAI(t, "from the environment's server")
	for _, tc := range []struct {
		name, base, env, want string
		seen                  <-chan string
	}{
		{"base_url", ", base_url: \"" + fromFile.URL + "/v1\"", "", "from the file's server", fileSeen},
		{"OPENAI_BASE_URL", "", fromEnv.URL + "/v1", "from the environment's server", envSeen},
		{"base_url wins", ", base_url: \"" + fromFile.URL + "/v1\"", fromEnv.URL + "/v1", "from the file's server", fileSeen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", tc.env)
			fc, err := serve.LoadConfig(writeConfig(t, strings.Replace(openAIConfig, " BASE", tc.base, 1)))
			if err != nil {
				t.Fatal(err)
			}
			f := build(t, fc)
			conv := f.must(201, "POST", "/v1/conversations", exampleTravellerKey, `{}`)["id"].(string)
			out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", exampleTravellerKey, `{"input":"hello"}`)
			if out["text"] != tc.want {
				t.Errorf("answer %q, want %q", out["text"], tc.want)
			}
			if got := <-tc.seen; got != "/v1/chat/completions Bearer sk-local" {
				t.Errorf("the server got %q, want the chat completions path with the key", got)
			}
		})
	}
}

func TestOpenAIBaseURLInvalid(t *testing.T) {
	t.Setenv("TG_TEST_OPENAI_KEY", "sk-local")
	for _, tc := range []struct{ base, env, message string }{
		{", base_url: \"localhost:11434\"", "", "base_url: not an http or https URL"},
		{"", "localhost:11434/v1", "OPENAI_BASE_URL: not an http or https URL"},
	} {
		t.Setenv("OPENAI_BASE_URL", tc.env)
		_, err := serve.LoadConfig(writeConfig(t, strings.Replace(openAIConfig, " BASE", tc.base, 1)))
		var ce *serve.ConfigError
		if !errors.As(err, &ce) || ce.Problems[0].Path != "agents.chat.model.base_url" || ce.Problems[0].Message != tc.message {
			t.Errorf("LoadConfig = %v, want %q at agents.chat.model.base_url", err, tc.message)
		}
	}
}
