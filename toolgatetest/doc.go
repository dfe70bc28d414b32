// Package toolgatetest holds conformance kits: tests that every
// implementation of a toolgate interface runs to show that it keeps the
// contract, in the manner of [testing/slogtest].
//
// A conversation store runs [TestStore] from one of its tests, with a
// function that returns a new, empty store for each subtest:
//
//	func TestStore(t *testing.T) {
//		toolgatetest.TestStore(t, func(t *testing.T) toolgate.ConversationStore {
//			s, err := mystore.Open(t.Context(), filepath.Join(t.TempDir(), "db"), nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The kit checks behaviour only through the public interface, so a store
// that passes it can replace the in-memory store
// ([github.com/toolgate/toolgate/store/memory.Store]) anywhere.
package toolgatetest
