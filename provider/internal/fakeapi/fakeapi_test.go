package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/internal/recording"
)

// do sends a request to the server and returns the answer's status,
// content type and body.
func do(t *testing.T, method, url, body string, header map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestServerReplaysInOrderAndRecords(t *testing.T) {
	s := New(t, &Options{NoAnswer: `{"none":true}`},
		JSON(`{"n":1}`),
		Answer{Status: 429, Header: map[string]string{"Retry-After": "3"}, Body: `{"n":2}`},
		Answer{Handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "handled")
		}})
	s.Add(Stream(Data("\n", `{"n":4}`)))
	type got struct {
		status      int
		ctype, body string
	}
	want := []got{
		{200, "application/json", `{"n":1}`},
		{429, "application/json", `{"n":2}`},
		{202, "", "handled"},
		{200, "text/event-stream", "data: {\"n\":4}\n\n"},
		{418, "application/json", `{"none":true}`},
	}
	for i, w := range want {
		status, ctype, body := do(t, "POST", fmt.Sprintf("%s/v1/p%d?q=%d", s.URL, i, i), fmt.Sprintf(`{"i":%d}`, i), map[string]string{"X-Test": fmt.Sprint(i)})
		if w.ctype == "" {
			ctype = ""
		}
		if g := (got{status, ctype, body}); g != w {
			t.Errorf("answer %d: got %+v, want %+v", i, g, w)
		}
	}
	if s.Count() != len(want) {
		t.Fatalf("Count: got %d, want %d", s.Count(), len(want))
	}
	for i := range want {
		if got, want := string(s.Body(i)), fmt.Sprintf(`{"i":%d}`, i); got != want {
			t.Errorf("Body(%d): got %s, want %s", i, got, want)
		}
		if diff := cmp.Diff(map[string]any{"i": float64(i)}, s.JSON(i)); diff != "" {
			t.Errorf("JSON(%d) (-want +got):\n%s", i, diff)
		}
		if got, want := s.Path(i), fmt.Sprintf("/v1/p%d", i); got != want {
			t.Errorf("Path(%d): got %s, want %s", i, got, want)
		}
		if got, want := s.URI(i), fmt.Sprintf("/v1/p%d?q=%d", i, i); got != want {
			t.Errorf("URI(%d): got %s, want %s", i, got, want)
		}
		if got := s.Header(i).Get("X-Test"); got != fmt.Sprint(i) {
			t.Errorf("Header(%d): got X-Test %q, want %d", i, got, i)
		}
		if got := s.Requests()[i].Method; got != "POST" {
			t.Errorf("request %d: method %s", i, got)
		}
	}
}

// fakeTB records the failures of a test helper; Fatal ends the helper by
// panicking with errFatal.
type fakeTB struct {
	testing.TB
	errors []string
}

var errFatal = errors.New("fatal")

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	panic(errFatal)
}
func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// failures runs fn with a fakeTB and returns what it reported.
func failures(t *testing.T, fn func(tb testing.TB)) []string {
	t.Helper()
	f := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != errFatal {
				panic(r)
			}
		}()
		fn(f)
	}()
	return f.errors
}

func TestServerAccessorsFailForMissingRequests(t *testing.T) {
	s := New(t, nil, JSON(`not json`))
	do(t, "POST", s.URL, "not json", nil)
	for name, fn := range map[string]func(tb testing.TB){
		"Body(1)":  func(tb testing.TB) { s.tb = tb; s.Body(1) },
		"JSON(0)":  func(tb testing.TB) { s.tb = tb; s.JSON(0) },
		"Path(-1)": func(tb testing.TB) { s.tb = tb; s.Path(-1) },
	} {
		if got := failures(t, fn); len(got) != 1 {
			t.Errorf("%s: got failures %q, want one", name, got)
		}
	}
	s.tb = t
}

func TestServerFailUnanswered(t *testing.T) {
	var got []string
	inner := &fakeTB{TB: t}
	s := New(t, &Options{FailUnanswered: true})
	s.tb = inner
	status, _, body := do(t, "GET", s.URL+"/x", "", nil)
	got = inner.errors
	if status != http.StatusTeapot || !strings.Contains(body, "no answer left") {
		t.Errorf("got %d %s, want 418 with the default error", status, body)
	}
	if len(got) != 1 || !strings.Contains(got[0], "GET /x") {
		t.Errorf("got failures %q, want one naming GET /x", got)
	}
}

