package openai_test

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/openai"
)

// TestLive runs a gated tool call against the real API, in both API modes,
// when OPENAI_API_KEY is set. OPENAI_MODEL picks the model (default
// gpt-4.1-mini); OPENAI_BASE_URL points it at a compatible server.
func TestLive(t *testing.T) {
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
		t.Skip("live test: set OPENAI_API_KEY (and optionally OPENAI_MODEL, OPENAI_BASE_URL) to run it")
	}
	modelName := os.Getenv("OPENAI_MODEL")
	if modelName == "" {
		modelName = "gpt-4.1-mini"
	}
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			name := api.String()
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				model, err := openai.New(&openai.Options{Model: modelName, APIKey: key, BaseURL: os.Getenv("OPENAI_BASE_URL"), API: api})
				if err != nil {
					t.Fatal(err)
				}
				client := toolgate.NewClient(model, []*toolgate.Tool{weatherTool(), bookTool()},
					&toolgate.ClientOptions{SystemPrompt: "Use the tools. Call book_hotel for every booking request."})
				ctx := t.Context()
				call := func(p *toolgate.CallParams) (*toolgate.Response, error) {
					if stream {
						return toolgate.Collect(client.Stream(ctx, p))
					}
					return client.Call(ctx, p)
				}
				resp, err := call(&toolgate.CallParams{ConversationID: "live", Input: "Book a hotel in Oslo."})
				if err != nil {
					t.Fatal(err)
				}
				if !resp.Paused() {
					t.Fatalf("got %q without a pause, want a paused book_hotel call", resp.Text())
				}
				decisions := toolgate.DenyAll(resp.Message(), "The user cancelled the booking.")
				p := &toolgate.ResumeTurnParams{PauseID: resp.PauseID, ConversationID: "live", Decisions: decisions}
				resp, err = fakeapi.Resume(ctx, client, p, stream)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text() == "" || resp.Usage.InputTokens == 0 {
					t.Errorf("got text %q, usage %+v; want an answer with usage", resp.Text(), resp.Usage)
				}
			})
		}
	}
}
