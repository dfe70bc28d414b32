package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// FuzzStreamEvents feeds event sequences (one JSON event a line) to the
// stream decoder: it must never panic, and a sequence it accepts must give
// chunks that toolgate can collect.
func FuzzStreamEvents(f *testing.F) {
	for _, evs := range [][]string{streamText, streamCalls} {
		var lines []string
		for i := 1; i < len(evs); i += 2 {
			lines = append(lines, evs[i])
		}
		f.Add(strings.Join(lines, "\n"))
	}
	f.Add(`{"type":"content_block_delta","index":-1,"delta":{"type":"input_json_delta","partial_json":"x"}}`)
	f.Add(strings.Join([]string{
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"[1, 2]}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3,"output_tokens_details":{"thinking_tokens":1}}}`,
		`{"type":"message_stop"}`,
	}, "\n"))
	f.Fuzz(func(t *testing.T, data string) {
		var s streamState
		var chunks []*toolgate.Chunk
		for line := range strings.SplitSeq(data, "\n") {
			var ev sdk.MessageStreamEventUnion
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			ch, err := s.event(&ev)
			if err != nil {
				return
			}
			if ch != nil {
				chunks = append(chunks, ch)
			}
		}
		if s.end() != nil {
			return
		}
		resp, err := fakeapi.Collect(chunks)
		if err != nil {
			t.Fatalf("an accepted stream does not collect: %v", err)
		}
		// Arguments that are JSON are compact, as a complete message gives
		// them.
		for _, c := range resp.Message().ToolCalls {
			var b bytes.Buffer
			if json.Compact(&b, []byte(c.Arguments)) == nil && b.String() != c.Arguments {
				t.Fatalf("arguments %q are JSON but not compact", c.Arguments)
			}
		}
		checkReply(t, resp.Message())
	})
}

// checkReply fails t unless a reply read from the API keeps its stored
// form (its parts agree with its text and calls) and converts back to
// content blocks.
func checkReply(t *testing.T, reply *toolgate.AssistantMessage) {
	t.Helper()
	fakeapi.CheckStored(t, reply)
	if _, err := assistantBlocks(reply, callIDs(0, reply.ToolCalls)); err != nil {
		t.Fatalf("the reply does not convert back: %v", err)
	}
}

// FuzzMessage decodes a complete message and converts it: never a panic,
// tool call arguments are always valid JSON, and the reply passes
// checkReply.
func FuzzMessage(f *testing.F) {
	f.Add(simpleMessage)
	f.Add(`{"content":[{"type":"tool_use","id":"t","name":"n","input":{"a":[1,2]}}],"stop_reason":"tool_use"}`)
	f.Add(`{"content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"d"},{"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"n","input":{}}],"stop_reason":"tool_use"}`)
	f.Fuzz(func(t *testing.T, data string) {
		var msg sdk.Message
		if json.Unmarshal([]byte(data), &msg) != nil {
			return
		}
		resp, err := fromMessage(&msg)
		if err != nil {
			return
		}
		for _, c := range resp.Message().ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("arguments %q are not JSON", c.Arguments)
			}
		}
		checkReply(t, resp.Message())
	})
}

// FuzzToolInput checks that any arguments text gives a JSON object input.
func FuzzToolInput(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `[`, `null`, "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		in := toolInput(args)
		var obj map[string]any
		if err := json.Unmarshal(in, &obj); err != nil || obj == nil {
			t.Fatalf("toolInput(%q) = %s: not an object", args, in)
		}
		if raw, ok := obj[rawArgumentsKey]; ok && len(obj) == 1 && !bytes.HasPrefix(bytes.TrimSpace([]byte(args)), []byte("{")) {
			if _, isStr := raw.(string); !isStr {
				t.Fatalf("toolInput(%q): _raw is not a string", args)
			}
		}
	})
}