// evenRule rejects bodies of odd length and remembers the statuses of the
// replies served.
type evenRule struct{ learned []int }

func (r *evenRule) Check(body []byte) error {
	if len(body)%2 != 0 {
		return fmt.Errorf("odd length %d", len(body))
	}
	return nil
}

func (r *evenRule) Learn(e recording.Exchange) error {
	r.learned = append(r.learned, e.Status)
	return nil
}

func TestReferee(t *testing.T) {
	rule := &evenRule{}
	refuse := func(reason string) Answer { return Answer{Status: 400, Body: `{"refused":"` + reason + `"}`} }
	f := NewReferee(t, rule, refuse, nil,
		recording.Exchange{Status: 200, Response: []byte(`{"a":1}`)},
		recording.Exchange{Status: 201, Response: []byte("data: x\n\n"), Stream: true})
	type answer struct {
		status      int
		ctype, body string
	}
	var got []answer
	for _, body := range []string{"ab", "abc", "abcd", "ef"} {
		status, ctype, b := do(t, "POST", f.URL, body, nil)
		got = append(got, answer{status, ctype, b})
	}
	want := []answer{
		{200, "application/json", `{"a":1}`},
		{400, "application/json", `{"refused":"odd length 3"}`},
		{201, "text/event-stream", "data: x\n\n"},
		{418, "application/json", `{"error":{"message":"no answer left in the test"}}`},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(answer{})); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"odd length 3"}, f.Rejected()); diff != "" {
		t.Errorf("Rejected (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{200, 201}, rule.learned); diff != "" {
		t.Errorf("learned (-want +got):\n%s", diff)
	}
	if f.Count() != 4 {
		t.Errorf("Count: got %d, want 4", f.Count())
	}
	if got := failures(t, f.CheckAccepted); len(got) != 1 {
		t.Errorf("CheckAccepted after a rejection: got failures %q, want one", got)
	}
	if got := failures(t, NewReferee(t, rule, refuse, nil).CheckAccepted); len(got) != 0 {
		t.Errorf("CheckAccepted with no rejection: got failures %q", got)
	}
	f.AddReplies(recording.Exchange{Status: 200, Response: []byte(`{"b":2}`)})
	if status, _, body := do(t, "POST", f.URL, "gh", nil); status != 200 || body != `{"b":2}` {
		t.Errorf("added reply: got %d %s", status, body)
	}
}

func TestSSE(t *testing.T) {
	if got, want := Events("a", `{"x":1}`, "b", "{}"), "event: a\ndata: {\"x\":1}\n\nevent: b\ndata: {}\n\n"; got != want {
		t.Errorf("Events: got %q, want %q", got, want)
	}
	if got, want := Data("\r\n", "1", "2"), "data: 1\r\n\r\ndata: 2\r\n\r\n"; got != want {
		t.Errorf("Data: got %q, want %q", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("Events with an odd number of arguments did not panic")
		}
	}()
	Events(strings.Fields("a")...) // built at run time: one name, no data
}

