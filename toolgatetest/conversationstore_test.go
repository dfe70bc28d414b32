package toolgatetest_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store/memory"
	"github.com/toolgate/toolgate/toolgatetest"
)

// brokenEnv names, in a child process, the broken store to run the kit on.
const brokenEnv = "TOOLGATETEST_BROKEN_STORE"

// broken wraps a memory.Store and breaks one rule of the contract.
type broken struct {
	*memory.Store
	mode string
}

func (s *broken) Load(ctx context.Context, id string) (*toolgate.Conversation, error) {
	if s.mode == "ignores context" {
		ctx = context.Background()
	}
	c, err := s.Store.Load(ctx, id)
	if err == nil && s.mode == "loses started keys" && c.Pause != nil {
		c.Pause.Started = nil
	}
	return c, err
}

func (s *broken) Append(ctx context.Context, id string, p *toolgate.AppendParams) error {
	if p == nil {
		return s.Store.Append(ctx, id, p)
	}
	q := *p
	switch s.mode {
	case "ignores context":
		ctx = context.Background()
	case "ignores At":
		c, err := s.Store.Load(ctx, id)
		if err != nil {
			return err
		}
		q.At = len(c.Messages)
	case "drops pauses":
		q.Pause = nil
	case "trims arguments":
		q.Messages = nil
		for _, m := range p.Messages {
			if a, ok := m.(*toolgate.AssistantMessage); ok && a != nil {
				b := &toolgate.AssistantMessage{Text: a.Text}
				for _, c := range a.ToolCalls {
					c.Arguments = strings.TrimSpace(c.Arguments)
					b.ToolCalls = append(b.ToolCalls, c)
				}
				m = b
			}
			q.Messages = append(q.Messages, m)
		}
	}
	return s.Store.Append(ctx, id, &q)
}

func (s *broken) ClaimPause(ctx context.Context, id, pauseID string, claim *toolgate.Claim) error {
	c, err := s.Store.Load(ctx, id)
	if err != nil {
		return err
	}
	claimed := c.Pause != nil && c.Pause.ID == pauseID && c.Pause.Claimed
	switch s.mode {
	case "ignores context":
		ctx = context.Background()
	case "claims twice":
		if claimed && !claim.TakeOver {
			return nil
		}
	case "takes over any claim":
		if claimed && claim.TakeOver {
			cp := *claim
			cp.Supersedes = c.Pause.ClaimToken
			claim = &cp
		}
	}
	return s.Store.ClaimPause(ctx, id, pauseID, claim)
}

func (s *broken) MarkStarted(ctx context.Context, id, pauseID, token string, keys []string) error {
	c, err := s.Store.Load(ctx, id)
	if err != nil {
		return err
	}
	switch s.mode {
	case "ignores context":
		ctx = context.Background()
	case "marks with any token":
		if c.Pause != nil && c.Pause.ClaimToken != "" {
			token = c.Pause.ClaimToken
		}
	case "marks twice":
		if c.Pause != nil {
			rest := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(c.Pause.Started, k) })
			if len(rest) == 0 && len(keys) > 0 && c.Pause.ClaimToken == token {
				return nil
			}
			keys = rest
		}
	}
	return s.Store.MarkStarted(ctx, id, pauseID, token, keys)
}

// TestKitCatchesBrokenStores runs the kit, in a child process, on stores
// that each break one rule, and checks that the subtest for that rule fails.
func TestKitCatchesBrokenStores(t *testing.T) {
	if mode := os.Getenv(brokenEnv); mode != "" {
		toolgatetest.TestStore(t, func(*testing.T) toolgate.ConversationStore {
			return &broken{Store: memory.New(), mode: mode}
		})
		return
	}
	tests := []struct {
		mode     string
		failures []string // subtests that must fail
	}{
		{"ignores context", []string{"Canceled"}},
		{"ignores At", []string{"Conflict", "AppendConcurrent"}},
		{"drops pauses", []string{"OpenPause", "PauseBlocksInput", "ClaimOnce", "Resolve"}},
		{"trims arguments", []string{"RoundTrip"}},
		{"claims twice", []string{"ClaimOnce"}},
		{"takes over any claim", []string{"TakeOver", "TakeOverConcurrent"}},
		{"loses started keys", []string{"TakeOver", "MarkStarted", "MarkConcurrent"}},
		{"marks with any token", []string{"TakeOver", "MarkStarted"}},
		{"marks twice", []string{"MarkStarted", "MarkConcurrent"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKitCatchesBrokenStores$", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+tt.mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the kit passed a store that %s; output:\n%s", tt.mode, out)
			}
			for _, name := range tt.failures {
				if !strings.Contains(string(out), "--- FAIL: TestKitCatchesBrokenStores/"+name+" ") {
					t.Errorf("subtest %s did not fail for a store that %s; output:\n%s", name, tt.mode, out)
				}
			}
		})
	}
}
