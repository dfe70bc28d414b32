package anthropic_test

import (
	"context"
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