func TestGolden(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	golden := "What the file pins.\n-- request.json --\n{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}\n"
	if err := os.WriteFile(filepath.Join("testdata", "g.txtar"), []byte(golden), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		got   any
		fails bool
	}{
		{"same value", map[string]any{"b": []bool{true}, "a": 1}, false},
		{"same body", []byte(`{"b":[true],"a":1}`), false},
		{"same raw message", []byte(`{"a":1.0,"b":[true]}`), false},
		{"other value", map[string]any{"a": 2, "b": []bool{true}}, true},
		{"other body", []byte(`{"a":1}`), true},
		{"body not JSON", []byte(`{`), true},
	} {
		got := failures(t, func(tb testing.TB) { Golden(tb, "g", "", tt.got) })
		if (len(got) > 0) != tt.fails {
			t.Errorf("%s: got failures %q, want failing %v", tt.name, got, tt.fails)
		}
	}
	if got := failures(t, func(tb testing.TB) { Golden(tb, "missing", "", 1) }); len(got) != 1 || !strings.Contains(got[0], "-update") {
		t.Errorf("missing file: got %q, want one failure naming -update", got)
	}

	*update = true
	defer func() { *update = false }()
	Golden(t, "new", "  Pins a new body.\n", []byte(`{"z":1,"a":{"c":2,"b":3}}`))
	data, err := os.ReadFile(filepath.Join("testdata", "new.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	want := "Pins a new body.\n-- request.json --\n{\n  \"a\": {\n    \"b\": 3,\n    \"c\": 2\n  },\n  \"z\": 1\n}\n"
	if string(data) != want {
		t.Errorf("written file:\n%s\nwant:\n%s", data, want)
	}
}

func TestSameRequest(t *testing.T) {
	recorded := []byte(`{"model":"m","messages":[{"role":"user"}],"stream":true}`)
	for _, tt := range []struct {
		name  string
		sent  string
		keys  []string
		fails int
	}{
		{"same", `{"stream":true,"messages":[{"role":"user"}],"model":"m"}`, nil, 0},
		{"other field", `{"model":"m","messages":[{"role":"user"}],"stream":false}`, nil, 1},
		{"other field not compared", `{"model":"m","messages":[{"role":"user"}],"stream":false}`, []string{"model", "messages"}, 0},
		{"compared fields differ", `{"model":"n","messages":[],"stream":true}`, []string{"model", "messages"}, 2},
		{"not JSON", `{`, nil, 1},
	} {
		got := failures(t, func(tb testing.TB) { SameRequest(tb, "request", recorded, []byte(tt.sent), tt.keys...) })
		if len(got) != tt.fails {
			t.Errorf("%s: got failures %q, want %d", tt.name, got, tt.fails)
		}
	}
}

// errModel answers every call and stream with err.
type errModel struct{ err error }

func (m errModel) Generate(context.Context, *toolgate.Prompt) (*toolgate.Response, error) {
	return nil, m.err
}

func (m errModel) Stream(context.Context, *toolgate.Prompt) iter.Seq2[*toolgate.Chunk, error] {
	return func(yield func(*toolgate.Chunk, error) bool) { yield(nil, m.err) }
}

var hi = &toolgate.Prompt{Messages: []toolgate.Message{&toolgate.UserMessage{Text: "hi"}}}

// The shared checks fail an adapter that gets them wrong.
func TestChecksFail(t *testing.T) {
	wrongKind := &provider.Error{Provider: "p", Kind: provider.KindServer, StatusCode: 429, Message: "slow"}
	for name, fn := range map[string]func(tb testing.TB){
		"CheckCanceled, no error": func(tb testing.TB) { CheckCanceled(tb, errModel{}, hi) },
		"CheckCanceled, other error": func(tb testing.TB) {
			CheckCanceled(tb, errModel{errors.New("boom")}, hi)
		},
		"CheckErrors, other kind": func(tb testing.TB) {
			CheckErrors(tb, hi, "p", []ErrorCase{{Status: 429, Message: "slow", Kind: provider.KindRateLimit, Sentinel: provider.ErrRateLimited}},
				func(ErrorCase) (toolgate.Model, *Server) { return errModel{wrongKind}, New(t, nil) })
		},
		"CheckErrors, no provider.Error": func(tb testing.TB) {
			CheckErrors(tb, hi, "p", []ErrorCase{{Status: 429}}, func(ErrorCase) (toolgate.Model, *Server) { return errModel{errors.New("x")}, New(t, nil) })
		},
		"CheckStreamCut, no error": func(tb testing.TB) {
			CheckStreamCut(tb, hi, "", func(Answer) toolgate.Model { return errModel{} })
		},
	} {
		if got := failures(t, fn); len(got) == 0 {
			t.Errorf("%s: the check passed", name)
		}
	}
	// A model that does it right passes.
	right := &provider.Error{Provider: "p", Kind: provider.KindRateLimit, StatusCode: 429, Message: "slow", Err: provider.ErrRateLimited}
	if got := failures(t, func(tb testing.TB) {
		CheckErrors(tb, hi, "p", []ErrorCase{{Status: 429, Message: "slow", Kind: provider.KindRateLimit, Sentinel: provider.ErrRateLimited}},
			func(ErrorCase) (toolgate.Model, *Server) {
				s := New(t, nil)
				do(t, "POST", s.URL, "{}", nil) // the one request
				return errModel{right}, s
			})
	}); len(got) != 0 {
		t.Errorf("CheckErrors failed a right model: %q", got)
	}
	if got := failures(t, func(tb testing.TB) { CheckCanceled(tb, errModel{context.Canceled}, hi) }); len(got) != 0 {
		t.Errorf("CheckCanceled failed a right model: %q", got)
	}
}
