package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/openai"
)

var apis = []openai.API{openai.ChatCompletions, openai.Responses}

// okReply is a successful text answer in the API's format.
func okReply(api openai.API, stream bool) reply {
	switch {
	case api == openai.Responses && stream:
		return sseReply(endClean, evCreated, evText("ok"), evCompleted)
	case api == openai.Responses:
		return jsonReply(200, response("completed", "ok"))
	case stream:
		return sseReply(endDone, chatChunk(`{"content":"ok"}`, "stop"), chatUsageChunk)
	}
	return jsonReply(200, completion("ok", "stop"))
}

// run calls Generate or reads Stream to its end.
func run(ctx context.Context, m *openai.Model, stream bool) (*toolgate.Response, error) {
	if stream {
		return toolgate.Collect(m.Stream(ctx, fullPrompt(false)))
	}
	return m.Generate(ctx, fullPrompt(false))
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		status   int
		kind     provider.ErrorKind
		sentinel error
	}{
		{429, provider.KindRateLimit, provider.ErrRateLimited},
		{500, provider.KindServer, provider.ErrServer},
		{503, provider.KindServer, provider.ErrServer},
		{401, provider.KindAuth, provider.ErrAuth},
		{403, provider.KindAuth, provider.ErrAuth},
		{400, provider.KindBadRequest, provider.ErrBadRequest},
		{404, provider.KindBadRequest, provider.ErrBadRequest},
	}
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			for _, tt := range tests {
				name := api.String() + "/" + http.StatusText(tt.status)
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					msg := "Provider says no (" + http.StatusText(tt.status) + ")."
					s := newServer(t, apiError(tt.status, msg))
					_, err := run(t.Context(), s.model(api), stream)
					var me *provider.Error
					if !errors.As(err, &me) {
						t.Fatalf("got %v, want a *provider.Error", err)
					}
					if me.Provider != "openai" || me.Kind != tt.kind || me.StatusCode != tt.status || me.Message != msg {
						t.Errorf("got %+v, want provider openai, kind %s, status %d, message %q", me, tt.kind, tt.status, msg)
					}
					if !errors.Is(err, tt.sentinel) {
						t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
					}
					var apiErr *sdk.Error
					if !errors.As(err, &apiErr) {
						t.Errorf("the SDK's error is not wrapped")
					}
					if n := len(s.received()); n != 1 {
						t.Errorf("got %d requests with retries off, want 1", n)
					}
				})
			}
		}
	}
}

func TestErrorsHoldNoPromptContent(t *testing.T) {
	s := newServer(t, apiError(400, "Invalid value for 'temperature'."))
	_, err := s.model(openai.ChatCompletions).Generate(t.Context(), fullPrompt(true))
	if err == nil {
		t.Fatal("got no error")
	}
	for _, secret := range []string{"Paris", "terse", "sunny"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds prompt content %q", err, secret)
		}
	}
}

func TestRetries(t *testing.T) {
	// With the SDK's default retries, a 500 is retried; the server asks for
	// an immediate retry so that the test is fast.
	retryNow := func(status int) reply {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After-Ms", "1")
			apiError(status, "try again")(w, r)
		}
	}
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/stream=%v", api, stream), func(t *testing.T) {
				s := newServer(t, retryNow(500), retryNow(429), okReply(api, stream))
				m, err := openai.New(&openai.Options{Model: "gpt-test", BaseURL: s.URL + "/v1", API: api})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := run(t.Context(), m, stream)
				if err != nil {
					t.Fatalf("got %v, want success after retries", err)
				}
				if resp.Text() != "ok" {
					t.Errorf("got text %q, want ok", resp.Text())
				}
				reqs := s.received()
				if len(reqs) != 3 {
					t.Fatalf("got %d requests, want 3", len(reqs))
				}
				for i, r := range reqs {
					if string(r.Body) != string(reqs[0].Body) {
						t.Errorf("retry %d sent a different body", i)
					}
					if got := r.Header.Get("Authorization"); got != "" {
						t.Errorf("got Authorization %q without an API key, want none", got)
					}
				}
			})
		}
	}
	t.Run("exhausted", func(t *testing.T) {
		s := newServer(t, retryNow(500), retryNow(500))
		m, err := openai.New(&openai.Options{Model: "gpt-test", BaseURL: s.URL + "/v1", MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(t.Context(), fullPrompt(true)); !errors.Is(err, provider.ErrServer) {
			t.Errorf("got %v, want provider.ErrServer", err)
		}
		if n := len(s.received()); n != 2 {
			t.Errorf("got %d requests, want 2", n)
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	s := newServer(t)
	url := s.URL
	s.Close()
	m, err := openai.New(&openai.Options{Model: "gpt-test", BaseURL: url, MaxRetries: openai.NoRetries})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(t.Context(), fullPrompt(true))
	var me *provider.Error
	if !errors.As(err, &me) || me.Kind != provider.KindOther || me.StatusCode != 0 {
		t.Errorf("got %v, want a provider.Error of kind other without status", err)
	}
}

// TestStreamCanceled cancels the context while the server holds the stream
// open: the stream must end with the context's error.
func TestStreamCanceled(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			first := chatChunk(`{"content":"Hel"}`, "")
			if api == openai.Responses {
				first = evText("Hel")
			}
			s := newServer(t, holdOpen(first, nil))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var texts []string
			var err error
			for c, e := range s.model(api).Stream(ctx, fullPrompt(false)) {
				if e != nil {
					err = e
					break
				}
				texts = append(texts, c.Text)
				cancel()
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
			if len(texts) != 1 || texts[0] != "Hel" {
				t.Errorf("got texts %q, want [Hel]", texts)
			}
		})
	}
}

// TestStreamBreakClosesConnection stops reading after the first chunk: the
// HTTP response must be closed, which the server sees as a disconnect.
func TestStreamBreakClosesConnection(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			first := chatChunk(`{"content":"Hel"}`, "")
			if api == openai.Responses {
				first = evText("Hel")
			}
			gone := make(chan struct{})
			s := newServer(t, holdOpen(first, gone))
			for c, err := range s.model(api).Stream(t.Context(), fullPrompt(false)) {
				if err != nil {
					t.Fatal(err)
				}
				if c.Text != "Hel" {
					t.Errorf("got %+v, want the first text", c)
				}
				break
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the server still holds the stream open 10s after the consumer stopped")
			}
		})
	}
}

