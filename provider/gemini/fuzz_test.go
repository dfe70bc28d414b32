package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
)

// FuzzStreamResponses feeds streamed responses (one JSON response a line)
// to the stream decoder: it must never panic, and a stream it accepts must
// give chunks that toolgate can collect, with valid JSON arguments.
func FuzzStreamResponses(f *testing.F) {
	f.Add(strings.Join(streamCalls, "\n"))
	f.Add(simpleResponse)
	f.Add(`{"promptFeedback":{"blockReason":"SAFETY"}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var s streamState
		var chunks []*toolgate.Chunk
		for line := range strings.SplitSeq(data, "\n") {
			var r genai.GenerateContentResponse
			if json.Unmarshal([]byte(line), &r) != nil {
				continue
			}
			ch, err := s.response(&r)
			if err != nil {
				return
			}
			if ch != nil {
				chunks = append(chunks, ch)
			}
		}
		last, err := s.end()
		if err != nil {
			return
		}
		chunks = append(chunks, last)
		resp, err := toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
			for _, ch := range chunks {
				if !yield(ch, nil) {
					return
				}
			}
		})
		if err != nil {
			t.Fatalf("an accepted stream does not collect: %v", err)
		}
		for _, c := range resp.Message().ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("arguments %q are not JSON", c.Arguments)
			}
		}
	})
}

// FuzzResponse converts a complete response: never a panic, and tool call
// arguments are always valid JSON.
func FuzzResponse(f *testing.F) {
	f.Add(simpleResponse)
	f.Add(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"n","args":{"a":[1,{"b":null}]}}}]},"finishReason":"STOP"}]}`)
	f.Fuzz(func(t *testing.T, data string) {
		var r genai.GenerateContentResponse
		if json.Unmarshal([]byte(data), &r) != nil {
			return
		}
		resp, err := fromResponse(&r)
		if err != nil {
			return
		}
		for _, c := range resp.Message().ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("arguments %q are not JSON", c.Arguments)
			}
		}
	})
}

// FuzzCallArgs checks that any arguments text gives args that encode as a
// JSON object (or none).
func FuzzCallArgs(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `{"a":1}{}`, `[`, `null`, "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		v := callArgs(args)
		if v == nil {
			if strings.TrimSpace(args) != "" {
				t.Fatalf("callArgs(%q) = nil", args)
			}
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("callArgs(%q): %v", args, err)
		}
	})
}
