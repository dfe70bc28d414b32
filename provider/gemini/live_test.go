package gemini

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
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
	fakeapi.LiveTurn(t, m)
}
