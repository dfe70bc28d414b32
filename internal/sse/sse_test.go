package sse_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/internal/sse"
)

// readAll returns the events and comments of stream until its end or an
// error.
func readAll(stream string, maxLine int) ([]sse.Event, error) {
	r := sse.NewReaderSize(strings.NewReader(stream), maxLine)
	var out []sse.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, *ev)
	}
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []sse.Event
	}{
		{"one event", "event: paused\ndata: {\"a\":1}\nid: x-1\n\n",
			[]sse.Event{{Type: "paused", Data: `{"a":1}`, ID: "x-1", Retry: -1}}},
		{"default type and multi-line data", "data: a\ndata\ndata:  b\n\n",
			[]sse.Event{{Data: "a\n\n b", Retry: -1}}},
		{"comments", ": ping\n:\n: \nevent: x\ndata: y\n\n",
			[]sse.Event{{Comment: "ping", Retry: -1}, {Type: "x", Data: "y", Retry: -1}}},
		{"CRLF and CR line ends", "event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r",
			[]sse.Event{{Type: "a", Data: "1", Retry: -1}, {Type: "b", Data: "2", Retry: -1}}},
		{"no data, no event", "event: nothing\n\nid: 7\n\ndata: z\n\n",
			[]sse.Event{{Data: "z", ID: "7", Retry: -1}}},
		{"id carries over, NUL id ignored", "id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n",
			[]sse.Event{{Data: "a", ID: "1", Retry: -1}, {Data: "b", ID: "1", Retry: -1}}},
		{"retry", "retry: 3000\ndata: a\n\nretry: -5\nretry: x\ndata: b\n\n",
			[]sse.Event{{Data: "a", Retry: 3000}, {Data: "b", Retry: -1}}},
		{"unknown fields ignored", "foo: bar\ndata: a\n\n",
			[]sse.Event{{Data: "a", Retry: -1}}},
		{"unterminated event dropped", "data: a\n\ndata: b\n",
			[]sse.Event{{Data: "a", Retry: -1}}},
		{"unterminated line dropped", "data: a\n\ndata: b",
			[]sse.Event{{Data: "a", Retry: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(tc.stream, 100)
			if err != io.EOF {
				t.Fatalf("error %v, want io.EOF", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReaderLineTooLong(t *testing.T) {
	got, err := readAll("data: ok\n\ndata: "+strings.Repeat("x", 20)+"\n\n", 16)
	if !errors.Is(err, sse.ErrLineTooLong) {
		t.Fatalf("error %v, want ErrLineTooLong", err)
	}
	if len(got) != 1 || got[0].Data != "ok" {
		t.Errorf("events before the long line: %v", got)
	}
}

// errReader fails after its data.
type errReader struct{ data string }

func (e *errReader) Read(p []byte) (int, error) {
	if e.data == "" {
		return 0, errors.New("connection reset")
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestReaderError(t *testing.T) {
	r := sse.NewReader(&errReader{data: "data: a\n\ndata: b\n"})
	if ev, err := r.Next(); err != nil || ev.Data != "a" {
		t.Fatalf("first: %v %v", ev, err)
	}
	if _, err := r.Next(); err == nil || err.Error() != "connection reset" {
		t.Fatalf("second: %v, want the reader's error", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add("event: paused\ndata: {}\nid: a-1\n\n: ping\n\n")
	f.Add("data\r\ndata:x\r\rretry: 10\n\n")
	f.Add("id: \x00\n:\n\n\n")
	f.Fuzz(func(t *testing.T, stream string) {
		evs, err := readAll(stream, 64)
		if err != io.EOF && !errors.Is(err, sse.ErrLineTooLong) {
			t.Fatalf("error %v", err)
		}
		// Every event written back in the canonical form reads the same.
		var b strings.Builder
		for _, ev := range evs {
			if ev.Comment != "" {
				fmt.Fprintf(&b, ": %s\n", ev.Comment)
				continue
			}
			if ev.Type != "" {
				fmt.Fprintf(&b, "event: %s\n", ev.Type)
			}
			for line := range strings.SplitSeq(ev.Data, "\n") {
				fmt.Fprintf(&b, "data: %s\n", line)
			}
			b.WriteString("\n")
		}
		again, err := readAll(b.String(), 1<<20)
		if err != io.EOF {
			t.Fatalf("reading back: %v", err)
		}
		for i := range evs {
			evs[i].ID, evs[i].Retry = "", -1
		}
		if diff := cmp.Diff(evs, again); diff != "" {
			t.Errorf("round trip of %q (-first +again):\n%s", stream, diff)
		}
	})
}
