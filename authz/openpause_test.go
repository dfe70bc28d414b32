package authz_test

import (
	"testing"

	"github.com/toolgate/toolgate"
)

// openPauseID returns the id of the open pause of conversation id in c's
// store, or "" when it has none (a resumption then fails with
// toolgate.ErrNoOpenPause, as it does for a pause that is gone).
func openPauseID(tb testing.TB, c *toolgate.Client, id string) string {
	tb.Helper()
	conv, err := c.Store().Load(tb.Context(), id)
	if err != nil {
		tb.Fatalf("loading conversation %q: %v", id, err)
	}
	if conv.Pause == nil {
		return ""
	}
	return conv.Pause.ID
}
