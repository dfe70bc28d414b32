package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/server"
)

// A tool name the model made up, 10,000 characters long, reaches the log
// only cut: here in the error of a turn the error handler ends with it.
func TestLogCapsModelStrings(t *testing.T) {
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	f := newAtkFixture(t, atkOptions{
		configure: func(c *server.Config) { c.Logger = logger },
		clientOpt: func(o *toolgate.ClientOptions) {
			o.Logger = logger
			o.ErrorHandler = func(_ context.Context, _ toolgate.ToolCall, err error) (string, error) { return "", err }
		},
	})
	long := strings.Repeat("x", 10_000)
	f.setReply(call("c1", long, `{}`))
	conv := f.must(201, "POST", "/v1/conversations", atkRequester, `{"agent":"ops"}`)["id"].(string)
	f.must(500, "POST", "/v1/conversations/"+conv+"/messages", atkRequester, `{"input":"go"}`)
	var logged bool
	for _, rec := range buf.lines(t) {
		l, _ := json.Marshal(rec)
		if strings.Contains(string(l), "xxxxxxxx") {
			logged = true
		}
		if strings.Contains(string(l), strings.Repeat("x", 1100)) {
			t.Errorf("a log line quotes the tool name uncut (%d bytes): %.200s…", len(l), l)
		}
	}
	if !logged {
		t.Fatal("no log line names the tool; the test shows nothing")
	}
}
