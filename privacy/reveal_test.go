package privacy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/privacy"
	"github.com/toolgate/toolgate/provider/scripted"
)

func TestConversationRewriter(t *testing.T) {
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef")
	vaults := &mapVaults{}
	guard, err := privacy.NewGuard(&privacy.GuardOptions{Vaults: vaults, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	// Before any turn the vault is empty: nothing to restore, no error.
	rw, err := guard.ConversationRewriter(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if got := rw.Restore("[EMAIL_ADDRESS_1]", privacy.AllTypes()); got != "[EMAIL_ADDRESS_1]" {
		t.Errorf("empty vault restores %q", got)
	}

	m := scripted.New(scripted.Reply{Text: "noted"})
	client := toolgate.NewClient(m, nil, &toolgate.ClientOptions{Protect: guard.Begin})
	if _, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "v", Input: "mine is " + email}); err != nil {
		t.Fatal(err)
	}
	seen := m.Prompts()[0].Messages[0].(*toolgate.UserMessage).Text
	toks := tokens(seen)
	if len(toks) != 1 {
		t.Fatalf("the model saw %q, want one token", seen)
	}
	saved := string(vaults.m["v"])
	rw, err = guard.ConversationRewriter(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rw.Restore(seen, privacy.AllTypes()), "mine is "+email; got != want {
		t.Errorf("Restore = %q, want %q", got, want)
	}
	args, err := rw.RestoreJSON([]byte(`{"to":"`+toks[0]+`"}`), privacy.AllTypes())
	if err != nil || string(args) != `{"to":"`+email+`"}` {
		t.Errorf("RestoreJSON = %s, %v", args, err)
	}
	// Tokenizing new values does not change the stored vault.
	if _, err := rw.Tokenize(ctx, "and bob@example.org"); err != nil {
		t.Fatal(err)
	}
	if string(vaults.m["v"]) != saved {
		t.Error("the rewriter saved the vault")
	}

	if _, err := (&privacy.Guard{}).ConversationRewriter(ctx, "v"); !errors.Is(err, privacy.ErrNoConversationVaults) {
		t.Errorf("zero guard: %v, want ErrNoConversationVaults", err)
	}
	// A guard without a vault store keeps vaults in memory: it reveals
	// what it tokenized itself.
	inMemory, _ := privacy.NewGuard(nil)
	mc := toolgate.NewClient(scripted.New(scripted.Reply{Text: "noted"}), nil, &toolgate.ClientOptions{Protect: inMemory.Begin})
	if _, err := mc.Call(ctx, &toolgate.CallParams{ConversationID: "m", Input: "mine is " + email}); err != nil {
		t.Fatal(err)
	}
	if rw, err := inMemory.ConversationRewriter(ctx, "m"); err != nil || rw.Restore("[EMAIL_ADDRESS_1]", privacy.AllTypes()) != email {
		t.Errorf("in-memory vaults: %v, want the e-mail restored", err)
	}
	wrong, _ := privacy.NewGuard(&privacy.GuardOptions{Vaults: vaults, Key: []byte(strings.Repeat("k", 32))})
	if _, err := wrong.ConversationRewriter(ctx, "v"); !errors.Is(err, privacy.ErrVaultKey) {
		t.Errorf("wrong key: %v, want ErrVaultKey", err)
	}
}
