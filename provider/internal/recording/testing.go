package recording

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"testing"
)

// Load returns the exchanges of testdata/recorded/name.txtar of the
// package under test, failing tb when the file cannot be read.
func Load(tb testing.TB, name string) []Exchange {
	tb.Helper()
	f, err := Read(filepath.Join("testdata", "recorded", name+".txtar"))
	if err != nil {
		tb.Fatal(err)
	}
	return f.Exchanges
}

// Post sends body as JSON to url and reports an error on tb unless the
// answer has status want.
func Post(tb testing.TB, url string, body []byte, want int) {
	tb.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		tb.Errorf("got %d, want %d: %s", resp.StatusCode, want, msg)
	}
}
