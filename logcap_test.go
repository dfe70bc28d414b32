package toolgate_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// hugeRuntimeError is a panic value of a tool's own type that claims to be
// a runtime error, with a text the model chose.
type hugeRuntimeError struct{ text string }

func (e hugeRuntimeError) Error() string { return e.text }
func (hugeRuntimeError) RuntimeError()   {}

// recordedLog keeps the string attributes of every record logged.
type recordedLog struct {
	slog.Handler
	attrs *[]slog.Attr
}

func (recordedLog) Enabled(context.Context, slog.Level) bool { return true }

func (h recordedLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool { *h.attrs = append(*h.attrs, a); return true })
	return nil
}

// TestLogLinesCapped: the strings the core quotes in a log line (a
// panic's text, a configured tool name) are cut to a bounded length, so a
// hostile value cannot make a log line arbitrarily long.
func TestLogLinesCapped(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	var attrs []slog.Attr
	logger := slog.New(recordedLog{Handler: slog.DiscardHandler, attrs: &attrs})
	panics := toolgate.NewTool(toolgate.ToolDefinition{Name: "echo"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { panic(hugeRuntimeError{huge}) })
	model := scripted.New(
		scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "echo", Arguments: "{}"}}},
		scripted.Reply{Text: "done"},
	)
	c := toolgate.NewClient(model, []*toolgate.Tool{panics}, &toolgate.ClientOptions{ConfirmTools: []string{huge}, Logger: logger})
	if _, err := c.Call(t.Context(), &toolgate.CallParams{Input: "go"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range attrs {
		seen[a.Key] = true
		if a.Key == "stack" {
			continue // the program's own frames, not a quoted value
		}
		if n := len(a.Value.String()); n > 2048 {
			t.Errorf("log attribute %q is %d bytes long, want it capped", a.Key, n)
		}
	}
	if !seen["panic"] || !seen["tool"] {
		t.Fatalf("logged attributes %v, want the tool's panic and the unmatched tool name", seen)
	}
}
