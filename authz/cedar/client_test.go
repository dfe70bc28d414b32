package cedar_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authz"
	"github.com/toolgate/toolgate/authz/cedar"
	"github.com/toolgate/toolgate/provider/scripted"
)

// flights are the demo's tools; they count their runs.
type flights struct {
	mu   sync.Mutex
	runs map[string]int
}

func (f *flights) tools() []*toolgate.Tool {
	tool := func(name, result string) *toolgate.Tool {
		return toolgate.NewTool(toolgate.ToolDefinition{Name: name, Description: "the " + name + " tool"}, toolgate.ToolMetadata{},
			func(context.Context, *toolgate.ToolRequest) (string, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.runs == nil {
					f.runs = map[string]int{}
				}
				f.runs[name]++
				return result, nil
			})
	}
	return []*toolgate.Tool{tool("flightStatus", "on time"), tool("bookFlight", "booked")}
}

func (f *flights) ran() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.runs {
		out[k] = v
	}
	return out
}

// seen is what one prompt showed the model.
type seen struct {
	Tools    []string
	Messages []string
}

func summarize(prompts []*toolgate.Prompt) []seen {
	var out []seen
	for _, p := range prompts {
		var s seen
		for _, t := range p.Tools {
			s.Tools = append(s.Tools, t.Name())
		}
		for _, m := range p.Messages {
			switch m := m.(type) {
			case *toolgate.UserMessage:
				s.Messages = append(s.Messages, "user: "+m.Text)
			case *toolgate.AssistantMessage:
				var calls []string
				for _, c := range m.ToolCalls {
					calls = append(calls, c.Name+c.Arguments)
				}
				s.Messages = append(s.Messages, "assistant: "+m.Text+strings.Join(calls, " "))
			case *toolgate.ToolMessage:
				for _, r := range m.Results {
					s.Messages = append(s.Messages, fmt.Sprintf("tool: %s=%s", r.Name, r.Content))
				}
			default:
				s.Messages = append(s.Messages, fmt.Sprintf("%T", m))
			}
		}
		out = append(out, s)
	}
	return out
}

// TestClient runs the flight demo through a client guarded by the Cedar
// policy of examples/flights.cedar.
func TestClient(t *testing.T) {
	policy, err := cedar.Load(filepath.Join("..", "..", "examples", "flights.cedar"))
	if err != nil {
		t.Fatal(err)
	}
	alice := &toolgate.Principal{ID: "alice", Roles: []string{"traveller"}}
	bob := &toolgate.Principal{ID: "bob", Roles: []string{"guest"}}
	book := func(args string) scripted.Reply {
		return scripted.Reply{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "bookFlight", Arguments: args}}}
	}
	for _, tc := range []struct {
		name    string
		who     *toolgate.Principal
		replies []scripted.Reply
		want    []seen
		ran     map[string]int
		code    authz.Code // "" for success
		reason  string
	}{
		{
			name:    "alice books",
			who:     alice,
			replies: []scripted.Reply{book(`{"flight":"VX205","seats":2}`), {Text: "Booked."}},
			want: []seen{
				{Tools: []string{"flightStatus", "bookFlight"}, Messages: []string{"user: Book VX205"}},
				{Tools: []string{"flightStatus", "bookFlight"}, Messages: []string{
					"user: Book VX205", `assistant: bookFlight{"flight":"VX205","seats":2}`, "tool: bookFlight=booked"}},
			},
			ran: map[string]int{"bookFlight": 1},
		},
		{
			name:    "alice books too many seats",
			who:     alice,
			replies: []scripted.Reply{book(`{"flight":"VX205","seats":12}`)},
			want:    []seen{{Tools: []string{"flightStatus", "bookFlight"}, Messages: []string{"user: Book VX205"}}},
			ran:     map[string]int{},
			code:    authz.CodeExecutionDenied,
			reason:  `forbidden by policy "at-most-nine-seats"`,
		},
		{
			name:    "bob cannot see bookFlight",
			who:     bob,
			replies: []scripted.Reply{book(`{"flight":"VX205"}`)},
			want:    []seen{{Tools: []string{"flightStatus"}, Messages: []string{"user: Book VX205"}}},
			ran:     map[string]int{},
			code:    authz.CodeToolNotExposed,
		},
		{
			name:    "bob checks a flight",
			who:     bob,
			replies: []scripted.Reply{{ToolCalls: []toolgate.ToolCall{{ID: "c1", Name: "flightStatus", Arguments: `{"flight":"VX205"}`}}}, {Text: "On time."}},
			want: []seen{
				{Tools: []string{"flightStatus"}, Messages: []string{"user: Book VX205"}},
				{Tools: []string{"flightStatus"}, Messages: []string{
					"user: Book VX205", `assistant: flightStatus{"flight":"VX205"}`, "tool: flightStatus=on time"}},
			},
			ran: map[string]int{"flightStatus": 1},
		},
		{
			name:    "non-JSON arguments fail closed",
			who:     alice,
			replies: []scripted.Reply{book(`{"flight":`)},
			want:    []seen{{Tools: []string{"flightStatus", "bookFlight"}, Messages: []string{"user: Book VX205"}}},
			ran:     map[string]int{},
			code:    authz.CodeExecutionDenied,
			reason:  "the arguments are not valid JSON",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f flights
			model := scripted.New(tc.replies...)
			client := toolgate.NewClient(model, f.tools(), &toolgate.ClientOptions{Authorize: authz.NewGuard(policy, nil).Begin})
			_, err := client.Call(context.Background(), &toolgate.CallParams{Principal: tc.who, Input: "Book VX205"})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				var de *authz.DenialError
				if !errors.As(err, &de) || de.Code != tc.code {
					t.Fatalf("got error %v, want a denial %s", err, tc.code)
				}
				if !strings.Contains(de.Reason, tc.reason) {
					t.Errorf("got reason %q, want it to contain %q", de.Reason, tc.reason)
				}
			}
			if diff := cmp.Diff(tc.want, summarize(model.Prompts())); diff != "" {
				t.Errorf("prompts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ran, f.ran()); diff != "" {
				t.Errorf("tool runs (-want +got):\n%s", diff)
			}
		})
	}
}