// holdOpen sends one event and then keeps the stream open until the client
// goes away; it then closes gone (when not nil). It gives up after a
// minute, so that a test that failed does not hang in the server's Close.
func holdOpen(event string, gone chan struct{}) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(sseEvent(event)))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			if gone != nil {
				close(gone)
			}
		case <-time.After(time.Minute):
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		opts *openai.Options
		want string // part of the error; "" for success
	}{
		{"nil options", nil, "Model is required"},
		{"no model", &openai.Options{APIKey: "k"}, "Model is required"},
		{"relative base URL", &openai.Options{Model: "m", BaseURL: "localhost:11434/v1"}, "base URL"},
		{"bad scheme", &openai.Options{Model: "m", BaseURL: "ftp://example.com/v1"}, "base URL"},
		{"unparsable base URL", &openai.Options{Model: "m", BaseURL: "http://[::1"}, "base URL"},
		{"credentials in base URL", &openai.Options{Model: "m", BaseURL: "https://user:pw@example.com/v1"}, "base URL"},
		{"unknown API", &openai.Options{Model: "m", API: 7}, "unknown API"},
		{"defaults", &openai.Options{Model: "m"}, ""},
		{"local server", &openai.Options{Model: "qwen3", BaseURL: "http://localhost:11434/v1", API: openai.Responses}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := openai.New(tt.opts)
			if tt.want == "" {
				if err != nil || m == nil {
					t.Fatalf("got %v, %v; want a model", m, err)
				}
				if m.API() != tt.opts.API {
					t.Errorf("got API %v, want %v", m.API(), tt.opts.API)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error about %q", err, tt.want)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := openai.FromEnv("gpt-test"); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("got %v, want an error naming OPENAI_API_KEY", err)
	}

	s := newServer(t, jsonReply(200, completion("ok", "stop")))
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_BASE_URL", s.URL+"/v1")
	m, err := openai.FromEnv("gpt-env")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}}}); err != nil {
		t.Fatal(err)
	}
	req := s.received()[0]
	if got := req.Header.Get("Authorization"); got != "Bearer sk-env" {
		t.Errorf("got Authorization %q, want the key from the environment", got)
	}
	if got := s.body(0)["model"]; got != "gpt-env" {
		t.Errorf("got model %v, want gpt-env", got)
	}
}

func TestNoEnvironment(t *testing.T) {
	// New never reads the environment: neither the key nor the base URL.
	s := newServer(t, jsonReply(200, completion("ok", "stop")))
	t.Setenv("OPENAI_API_KEY", "sk-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-leak")
	m, err := openai.New(&openai.Options{Model: "gpt-test", BaseURL: s.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}}}); err != nil {
		t.Fatal(err)
	}
	h := s.received()[0].Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("the environment leaked into the request: %v", h)
	}
}

func TestBadPrompt(t *testing.T) {
	s := newServer(t)
	for _, api := range apis {
		m := s.model(api)
		if _, err := m.Generate(t.Context(), nil); err == nil {
			t.Errorf("%v: Generate(nil): got no error", api)
		}
		if _, err := collect(m.Stream(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{nil}})); err == nil {
			t.Errorf("%v: Stream with a nil message: got no error", api)
		}
		if _, err := m.Generate(t.Context(), &toolgate.Prompt{Messages: []toolgate.Message{(*toolgate.AssistantMessage)(nil)}}); err == nil {
			t.Errorf("%v: Generate with a typed nil message: got no error", api)
		}
	}
	if n := len(s.received()); n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
}

// TestConcurrent runs rounds in parallel on one model, as the Model
// contract allows; the race detector checks shared state (the converted
// schemas).
func TestConcurrent(t *testing.T) {
	const n = 8
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/stream=%v", api, stream), func(t *testing.T) {
				s := newServer(t)
				for range n {
					s.add(okReply(api, stream))
				}
				m := s.model(api)
				errs := make(chan error, n)
				for range n {
					go func() {
						resp, err := run(t.Context(), m, stream)
						if err == nil && resp.Text() != "ok" {
							err = errors.New("got text " + resp.Text())
						}
						errs <- err
					}()
				}
				for range n {
					select {
					case err := <-errs:
						if err != nil {
							t.Error(err)
						}
					case <-time.After(30 * time.Second):
						t.Fatal("a concurrent call has not returned after 30s")
					}
				}
			})
		}
	}
}

// TestGenerateCanceled cancels the context while the server has not
// answered yet: Generate must return the context's error without waiting
// for the server.
func TestGenerateCanceled(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			defer close(release)
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				select {
				case <-started:
				case <-time.After(30 * time.Second): // Generate has failed otherwise
				}
				cancel()
			}()
			_, err := s.model(api).Generate(ctx, fullPrompt(false))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
		})
	}
}
