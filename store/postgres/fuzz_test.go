package postgres_test

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolgate/toolgate"
)

// FuzzLoadRow stores arbitrary text as a message row and loads it: Load
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
		f.Add(int32(1), string(b))
	}
	f.Add(int32(2), `{"role":"user","text":"hi"}`)
	f.Add(int32(1), `{"role":"robot"}`)
	f.Add(int32(1), `{"role":"tool","results":[{"status":"maybe"}]}`)
	f.Add(int32(1), `{"role":"assistant","tool_calls":[null,{"arguments":7}]}`)
	f.Add(int32(1), `{"role":"user","text":"\u0000\ud800"}`)
	f.Add(int32(-1), "")

	s, schema := open(f)
	conn := raw(f, schema)
	mustExec(f, conn, "INSERT INTO conversations (id) VALUES ('fuzz')")
	f.Fuzz(func(t *testing.T, format int32, body string) {
		if !utf8.ValidString(body) {
			t.Skip("PostgreSQL text holds valid UTF-8 only")
		}
		for i := range len(body) {
			if body[i] == 0 {
				t.Skip("PostgreSQL text holds no NUL character")
			}
		}
		mustExec(t, conn, "DELETE FROM messages WHERE conversation_id = 'fuzz'")
		mustExec(t, conn, "INSERT INTO messages (conversation_id, seq, format, body) VALUES ('fuzz', 0, $1, $2)", format, body)
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
