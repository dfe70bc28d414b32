// Package flightdemo is the flight-booking story shared by "toolgate demo"
// and the default agent of "toolgate serve": two tools (flightStatus runs at
// once, bookFlight needs a person's decision) and a scripted model that asks
// for both in one reply.
package flightdemo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/scripted"
)

// Input is the user's message of the story.
const Input = "Check flight VX205 and book it if it is on time."

// PrivateInput holds an e-mail address and a card number that the model
// must never see.
const PrivateInput = "Check flight VX205 and book it if it is on time, for ada.lovelace@example.com, card 4111 1111 1111 1111."

// SystemPrompt is the agent's system prompt.
const SystemPrompt = "You are a travel agent. Check a flight's status before you book it, and use the tools for both."

// Tools are the story's tools with their run counters. The zero value is
// ready to use; it is safe for concurrent use.
type Tools struct {
	// Status and Book count the runs of flightStatus and bookFlight.
	Status, Book atomic.Int32

	mu       sync.Mutex
	bookArgs []string // guarded by mu: the arguments bookFlight received, as JSON
}

type flightArgs struct {
	Flight string `json:"flight" jsonschema:"the flight number, for example VX205"`
}

type bookArgs struct {
	Flight string `json:"flight" jsonschema:"the flight number, for example VX205"`
	Email  string `json:"email,omitempty" jsonschema:"where to send the ticket"`
	Card   string `json:"card,omitempty" jsonschema:"the card to pay with"`
}

// BookArgs returns the arguments bookFlight received, as JSON, in order.
func (d *Tools) BookArgs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.bookArgs)
}

// Tools returns new tools that count their runs in d: flightStatus and
// bookFlight, which requires confirmation.
func (d *Tools) Tools() []*toolgate.Tool {
	return []*toolgate.Tool{
		toolgate.NewToolFor("flightStatus", "Get the status of a flight",
			func(_ context.Context, _ *toolgate.ToolRequest, in flightArgs) (string, error) {
				d.Status.Add(1)
				return "Flight " + in.Flight + " is on time", nil
			}, nil),
		toolgate.NewToolFor("bookFlight", "Book a seat on a flight",
			func(_ context.Context, req *toolgate.ToolRequest, in bookArgs) (string, error) {
				d.Book.Add(1)
				d.mu.Lock()
				d.bookArgs = append(d.bookArgs, string(req.Arguments))
				d.mu.Unlock()
				if in.Email != "" {
					return "Booked " + in.Flight + "; the ticket goes to " + in.Email, nil
				}
				return "Booked " + in.Flight, nil
			}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}}),
	}
}

// The flight numbers in the tools' results.
var (
	statusPattern = regexp.MustCompile(`Flight ([A-Za-z0-9-]{1,16}) is on time`)
	bookedPattern = regexp.MustCompile(`Booked ([A-Za-z0-9-]{1,16})`)
)

// resultFlight returns the flight number a tool result names, or "the
// flight".
func resultFlight(p *regexp.Regexp, content string) string {
	if m := p.FindStringSubmatch(content); m != nil {
		return m[1]
	}
	return "the flight"
}

// tokenPattern matches the privacy guard's tokens, such as [EMAIL_ADDRESS_1].
var tokenPattern = regexp.MustCompile(`\[[A-Z_]+_[0-9]+\]`)

// Model plays the model's part: it asks for both tools in one reply (only
// for the tools it is offered), passing on the contact details it was
// given, and answers from the tool results it gets back.
func Model() *scripted.Model {
	return scripted.NewFunc(func(p *toolgate.Prompt) (scripted.Reply, error) {
		if len(p.Messages) == 0 {
			return scripted.Reply{}, errors.New("demo model: empty prompt")
		}
		tm, ok := p.Messages[len(p.Messages)-1].(*toolgate.ToolMessage)
		if !ok {
			user, _ := p.Messages[len(p.Messages)-1].(*toolgate.UserMessage)
			reply := scripted.Reply{Text: "I will check the flight and book it."}
			if p.Tool("flightStatus") != nil {
				reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: "call_status", Name: "flightStatus", Arguments: `{"flight":"VX205"}`})
			}
			if p.Tool("bookFlight") == nil {
				reply.Text = "I will check the flight. Booking is not something I can do for you."
			} else {
				args := `{"flight":"VX205"}`
				if user != nil {
					if toks := tokenPattern.FindAllString(user.Text, 2); len(toks) == 2 {
						args = fmt.Sprintf(`{"flight":"VX205","email":%q,"card":%q}`, toks[0], toks[1])
					}
				}
				reply.ToolCalls = append(reply.ToolCalls, toolgate.ToolCall{ID: "call_book", Name: "bookFlight", Arguments: args})
			}
			return reply, nil
		}
		var parts []string
		for _, r := range tm.Results {
			switch {
			case r.Name == "flightStatus" && r.Status == toolgate.ResultOK:
				parts = append(parts, resultFlight(statusPattern, r.Content)+" is on time.")
			case r.Name == "bookFlight" && r.Status == toolgate.ResultOK:
				// The flight the tool booked, which an approver may have
				// changed from the one asked for.
				parts = append(parts, "Your seat on "+resultFlight(bookedPattern, r.Content)+" is booked.")
				if toks := tokenPattern.FindAllString(r.Content, 1); len(toks) == 1 {
					parts = append(parts, "The ticket goes to "+toks[0]+".")
				}
			case r.Status == toolgate.ResultDenied || r.Status == toolgate.ResultExpired:
				parts = append(parts, fmt.Sprintf("I did not run %s: %s", r.Name, r.Content))
			case r.Status == toolgate.ResultInterrupted:
				parts = append(parts, fmt.Sprintf("I do not know whether %s went through: %s", r.Name, r.Content))
			default:
				parts = append(parts, fmt.Sprintf("%s failed: %s", r.Name, r.Content))
			}
		}
		return scripted.Reply{Text: strings.Join(parts, " ")}, nil
	})
}
