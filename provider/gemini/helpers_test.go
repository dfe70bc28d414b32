package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/provider/internal/fakeapi"
)

// answer is one canned HTTP answer of the fake API.
type answer = fakeapi.Answer

// noAnswer is the Gemini API error the fake answers when no answer is
// left.
const noAnswer = `{"error":{"code":418,"message":"no answer left in the test","status":"UNKNOWN"}}`

// fakeAPI is a stand-in for the Gemini API that records requests and
// replays answers in order.
type fakeAPI struct{ *fakeapi.Server }

func newFakeAPI(t *testing.T, answers ...answer) fakeAPI {
	t.Helper()
	return fakeAPI{fakeapi.New(t, &fakeapi.Options{NoAnswer: noAnswer}, answers...)}
}

// model returns a model talking to the fake API.
func (f fakeAPI) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(&Options{APIKey: "test-key", BaseURL: f.URL, Model: "gemini-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jsonAnswer is a 200 answer with a JSON body.
func jsonAnswer(body string) answer { return fakeapi.JSON(body) }

// sseAnswer is a 200 answer streaming the responses given as JSON.
func sseAnswer(responses ...string) answer { return fakeapi.Stream(sse(responses...)) }

// sse is a stream of the responses given as JSON, compacted to one line
// each, with the CRLF line ends the Gemini API sends.
func sse(responses ...string) string {
	lines := make([]string, len(responses))
	for i, r := range responses {
		lines[i] = compact(r)
	}
	return fakeapi.Data("\r\n", lines...)
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
	return answer{Status: status,
		Body: fmt.Sprintf(`{"error":{"code":%d,"message":%q,"status":%q}}`, status, message, st)}
}

// checkGolden compares got (a JSON value) with the golden file name in
// testdata (see [fakeapi.Golden]).
func checkGolden(t *testing.T, name, comment string, got any) {
	t.Helper()
	fakeapi.Golden(t, name, comment, got)
}
