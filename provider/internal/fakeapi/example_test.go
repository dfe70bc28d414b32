package fakeapi_test

import (
	"fmt"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// A stream of named events, as the Anthropic and OpenAI Responses APIs
// send them, and one of unnamed events with the CRLF line ends of the
// Gemini API.
func ExampleEvents() {
	fmt.Printf("%q\n", fakeapi.Events("message_stop", `{"type":"message_stop"}`))
	fmt.Printf("%q\n", fakeapi.Data("\r\n", `{"candidates":[]}`))
	// Output:
	// "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	// "data: {\"candidates\":[]}\r\n\r\n"
}
