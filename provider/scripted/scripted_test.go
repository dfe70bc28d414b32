package scripted_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

func TestStreamMatchesGenerate(t *testing.T) {
	ctx := context.Background()
	reply := scripted.Reply{Text: "Checking two flights now.", ToolCalls: []toolgate.ToolCall{
		{ID: "a", Name: "flightStatus", Arguments: `{"flight":"VX205"}`},
		{Name: "flightStatus", Arguments: `{"flight":"VX206"}`},
	}, Usage: toolgate.Usage{InputTokens: 7, OutputTokens: 3}}
	gen, err := scripted.New(reply).Generate(ctx, &toolgate.Prompt{})
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	stream, err := toolgate.Collect(func(yield func(*toolgate.Chunk, error) bool) {
		for c, err := range scripted.New(reply).Stream(ctx, &toolgate.Prompt{}) {
			chunks++
			if !yield(c, err) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if chunks < 6 {
		t.Errorf("%d chunks; want the text and the arguments split", chunks)
	}
	if diff := cmp.Diff(gen.Generations, stream.Generations); diff != "" {
		t.Errorf("stream differs from Generate (-gen +stream):\n%s", diff)
	}
	if gen.Usage != stream.Usage || gen.Usage.InputTokens != 7 {
		t.Errorf("usage %+v vs %+v", gen.Usage, stream.Usage)
	}
}

func TestScriptErrors(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	m := scripted.New(scripted.Reply{Err: boom}, scripted.Reply{Text: "partial", Err: boom})
	if _, err := m.Generate(ctx, nil); !errors.Is(err, boom) {
		t.Errorf("Generate: %v, want boom", err)
	}
	var got error
	var text string
	for c, err := range m.Stream(ctx, nil) {
		if err != nil {
			got = err
			break
		}
		text += c.Text
	}
	if !errors.Is(got, boom) || text != "partial" {
		t.Errorf("Stream: text %q err %v; want the text then boom", text, got)
	}
	if _, err := m.Generate(ctx, nil); !errors.Is(err, scripted.ErrExhausted) {
		t.Errorf("exhausted: %v", err)
	}
	if m.Remaining() != 0 || len(m.Prompts()) != 3 {
		t.Errorf("remaining %d, prompts %d", m.Remaining(), len(m.Prompts()))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	m2 := scripted.New(scripted.Reply{Text: "never"})
	if _, err := m2.Generate(cctx, nil); !errors.Is(err, context.Canceled) || m2.Remaining() != 1 {
		t.Errorf("canceled Generate: %v, remaining %d", err, m2.Remaining())
	}
	for _, err := range m2.Stream(cctx, nil) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled Stream: %v", err)
		}
	}
	m2.Append(scripted.Reply{Text: "more"})
	if m2.Remaining() != 2 {
		t.Errorf("Append: remaining %d", m2.Remaining())
	}
}

func TestNewFuncNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	scripted.NewFunc(nil)
}
