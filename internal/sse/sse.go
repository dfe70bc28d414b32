// Package sse reads server-sent event streams (the text/event-stream
// format of the HTML standard), for the tests and Go clients of the
// service's event endpoints.
//
//	r := sse.NewReader(resp.Body)
//	for {
//		ev, err := r.Next()
//		if err != nil {
//			return err // io.EOF: the stream ended
//		}
//		if ev.Comment != "" {
//			continue // a heartbeat such as ": ping"
//		}
//		fmt.Println(ev.Type, ev.Data)
//	}
package sse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrLineTooLong is returned by [Reader.Next] for a line longer than the
// reader's limit.
var ErrLineTooLong = errors.New("sse: line too long")

// DefaultMaxLine is the longest line a [Reader] accepts by default.
const DefaultMaxLine = 1 << 20

// Event is one event of a stream, or one comment line.
type Event struct {
	// Type is the event's "event:" field; "" means the default type,
	// "message".
	Type string
	// Data is the event's "data:" lines joined by "\n".
	Data string
	// ID is the stream's last event id once the event is read: the
	// event's "id:" field, or the one before it.
	ID string
	// Retry is the event's "retry:" field in milliseconds; -1 when absent.
	Retry int
	// Comment is the text of a comment line (": ping" gives "ping"). An
	// Event with a comment is only that comment; its other fields are
	// zero, but for ID.
	Comment string
}

// Reader reads the events of a stream. It is not safe for concurrent use.
type Reader struct {
	// fixed at creation
	r   *bufio.Reader
	max int

	lastID  string
	skipLF  bool // the previous line ended with '\r': a '\n' next is part of its end
	pending Event
	data    strings.Builder
	hasData bool
	line    []byte
}

// NewReader returns a reader of the stream r that accepts lines of up to
// [DefaultMaxLine] bytes.
func NewReader(r io.Reader) *Reader {
	return NewReaderSize(r, DefaultMaxLine)
}

// NewReaderSize returns a reader of the stream r that accepts lines of up
// to maxLine bytes (at least 1).
func NewReaderSize(r io.Reader, maxLine int) *Reader {
	return &Reader{r: bufio.NewReader(r), max: max(maxLine, 1), pending: Event{Retry: -1}}
}

// Next returns the next event or comment of the stream. It returns io.EOF
// when the stream ends (an event not ended by an empty line is dropped, as
// the standard says), [ErrLineTooLong] for an overlong line, and the
// underlying reader's errors.
func (r *Reader) Next() (*Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if ev := r.dispatch(); ev != nil {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			c := strings.TrimPrefix(string(line[1:]), " ")
			if c == "" {
				continue
			}
			return &Event{Comment: c, ID: r.lastID, Retry: -1}, nil
		}
		r.field(line)
	}
}

// dispatch ends the event being read: it returns it, or nil when it has
// no data.
func (r *Reader) dispatch() *Event {
	ev := r.pending
	ev.Data = r.data.String()
	ev.ID = r.lastID
	ok := r.hasData
	r.pending, r.hasData = Event{Retry: -1}, false
	r.data.Reset()
	if !ok {
		return nil
	}
	return &ev
}

// field applies one "name: value" line to the event being read.
func (r *Reader) field(line []byte) {
	name, value, _ := strings.Cut(string(line), ":")
	value = strings.TrimPrefix(value, " ")
	switch name {
	case "event":
		r.pending.Type = value
	case "data":
		if r.hasData {
			r.data.WriteByte('\n')
		}
		r.data.WriteString(value)
		r.hasData = true
	case "id":
		if !strings.ContainsRune(value, 0) {
			r.lastID = value
		}
	case "retry":
		if n, err := strconv.Atoi(value); err == nil && n >= 0 && strings.Trim(value, "0123456789") == "" {
			r.pending.Retry = n
		}
	}
}

// readLine returns the next line without its end ("\n", "\r\n" or "\r").
// The slice is valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		b, err := r.r.ReadByte()
		if err != nil {
			if err == io.EOF && len(r.line) > 0 {
				// A last line without its end is incomplete: drop it.
				return nil, io.EOF
			}
			return nil, err
		}
		if r.skipLF {
			r.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return r.line, nil
		case '\r':
			r.skipLF = true
			return r.line, nil
		}
		if len(r.line) >= r.max {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, r.max)
		}
		r.line = append(r.line, b)
	}
}
