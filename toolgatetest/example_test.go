package toolgatetest_test

import (
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

// A store's own tests run the kit with a constructor of empty stores; this
// is how the in-memory store is checked.
func ExampleTestStore() {
	testMemoryStore := func(t *testing.T) {
		toolgatetest.TestStore(t, func(t *testing.T) toolgate.ConversationStore {
			return memory.New()
		})
	}
	_ = testMemoryStore // run as: func TestMemoryStore(t *testing.T) { testMemoryStore(t) }
}
