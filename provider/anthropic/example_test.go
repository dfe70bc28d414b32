package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

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
