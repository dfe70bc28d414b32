package gemini

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
)

// TestLive runs a turn with a tool call against the real API. It runs only
// when GEMINI_API_KEY or GOOGLE_API_KEY is set; GEMINI_TEST_MODEL names the
// model (default gemini-2.5-flash).
func TestLive(t *testing.T) {
	if os.Getenv("GEMINI_API_KEY") == "" && os.Getenv("GOOGLE_API_KEY") == "" {
		t.Skip("neither GEMINI_API_KEY nor GOOGLE_API_KEY is set: skipping the live test")
	}
	name := os.Getenv("GEMINI_TEST_MODEL")
	if name == "" {
		name = "gemini-2.5-flash"
	}
	m, err := FromEnv(name)
	if err != nil {
		t.Fatal(err)
	}
	type in struct {
		City string `json:"city"`
	}
	called := 0
	tool := toolgate.NewToolFor("get_weather", "The current weather in a city.",
		func(_ context.Context, _ *toolgate.ToolRequest, v in) (string, error) {
			called++
			return "It is 21 degrees and sunny in " + v.City + ".", nil
		}, nil)
	client := toolgate.NewClient(m, []*toolgate.Tool{tool}, nil)
	for _, stream := range []bool{false, true} {
		p := &toolgate.CallParams{Input: "What is the weather in Oslo? Use the tool, then answer in one sentence."}
		var resp *toolgate.Response
		if stream {
			resp, err = toolgate.Collect(client.Stream(t.Context(), p))
		} else {
			resp, err = client.Call(t.Context(), p)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Text(), "21") || resp.Usage.InputTokens == 0 {
			t.Errorf("stream=%v: answer %q, usage %+v", stream, resp.Text(), resp.Usage)
		}
	}
	if called < 2 {
		t.Errorf("the tool ran %d times, want 2", called)
	}
}
