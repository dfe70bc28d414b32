package fakeapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenSection is the marker of the JSON section of a golden file.
const goldenSection = "-- request.json --\n"

// Golden compares got, a request body (as []byte or [json.RawMessage]) or
// any other value marshalled as JSON, with the golden file
// testdata/name.txtar of the package under test. The file is txtar-like:
// the comment says what the file pins, then a section request.json holds
// the JSON with sorted keys. The JSON values are compared, not their
// layout. With the -update flag, the file is first rewritten with comment
// and got.
func Golden(tb testing.TB, name, comment string, got any) {
	tb.Helper()
	switch b := got.(type) {
	case []byte:
		got = json.RawMessage(b)
	}
	var gotV any
	if raw, ok := got.(json.RawMessage); ok {
		if err := json.Unmarshal(raw, &gotV); err != nil {
			tb.Fatalf("the request body is not JSON: %v", err)
		}
	} else {
		data, err := json.Marshal(got)
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(data, &gotV); err != nil {
			tb.Fatal(err)
		}
	}
	path := filepath.Join("testdata", name+".txtar")
	if *update {
		pretty, err := json.MarshalIndent(gotV, "", "  ")
		if err != nil {
			tb.Fatal(err)
		}
		var b bytes.Buffer
		b.WriteString(strings.TrimSpace(comment) + "\n" + goldenSection)
		b.Write(pretty)
		b.WriteString("\n")
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run the test with -update to create it)", err)
	}
	_, js, ok := bytes.Cut(data, []byte("\n"+goldenSection))
	if !ok {
		tb.Fatalf("%s: no request.json section", path)
	}
	var want any
	if err := json.Unmarshal(js, &want); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		tb.Errorf("request differs from %s (-want +got):\n%s", path, diff)
	}
}
