package sqlite_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
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
