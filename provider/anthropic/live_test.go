package anthropic

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// TestLive runs a turn with a tool call against the real API. It runs only
// when ANTHROPIC_API_KEY is set; ANTHROPIC_TEST_MODEL names the model
// (default claude-haiku-4-5).
func TestLive(t *testing.T) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		t.Skip("ANTHROPIC_API_KEY is not set: skipping the live test")
	}
	name := os.Getenv("ANTHROPIC_TEST_MODEL")
	if name == "" {
		name = "claude-haiku-4-5"
	}
	m, err := FromEnv(name)
	if err != nil {
		t.Fatal(err)
	}
	fakeapi.LiveTurn(t, m)
}
