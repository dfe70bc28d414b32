package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/anthropic"
)

// Example runs a turn with a tool call against a local server that answers
// like the Messages API: first with a tool_use block, then with text.
func Example() {
	replies := []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		  "content":[{"type":"tool_use","id":"toolu_1","name":"flight_status","input":{"flight":"VX205"}}],
		  "stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":20}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		  "content":[{"type":"text","text":"VX205 is on time."}],
		  "stop_reason":"end_turn","usage":{"input_tokens":90,"output_tokens":8}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[0])
		replies = replies[1:]
	}))
	defer srv.Close()

	model, err := anthropic.New(&anthropic.Options{
		APIKey:  "sk-ant-example",
		BaseURL: srv.URL, // "" for the real API
		Model:   "claude-sonnet-4-5",
	})
	if err != nil {
		log.Fatal(err)
	}
	type flight struct {
		Flight string `json:"flight"`
	}
	status := toolgate.NewToolFor("flight_status", "The status of a flight.",
		func(_ context.Context, _ *toolgate.ToolRequest, in flight) (string, error) {
			return in.Flight + ": on time", nil
		}, nil)

	client := toolgate.NewClient(model, []*toolgate.Tool{status}, nil)
	resp, err := client.Call(context.Background(), &toolgate.CallParams{Input: "Is VX205 on time?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text())
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// VX205 is on time.
	// 140 28
}

// ExampleOptions_thinking turns extended thinking on with a budget of 2048
// tokens; the local server prints the request's thinking field and the
// usage shows the thinking tokens.
func ExampleOptions_thinking() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Thinking json.RawMessage `json:"thinking"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Println("thinking:", string(req.Thinking))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		  "content":[{"type":"thinking","thinking":"A short count.","signature":"c2ln"},{"type":"text","text":"Three."}],
		  "stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":40,"output_tokens_details":{"thinking_tokens":34}}}`)
	}))
	defer srv.Close()

	model, err := anthropic.New(&anthropic.Options{
		APIKey:          "sk-ant-example",
		BaseURL:         srv.URL,
		Model:           "claude-sonnet-4-5",
		MaxOutputTokens: 8192,
		ThinkingBudget:  2048, // at least 1024, less than MaxOutputTokens
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := model.Generate(context.Background(), &toolgate.Prompt{
		Messages: []toolgate.Message{&toolgate.UserMessage{Text: "How many r in strawberry?"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text(), resp.Usage.OutputTokens, resp.Usage.ReasoningTokens)
	// Output:
	// thinking: {"budget_tokens":2048,"type":"enabled"}
	// Three. 40 34
}

// Example_thinkingPauseResume pauses a turn with extended thinking on a
// tool that needs confirmation and resumes it once a person allowed the
// call: the resumed request sends the thinking block back, unchanged,
// before the tool_use block, as the API requires. The local server prints
// the blocks of the assistant turn it gets back.
func Example_thinkingPauseResume() {
	replies := []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		  "content":[{"type":"thinking","thinking":"The user wants a booking; the tool books.","signature":"c2lnbmVk"},
		             {"type":"tool_use","id":"toolu_1","name":"book_flight","input":{"flight":"VX205"}}],
		  "stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":30}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		  "content":[{"type":"text","text":"Your seat on VX205 is booked."}],
		  "stop_reason":"end_turn","usage":{"input_tokens":90,"output_tokens":8}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string
				Content []struct{ Type, Signature string }
			}
		}
		json.NewDecoder(r.Body).Decode(&req)
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				for _, b := range m.Content {
					fmt.Println("sent back:", strings.TrimSpace(b.Type+" "+b.Signature))
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[0])
		replies = replies[1:]
	}))
	defer srv.Close()

	model, err := anthropic.New(&anthropic.Options{
		APIKey: "sk-ant-example", BaseURL: srv.URL, Model: "claude-sonnet-4-5",
		MaxOutputTokens: 8192, ThinkingBudget: 2048,
	})
	if err != nil {
		log.Fatal(err)
	}
	type flight struct {
		Flight string `json:"flight"`
	}
	book := toolgate.NewToolFor("book_flight", "Book a seat on a flight.",
		func(_ context.Context, _ *toolgate.ToolRequest, in flight) (string, error) {
			return "booked " + in.Flight, nil
		}, &toolgate.ToolOptions{Metadata: toolgate.ToolMetadata{RequiresConfirmation: true}})

	ctx := context.Background()
	client := toolgate.NewClient(model, []*toolgate.Tool{book}, nil)
	resp, err := client.Call(ctx, &toolgate.CallParams{ConversationID: "trip", Input: "Book me on VX205."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("paused:", resp.Paused(), resp.Awaiting)
	resp, err = client.Resume(ctx, &toolgate.ResumeTurnParams{
		ConversationID: "trip", PauseID: resp.PauseID,
		Decisions: []toolgate.Decision{toolgate.Allow("toolu_1")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text())
	// Output:
	// paused: true [toolu_1]
	// sent back: thinking c2lnbmVk
	// sent back: tool_use
	// Your seat on VX205 is booked.
}
