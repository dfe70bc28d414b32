package fakeapi

import (
	"fmt"
	"strings"
)

// Events returns a server-sent event stream of named events, given as
// name, data pairs: "event: name\ndata: data\n\n" each. It panics on an
// odd number of arguments.
func Events(pairs ...string) string {
	if len(pairs)%2 != 0 {
		panic("fakeapi.Events: odd number of arguments")
	}
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", pairs[i], pairs[i+1])
	}
	return b.String()
}

// Data returns a server-sent event stream of unnamed events, a "data:"
// line each, every line ended by eol ("\n", or "\r\n" as some APIs send).
func Data(eol string, data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + eol + eol)
	}
	return b.String()
}
