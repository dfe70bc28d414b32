package toolgate_test

import (
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	toolgatetest.TestStore(t, func(*testing.T) toolgate.ConversationStore {
		return toolgate.NewMemoryStore()
	})
}

func TestZeroMemoryStoreConformance(t *testing.T) {
	toolgatetest.TestStore(t, func(*testing.T) toolgate.ConversationStore {
		return new(toolgate.MemoryStore)
	})
}
