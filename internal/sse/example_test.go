package sse_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/internal/sse"
)

func ExampleReader() {
	stream := ": ping\n\n" +
		"id: k3v9x2mq7a-1\nevent: paused\ndata: {\"conversation_id\":\"conv_X\",\"kind\":\"paused\",\"pause_id\":\"pause_P\"}\n\n"
	r := sse.NewReader(strings.NewReader(stream))
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Comment != "" {
			fmt.Println("comment:", ev.Comment)
			continue
		}
		fmt.Println(ev.ID, ev.Type, ev.Data)
	}
	// Output:
	// comment: ping
	// k3v9x2mq7a-1 paused {"conversation_id":"conv_X","kind":"paused","pause_id":"pause_P"}
}
