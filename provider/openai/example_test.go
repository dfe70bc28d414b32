package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider/openai"
)

// fakeOpenAI stands in for the API: it asks for the weather tool, then
// answers with the tool's result it finds in the conversation.
func fakeOpenAI() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(string(body), `"role":"tool"`) {
			io.WriteString(w, completion("", "tool_calls", call{"call_1", "get_weather", `{"city":"Oslo"}`}))
			return
		}
		io.WriteString(w, completion("It is sunny in Oslo.", "stop"))
	}))
}

// A client runs a turn on an OpenAI model: the model calls a tool, reads
// its result and answers.
func ExampleNew() {
	srv := fakeOpenAI() // in real use: no BaseURL, and an API key
	defer srv.Close()

	model, err := openai.New(&openai.Options{
		Model:   "gpt-4.1-mini",
		APIKey:  "sk-...",
		BaseURL: srv.URL + "/v1",
	})
	if err != nil {
		panic(err)
	}
	weather := toolgate.NewToolFor("get_weather", "Get the weather for a city",
		func(_ context.Context, _ *toolgate.ToolRequest, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + in.City, nil
		}, nil)
	client := toolgate.NewClient(model, []*toolgate.Tool{weather}, nil)

	resp, err := client.Call(context.Background(), &toolgate.CallParams{Input: "How is the weather in Oslo?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text())
	fmt.Println("input tokens:", resp.Usage.InputTokens)
	// Output:
	// It is sunny in Oslo.
	// input tokens: 100
}

// A model streams text deltas, then a last chunk with the finish reason.
func ExampleModel_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{chatChunk(`{"content":"Hello"}`, ""), chatChunk(`{"content":", world."}`, "stop"), chatUsageChunk} {
			io.WriteString(w, "data: "+e+"\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	model, err := openai.New(&openai.Options{Model: "gpt-4.1-mini", BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	prompt := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Greet the world."}}}
	for chunk, err := range model.Stream(context.Background(), prompt) {
		if err != nil {
			panic(err)
		}
		if chunk.Text != "" {
			fmt.Printf("%q\n", chunk.Text)
		}
		if chunk.FinishReason != "" {
			fmt.Println("finish:", chunk.FinishReason, "output tokens:", chunk.Usage.OutputTokens)
		}
	}
	// Output:
	// "Hello"
	// ", world."
	// finish: stop output tokens: 10
}

// ExampleOptions_storeResponses shows what a Responses request sends by
// default (store false, reasoning returned encrypted) and with
// StoreResponses.
func ExampleOptions_storeResponses() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Store   *bool    `json:"store"`
			Include []string `json:"include"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Println("store:", *req.Store, "include:", req.Include)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, response("completed", "ok"))
	}))
	defer srv.Close()

	prompt := &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Hi"}}}
	for _, store := range []bool{false, true} {
		model, err := openai.New(&openai.Options{Model: "gpt-5", BaseURL: srv.URL, API: openai.Responses, StoreResponses: store})
		if err != nil {
			panic(err)
		}
		if _, err := model.Generate(context.Background(), prompt); err != nil {
			panic(err)
		}
	}
	// Output:
	// store: false include: [reasoning.encrypted_content]
	// store: true include: []
}

// A reasoning model's reply keeps its reasoning among its parts, with the
// encrypted content that goes back with the next request; Text and
// ToolCalls stay what the gate checks.
func ExampleModel_Generate_reasoning() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","status":"completed","output":[`+
			`{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAA...","summary":[{"type":"summary_text","text":"The user wants the weather."}]},`+
			`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}]}`)
	}))
	defer srv.Close()

	model, err := openai.New(&openai.Options{Model: "gpt-5", BaseURL: srv.URL, API: openai.Responses})
	if err != nil {
		panic(err)
	}
	resp, err := model.Generate(context.Background(), &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "Weather in Oslo?"}}})
	if err != nil {
		panic(err)
	}
	for _, p := range resp.Message().Content() {
		switch p := p.(type) {
		case toolgate.ReasoningPart:
			fmt.Printf("reasoning (%s): %s [encrypted: %v]\n", p.Provider, p.Text, p.Signature != "")
		case toolgate.ToolCallPart:
			fmt.Println("call:", resp.Message().ToolCalls[p.Index].Name)
		}
	}
	// Output:
	// reasoning (openai.responses): The user wants the weather. [encrypted: true]
	// call: get_weather
}
