package sqlite_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
)

// FuzzLoadRow stores arbitrary bytes as a message row and loads it: Load
// must either fail with an error wrapping ErrCorrupt or return a message
// that survives another trip through its JSON form; it must never panic.
func FuzzLoadRow(f *testing.F) {
	for _, m := range []toolgate.Message{
		&toolgate.SystemMessage{Text: "be brief"},
		&toolgate.UserMessage{Text: "hi"},
		&toolgate.AssistantMessage{Text: "ok", ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "a", Arguments: `{"x":`}}},
		&toolgate.ToolMessage{Results: []toolgate.ToolResult{{CallID: "c1", Name: "a", Content: "no", Status: toolgate.ResultDenied}}},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(int64(1), b)
	}
	f.Add(int64(2), []byte(`{"role":"user","text":"hi"}`))
	f.Add(int64(1), []byte(`{"role":"robot"}`))
	f.Add(int64(1), []byte(`{"role":"tool","results":[{"status":"maybe"}]}`))
	f.Add(int64(1), []byte(`{"role":"assistant","tool_calls":[null,{"arguments":7}]}`))
	f.Add(int64(1), []byte("\xff\xfe{"))
	f.Add(int64(-1), []byte(nil))

	path := filepath.Join(f.TempDir(), "fuzz.db")
	s := openAt(f, path, nil)
	db := raw(f, path)
	f.Fuzz(func(t *testing.T, format int64, body []byte) {
		mustExec(t, db, "DELETE FROM messages WHERE conversation_id = 'fuzz'")
		mustExec(t, db, "INSERT INTO messages (conversation_id, seq, format, body) VALUES ('fuzz', 0, ?, coalesce(?, x''))", format, body)
		c, err := s.Load(t.Context(), "fuzz")
		if err != nil {
			if !errors.Is(err, toolgate.ErrCorrupt) {
				t.Fatalf("Load: got error %v, want nil or one wrapping %v", err, toolgate.ErrCorrupt)
			}
			return
		}
		if len(c.Messages) != 1 {
			t.Fatalf("Load returned %d messages from one row", len(c.Messages))
		}
		b, err := json.Marshal(c.Messages[0])
		if err != nil {
			t.Fatalf("a loaded message does not marshal: %v", err)
		}
		again, err := toolgate.UnmarshalMessage(b)
		if err != nil {
			t.Fatalf("a loaded message does not decode from its JSON %s: %v", b, err)
		}
		if diff := cmp.Diff(c.Messages[0], again, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("a loaded message changes through JSON (-loaded +again):\n%s", diff)
		}
	})
}

// FuzzLoadClaim stores arbitrary claim columns on a claimed pause and loads
// it: Load must either fail with an error wrapping ErrCorrupt or return a
// claim whose decisions are valid and whose started keys are distinct and
// non-empty, and that a store accepts back as a claim; it must never panic.
func FuzzLoadClaim(f *testing.F) {
	f.Add("t", []byte(`[{"key":"c1","verdict":"allow"},{"key":"c2","verdict":"deny","message":"no"}]`), []byte(`["c1"]`))
	f.Add("", []byte(""), []byte(""))
	f.Add("t", []byte(`[{"key":"c1"}]`), []byte(`["c1","c1"]`))
	f.Add("t", []byte(`[{"key":"c1","verdict":"allow","message":"x"}]`), []byte(`[""]`))
	f.Add("t", []byte(`null`), []byte(`null`))
	f.Add("t", []byte("\xff{"), []byte(`[1]`))

	path := filepath.Join(f.TempDir(), "fuzz.db")
	s := openAt(f, path, nil)
	db := raw(f, path)
	reply := &toolgate.AssistantMessage{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "a"}}}
	f.Fuzz(func(t *testing.T, token string, decisions, started []byte) {
		mustExec(t, db, "DELETE FROM messages WHERE conversation_id = 'fuzz'")
		mustExec(t, db, "DELETE FROM pauses WHERE conversation_id = 'fuzz'")
		if err := s.Append(t.Context(), "fuzz", &toolgate.AppendParams{Messages: []toolgate.Message{reply}, Pause: &toolgate.PauseRecord{ID: "p"}}); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, "UPDATE pauses SET claimed = 1, claim_token = ?, claimed_at = 1700000000, decisions = coalesce(?, ''), started = coalesce(?, '') WHERE conversation_id = 'fuzz'",
			token, string(decisions), string(started))
		c, err := s.Load(t.Context(), "fuzz")
		if err != nil {
			if !errors.Is(err, toolgate.ErrCorrupt) {
				t.Fatalf("Load: got error %v, want nil or one wrapping %v", err, toolgate.ErrCorrupt)
			}
			return
		}
		pr := c.Pause
		if pr == nil || !pr.Claimed || pr.ClaimToken != token {
			t.Fatalf("Load: pause %+v, want the claimed pause with token %q", pr, token)
		}
		for i, k := range pr.Started {
			if k == "" || slices.Contains(pr.Started[:i], k) {
				t.Fatalf("Load: started keys %q hold an empty or repeated key", pr.Started)
			}
		}
		if _, err := json.Marshal(pr.Decisions); err != nil {
			t.Fatalf("loaded decisions do not marshal: %v", err)
		}
		// A loaded claim can be taken over.
		err = s.ClaimPause(t.Context(), "fuzz", "p", &toolgate.Claim{Token: token + "!", Decisions: pr.Decisions, TakeOver: true, Supersedes: token})
		if err != nil {
			t.Fatalf("taking the loaded claim over: %v", err)
		}
	})
}
