package httptool_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httptool"
)

// FuzzArguments sends the model's arguments, which are untrusted, through
// a tool with URL placeholders and query parameters: whatever they hold,
// the call never panics and the request stays on the configured host and
// under the configured path.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{"id":"7","q":"x"}`, `{"id":"../../admin","q":{"a":[1]}}`, `{"id":"a?b#c","x":null}`,
		`{"id":"%2e%2e"}`, `{"id":1e999}`, `{"id":true,"id":false}`, `[]`, `{"id":"\u0000\r\n"}`, `{}`} {
		f.Add(s)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.EscapedPath())
	}))
	f.Cleanup(srv.Close)
	tool, err := httptool.New(&httptool.Options{Name: "get", Method: "GET", URL: srv.URL + "/items/{id}/view"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		if !json.Valid([]byte(args)) {
			return // the core hands tools valid JSON only
		}
		out, err := tool.Call(t.Context(), &toolgate.ToolRequest{Call: toolgate.ToolCall{Name: "get", Arguments: args}, Arguments: json.RawMessage(args)})
		if err != nil {
			return
		}
		rest, ok := strings.CutPrefix(out, "/items/")
		if !ok || !strings.HasSuffix(rest, "/view") {
			t.Fatalf("path %q left /items/{id}/view", out)
		}
		seg := strings.TrimSuffix(rest, "/view")
		if dec, err := url.PathUnescape(seg); err != nil || strings.Contains(seg, "/") && !strings.Contains(dec, "/") {
			t.Fatalf("segment %q: %v", seg, err)
		}
		if strings.Contains(seg, "/") {
			t.Fatalf("the argument added path segments: %q", out)
		}
	})
}
