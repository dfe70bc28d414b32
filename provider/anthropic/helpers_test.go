package anthropic

import (
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// answer is one canned HTTP answer of the fake API.
type answer = fakeapi.Answer

// noAnswer is the Messages API error the fake answers when no answer is
// left.
const noAnswer = `{"type":"error","error":{"type":"api_error","message":"no answer left in the test"}}`

// fakeAPI is a stand-in for the Messages API that records requests and
// replays answers in order.
type fakeAPI struct{ *fakeapi.Server }

func newFakeAPI(t *testing.T, answers ...answer) fakeAPI {
	t.Helper()
	return fakeAPI{fakeapi.New(t, &fakeapi.Options{NoAnswer: noAnswer}, answers...)}
}

// model returns a model talking to the fake API with retries off.
func (f fakeAPI) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(&Options{APIKey: "test-key", BaseURL: f.URL, Model: "claude-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jsonAnswer is a 200 answer with a JSON body.
func jsonAnswer(body string) answer { return fakeapi.JSON(body) }

// sseAnswer is a 200 answer streaming events given as name, data pairs.
func sseAnswer(pairs ...string) answer { return fakeapi.Stream(sse(pairs...)) }

// sse is a stream of events given as name, data pairs.
func sse(pairs ...string) string { return fakeapi.Events(pairs...) }

// errorAnswer is an API error answer.
func errorAnswer(status int, typ, message string) answer {
	return answer{Status: status, Header: map[string]string{"x-should-retry": "false"},
		Body: fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, message)}
}

// checkGolden compares got (a JSON value) with the golden file name in
// testdata (see [fakeapi.Golden]).
func checkGolden(t *testing.T, name, comment string, got any) {
	t.Helper()
	fakeapi.Golden(t, name, comment, got)
}
