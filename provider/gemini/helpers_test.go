package gemini

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// answer is one canned HTTP answer of the fake API.
type answer struct {
	status  int
	header  map[string]string
	body    string
	handler http.HandlerFunc // when set, answers instead
}

// fakeAPI is an httptest server that records request bodies and replays
// answers in order.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	answers  []answer
	requests [][]byte
	paths    []string
	headers  []http.Header
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.paths = append(f.paths, r.URL.RequestURI())
	f.headers = append(f.headers, r.Header.Clone())
	if len(f.answers) == 0 {
		f.mu.Unlock()
		http.Error(w, `{"error":{"code":418,"message":"no answer left in the test","status":"UNKNOWN"}}`, http.StatusTeapot)
		return
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	f.mu.Unlock()
	if a.handler != nil {
		a.handler(w, r)
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	if a.status == 0 {
		a.status = http.StatusOK
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

// request returns the i-th request body decoded.
func (f *fakeAPI) request(i int) map[string]any {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		f.t.Fatalf("got %d requests, want at least %d", len(f.requests), i+1)
	}
	var v map[string]any
	if err := json.Unmarshal(f.requests[i], &v); err != nil {
		f.t.Fatalf("request %d is not JSON: %v\n%s", i, err, f.requests[i])
	}
	return v
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// model returns a model talking to the fake API with retries off.
func (f *fakeAPI) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(&Options{APIKey: "test-key", BaseURL: f.srv.URL, Model: "gemini-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jsonAnswer is a 200 answer with a JSON body.
func jsonAnswer(body string) answer { return answer{body: body} }

// sseAnswer is a 200 answer streaming the responses given as JSON.
func sseAnswer(responses ...string) answer {
	return answer{header: map[string]string{"Content-Type": "text/event-stream"}, body: sse(responses...)}
}

func sse(responses ...string) string {
	var b strings.Builder
	for _, r := range responses {
		fmt.Fprintf(&b, "data: %s\r\n\r\n", compact(r))
	}
	return b.String()
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(err)
	}
	return b.String()
}

// errorAnswer is an API error answer.
func errorAnswer(status int, st, message string) answer {
	return answer{status: status,
		body: fmt.Sprintf(`{"error":{"code":%d,"message":%q,"status":%q}}`, status, message, st)}
}

// checkGolden compares got (a JSON value) with the golden file name in
// testdata, a txtar-like file: the comment says what the file pins, then
// "-- request.json --" and the JSON. With -update, the file is rewritten
// with comment.
func checkGolden(t *testing.T, name, comment string, got any) {
	t.Helper()
	path := filepath.Join("testdata", name+".txtar")
	pretty, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		var b bytes.Buffer
		b.WriteString(strings.TrimSpace(comment) + "\n-- request.json --\n")
		b.Write(pretty)
		b.WriteString("\n")
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	_, js, ok := bytes.Cut(data, []byte("-- request.json --\n"))
	if !ok {
		t.Fatalf("%s: no request.json section", path)
	}
	var want any
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var gotV any
	if err := json.Unmarshal(pretty, &gotV); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("request differs from %s (-want +got):\n%s", path, diff)
	}
}
