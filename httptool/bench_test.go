package httptool_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httptool"
)

// BenchmarkCall is one call of an HTTP tool with a schema, a placeholder
// and a header, against a local server: the tool's own cost plus a
// loopback round trip.
func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	tool, err := httptool.New(&httptool.Options{Name: "refund", URL: srv.URL + "/orders/{order}/refund", Header: http.Header{"Authorization": {"Bearer x"}}})
	if err != nil {
		b.Fatal(err)
	}
	req := &toolgate.ToolRequest{Call: toolgate.ToolCall{Name: "refund", Arguments: `{"order":"A-1001","reason":"damaged"}`}, IdempotencyKey: "tg_0123456789abcdef0123456789abcdef"}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
