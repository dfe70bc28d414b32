package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

// serviceLog runs the service of a configuration file through one pause
// and its allowed decision, closes it, and returns the path of the audit
// log it wrote.
func serviceLog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "serve.yaml")
	text := `agents:
  flights:
    model: {provider: scripted-demo}
    tools: [flightStatus, bookFlight]
    requester_roles: [traveller]
    approvals:
      - {tools: [bookFlight], roles: [approver]}
store:
  sqlite: data/toolgate.db
authentication:
  api_keys:
    - {sha256: ` + server.HashAPIKey("k-ada") + `, principal: {id: ada, roles: [traveller]}}
    - {sha256: ` + server.HashAPIKey("k-bob") + `, principal: {id: bob, roles: [approver]}}
`
	if err := os.WriteFile(cfgPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := serve.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, closeAll, err := serve.Build(context.Background(), fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, key, body string) string {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	body := do("POST", "/v1/conversations", "k-ada", `{}`)
	conv := between(t, body, `"id":"`, `"`)
	body = do("POST", "/v1/conversations/"+conv+"/messages", "k-ada", `{"input":"`+flightdemo.Input+`"}`)
	pause := between(t, body, `"pause":{"id":"`, `"`)
	do("POST", "/v1/conversations/"+conv+"/pauses/"+pause+"/decisions", "k-bob", `{"decisions":[{"key":"call_book","verdict":"allow"}]}`)
	srv.Close()
	if err := closeAll(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "data", "toolgate.db")
}

// between returns the text of s between the first start and the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	v, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("no %s…%s in %s", start, end, s)
	}
	return v
}

// TestAuditVerifyServiceLog verifies the log the service writes, and
// catches an edited and a deleted row of it.
func TestAuditVerifyServiceLog(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		code      int
		wants     []string
	}{
		{"intact", "", 0, []string{"intact, 4 records"}},
		{"an edited row", `UPDATE audit_records SET body = replace(body, '"reason":"allow"', '"reason":"deny"') WHERE seq = 2`, 1, []string{"BROKEN at record 2 (hash_mismatch)", "intact records before it: 1"}},
		{"a deleted row", `DELETE FROM audit_records WHERE seq = 3`, 1, []string{"BROKEN at record 3 (out_of_sequence)", "intact records before it: 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := serviceLog(t)
			if tc.sql != "" {
				tamper(t, path, tc.sql)
			}
			code, out, errOut := runArgs(t, "", false, "audit", "verify", "--db", path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			mustContain(t, out+errOut, tc.wants...)
		})
	}
}
