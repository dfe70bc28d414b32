package server

import (
	"context"
	"path/filepath"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/records"
	"github.com/toolgate/toolgate/store/sqlite"
)

// TestStoredConversation: the record a new conversation puts in the cache
// is the one SQLite's record store reads back (the one in memory keeps
// empty lists as given, which no check tells apart), and it shares nothing
// with the record it was made from.
func TestStoredConversation(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	onDisk, err := db.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]records.Store{"sqlite": onDisk, "memory": records.NewMemory()}
	owners := func() []toolgate.Principal {
		return []toolgate.Principal{
			{ID: "ada"},
			{ID: "ada", Roles: []string{}, Attributes: map[string]string{}},
			{ID: "bob", Roles: []string{"approver", "traveller"}, Attributes: map[string]string{"team": "ops"}},
		}
	}
	for name, rs := range stores {
		for i, owner := range owners() {
			c := &conversation{ID: newConversationID(), Agent: "flights", Owner: owner, CreatedAt: now()}
			if err := rs.CreateConversation(ctx, c); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := storedConversation(c)
			want, err := rs.Conversation(ctx, c.ID)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var opts []gocmp.Option
			if name == "memory" {
				opts = append(opts, cmpopts.EquateEmpty())
			}
			if diff := gocmp.Diff(want, got, opts...); diff != "" {
				t.Errorf("%s, owner %d: cached record differs from the stored one (-stored +cached):\n%s", name, i, diff)
			}
			if !got.CreatedAt.Equal(want.CreatedAt) || got.CreatedAt != got.CreatedAt.Round(0) {
				t.Errorf("%s, owner %d: created at %v, stored %v", name, i, got.CreatedAt, want.CreatedAt)
			}
			if len(c.Owner.Roles) > 0 {
				c.Owner.Roles[0] = "changed"
				c.Owner.Attributes["team"] = "changed"
				if got.Owner.Roles[0] == "changed" || got.Owner.Attributes["team"] == "changed" {
					t.Errorf("%s, owner %d: the cached record shares the owner's roles or attributes", name, i)
				}
			}
		}
	}
}
