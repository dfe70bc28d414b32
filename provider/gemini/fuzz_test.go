package gemini

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/internal/fakeapi"
	"github.com/toolgate/toolgate/provider/internal/retryafter"
)

// FuzzStreamResponses feeds streamed responses (one JSON response a line)
// to the stream decoder: it must never panic, and a stream it accepts must
// give chunks that toolgate can collect into a reply that passes
// checkReply.
func FuzzStreamResponses(f *testing.F) {
	f.Add(strings.Join(streamCalls, "\n"))
	f.Add(simpleResponse)
	f.Add(`{"promptFeedback":{"blockReason":"SAFETY"}}`)
	f.Add(strings.Join(responseAsStream(f, signedReply), "\n"))
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
		resp, err := fakeapi.Collect(chunks)
		if err != nil {
			t.Fatalf("an accepted stream does not collect: %v", err)
		}
		checkReply(t, resp.Message())
	})
}

// signedReply is a reply with a signed thought, text and two calls, the
// first signed.
const signedReply = `{"candidates":[{"content":{"role":"model","parts":[
	{"text":"Both tools.","thought":true,"thoughtSignature":"dGhvdWdodA=="},
	{"text":"Adding."},
	{"functionCall":{"name":"add","args":{"a":2}},"thoughtSignature":"c2ln"},
	{"functionCall":{"name":"add","args":{"a":3}}}]},"finishReason":"STOP"}]}`

// checkReply fails t unless a reply read from the API has valid JSON
// arguments, keeps its stored form (its parts agree with its text and
// calls) and converts back to a request.
func checkReply(t *testing.T, reply *toolgate.AssistantMessage) {
	t.Helper()
	for _, c := range reply.ToolCalls {
		if !json.Valid([]byte(c.Arguments)) {
			t.Fatalf("arguments %q are not JSON", c.Arguments)
		}
	}
	fakeapi.CheckStored(t, reply)
	if _, err := modelParts(reply); err != nil {
		t.Fatalf("the reply does not convert back: %v", err)
	}
}

// FuzzResponse converts a complete response: never a panic, and an
// accepted reply passes checkReply.
func FuzzResponse(f *testing.F) {
	f.Add(simpleResponse)
	f.Add(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"n","args":{"a":[1,{"b":null}]}}}]},"finishReason":"STOP"}]}`)
	f.Add(signedReply)
	f.Fuzz(func(t *testing.T, data string) {
		var r genai.GenerateContentResponse
		if json.Unmarshal([]byte(data), &r) != nil {
			return
		}
		resp, err := fromResponse(&r)
		if err != nil {
			return
		}
		checkReply(t, resp.Message())
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

// FuzzAskedWait reads the wait asked for by a failed answer's headers and
// body: never a panic, a wait within bounds, and the body left intact.
func FuzzAskedWait(f *testing.F) {
	f.Add("30", `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`)
	f.Add("Sun, 01 Mar 2026 12:00:10 GMT", `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":1}]}}`)
	f.Add("", `not json`)
	f.Fuzz(func(t *testing.T, header, body string) {
		resp := &http.Response{Header: http.Header{"Retry-After": {header}}, Body: io.NopCloser(strings.NewReader(body))}
		resp, wait := askedWait(resp)
		if wait < 0 || wait > retryafter.Max {
			t.Fatalf("wait %v out of range", wait)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || string(got) != body {
			t.Fatalf("body changed: %q, %v", got, err)
		}
	})
}

// TestAskedWaitLongBody: a body longer than the part read for a retry
// delay reaches the SDK whole.
func TestAskedWaitLongBody(t *testing.T) {
	body := `{"error":{"code":503,"message":"` + strings.Repeat("x", maxErrorBody) + `"}}`
	resp, _ := askedWait(&http.Response{Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))})
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != body {
		t.Fatalf("got %d bytes, %v; want the %d bytes of the body", len(got), err, len(body))
	}
}
