package mcptool

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzResultAndSchema decodes arbitrary JSON as a call result and as an
// input schema, as they come from a server, and maps them: neither may
// panic, and a schema that is accepted is an object schema.
func FuzzResultAndSchema(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"resource","resource":{"uri":"file:///a","text":"x"}}],"isError":true}`,
		`{"content":[{"type":"resource_link","uri":"file:///a","name":"a"},{"type":"audio","data":"","mimeType":""}],"structuredContent":[1,"x",null]}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^a+$"}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/nope"}}}`,
		`{"properties":5}`,
		`true`, `null`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcp.CallToolResult
		if err := json.Unmarshal(data, &res); err == nil {
			_ = resultText(&res)
		}
		s, err := decodeSchemaJSON(data)
		if err == nil && s != nil && s.Type != "object" {
			t.Errorf("accepted schema of type %q", s.Type)
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			_, _ = decodeSchema(v)
		}
	})
}
