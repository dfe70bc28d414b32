package toolgate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// fakeSearch is a [toolgate.ToolSearch] whose Offer returns what offer
// chooses, and records the tools it was given.
type fakeSearch struct {
	tool  *toolgate.Tool
	offer func(tools []*toolgate.Tool) []*toolgate.Tool
	given [][]string
}

func (f *fakeSearch) Begin(context.Context, *toolgate.BeginParams) (toolgate.ToolSearch, error) {
	return f, nil
}

func (f *fakeSearch) Tool() *toolgate.Tool { return f.tool }

func (f *fakeSearch) Offer(_ context.Context, _ []toolgate.Message, tools []*toolgate.Tool) ([]*toolgate.Tool, error) {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name())
	}
	f.given = append(f.given, names)
	return f.offer(tools), nil
}

func TestToolSearchSeam(t *testing.T) {
	ctx := context.Background()
	var f flightTools
	search := toolgate.NewTool(toolgate.ToolDefinition{Name: "find"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	stranger := toolgate.NewTool(toolgate.ToolDefinition{Name: "stranger"}, toolgate.ToolMetadata{},
		func(context.Context, *toolgate.ToolRequest) (string, error) { return "", nil })
	for _, tc := range []struct {
		name    string
		fs      *fakeSearch
		want    string // offered tools, or the error
		wantErr bool
	}{
		{name: "offers the search tool and the choice",
			fs:   &fakeSearch{tool: search, offer: func(ts []*toolgate.Tool) []*toolgate.Tool { return ts[1:] }},
			want: "find bookFlight"},
		{name: "nothing found",
			fs:   &fakeSearch{tool: search, offer: func([]*toolgate.Tool) []*toolgate.Tool { return nil }},
			want: "find"},
		{name: "a tool it was not given",
			fs:   &fakeSearch{tool: search, offer: func([]*toolgate.Tool) []*toolgate.Tool { return []*toolgate.Tool{stranger} }},
			want: "not given", wantErr: true},
		{name: "no search tool",
			fs:   &fakeSearch{offer: func([]*toolgate.Tool) []*toolgate.Tool { return nil }},
			want: "no search tool", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := scripted.New(scripted.Reply{Text: "ok"})
			client := toolgate.NewClient(model, f.tools(), &toolgate.ClientOptions{SearchTools: tc.fs.Begin})
			_, err := client.Call(ctx, &toolgate.CallParams{Input: "x"})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range model.Prompts()[0].Tools {
				names = append(names, tool.Name())
			}
			if got := strings.Join(names, " "); got != tc.want {
				t.Errorf("offered %q, want %q", got, tc.want)
			}
			if got := strings.Join(tc.fs.given[0], " "); got != "flightStatus bookFlight" {
				t.Errorf("the search was given %q, want every tool but itself", got)
			}
		})
	}
}
