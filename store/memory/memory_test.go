package memory_test

import (
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

func TestConformance(t *testing.T) {
	toolgatetest.TestStore(t, func(*testing.T) toolgate.ConversationStore {
		return memory.New()
	})
}

func TestZeroStoreConformance(t *testing.T) {
	toolgatetest.TestStore(t, func(*testing.T) toolgate.ConversationStore {
		return new(memory.Store)
	})
}
