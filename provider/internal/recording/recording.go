// Package recording reads the recorded provider exchanges that the adapters'
// tests replay, kept under each adapter's testdata/recorded directory (see
// the SOURCES file there for where each recording comes from).
//
// A recording is a txtar-like file: a comment saying what it holds, then for
// each exchange n the sections "n/request.json" (the request body as sent),
// "n/status" (the HTTP status) and "n/response.json" or "n/response.sse"
// (the response body as received, JSON or a server-sent event stream).
package recording

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Exchange is one recorded request and its answer.
type Exchange struct {
	Request  []byte // the request body
	Status   int    // the HTTP status of the answer
	Response []byte // the answer's body
	Stream   bool   // the answer is a server-sent event stream
}

// File is a parsed recording.
type File struct {
	Comment   string
	Exchanges []Exchange
}

// Read parses the recording at path.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses a recording.
func Parse(data []byte) (*File, error) {
	f := &File{}
	comment, rest, _ := cutSection(data)
	f.Comment = strings.TrimSpace(string(comment))
	for len(rest) > 0 {
		name, body, next, err := section(rest)
		if err != nil {
			return nil, err
		}
		rest = next
		num, field, ok := strings.Cut(name, "/")
		if !ok {
			return nil, fmt.Errorf("recording: section %q: want n/field", name)
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n > 1000 {
			return nil, fmt.Errorf("recording: section %q: bad exchange number", name)
		}
		for len(f.Exchanges) <= n {
			f.Exchanges = append(f.Exchanges, Exchange{})
		}
		e := &f.Exchanges[n]
		switch field {
		case "request.json":
			e.Request = bytes.TrimSuffix(body, []byte("\n"))
		case "status":
			e.Status, err = strconv.Atoi(strings.TrimSpace(string(body)))
			if err != nil {
				return nil, fmt.Errorf("recording: section %q: %v", name, err)
			}
		case "response.json":
			e.Response = bytes.TrimSuffix(body, []byte("\n"))
		case "response.sse":
			e.Response, e.Stream = body, true
		default:
			return nil, fmt.Errorf("recording: unknown section %q", name)
		}
	}
	return f, nil
}

// cutSection splits data before its first section marker.
func cutSection(data []byte) (before, rest []byte, found bool) {
	if bytes.HasPrefix(data, []byte("-- ")) {
		return nil, data, true
	}
	i := bytes.Index(data, []byte("\n-- "))
	if i < 0 {
		return data, nil, false
	}
	return data[:i+1], data[i+1:], true
}

// section reads the section at the start of data: its name, body and what
// follows it.
func section(data []byte) (name string, body, rest []byte, err error) {
	line, after, _ := bytes.Cut(data, []byte("\n"))
	l := string(line)
	if !strings.HasPrefix(l, "-- ") || !strings.HasSuffix(l, " --") || len(l) < 7 {
		return "", nil, nil, fmt.Errorf("recording: bad section marker %q", l)
	}
	name = l[3 : len(l)-3]
	body, rest, _ = cutSection(after)
	if body == nil && rest == nil {
		body = after
	}
	return name, body, rest, nil
}
