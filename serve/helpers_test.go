package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// The keys whose hashes examples/serve.yaml and validConfig hold.
const (
	exampleTravellerKey = "example-traveller-key"
	exampleApproverKey  = "example-approver-key"
)

// fixture is a server built from a file, and the requests the tests send
// to it.
type fixture struct {
	t   testing.TB
	h   http.Handler
	srv *server.Server
}

// build loads and builds fc into a served fixture.
func build(t testing.TB, fc *serve.FileConfig) *fixture {
	t.Helper()
	cfg, closeStore, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeStore(); err != nil {
			t.Error(err)
		}
	})
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &fixture{t: t, h: srv, srv: srv}
}

// serve sends req through the handler.
func (f *fixture) serve(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// raw sends a request and returns the status and the body.
func (f *fixture) raw(method, path, key, body string) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := f.serve(req)
	return rec.Code, rec.Body.String()
}

// must sends a request, fails the test unless the status is want, and
// returns the decoded JSON body.
func (f *fixture) must(want int, method, path, key, body string) map[string]any {
	f.t.Helper()
	code, text := f.raw(method, path, key, body)
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		f.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, text, err)
	}
	if code != want {
		f.t.Fatalf("%s %s: status %d %v, want %d", method, path, code, out, want)
	}
	return out
}

func decisionsPath(conv, pause string) string {
	return "/v1/conversations/" + conv + "/pauses/" + pause + "/decisions"
}

// writeConfig writes text (tabs turned into two spaces) to a file in a new
// directory, with an empty Cedar policy file beside it, and returns the
// file's path.
func writeConfig(t testing.TB, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policies.cedar"), []byte(flightsPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "\t", "  ")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const flightsPolicy = `permit (principal in Role::"traveller", action, resource);`

// validConfig is a valid file; the table below breaks it line by line.
const validConfig = `agents:
	flights:
		model:
			provider: scripted-demo
		tools: [flightStatus, bookFlight]
		confirmation:
			tools: [bookFlight]
		authorization:
			cedar: policies.cedar
		requester_roles: [traveller]
		approvals:
			- tools: [bookFlight]
				roles: [approver]
store:
	sqlite: data/toolgate.db
authentication:
	api_keys:
		- sha256: 84f71c9ac07c9c3ab0d2c54334bcf5cab957f375e87468b71092eacc65ffed75
			principal: {id: alice, roles: [traveller]}
		- sha256: 99c6533d0bfe6cb4465751fec0b04fe9e546a05f63485547b7dec32799a5f5c1
			principal: {id: bob, roles: [approver]}
`
