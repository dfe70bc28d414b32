package server_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/audit"
	auditsqlite "github.com/toolgate/toolgate/audit/sqlite"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/serve"
	"github.com/toolgate/toolgate/server"
)

const revealerKey = "key-revealer"

// privateValues are the personal data of flightdemo.PrivateInput, in every
// form they could be stored in.
var privateValues = []string{"ada.lovelace@example.com", "4111 1111 1111 1111", "4111111111111111", "lovelace"}

// privacyConfig is the flight agent with privacy on: bookFlight receives
// the originals, the model and the views see tokens, "revealer" may
// reveal.
func privacyConfig(t *testing.T) (path string) {
	t.Helper()
	t.Setenv("TG_TEST_VAULT", strings.Repeat("5a", 32))
	keys := ""
	for _, k := range []struct{ key, id, roles string }{
		{travellerKey, "ada", "traveller"},
		{approverKey, "bob", "approver"},
		{revealerKey, "rex", "approver, revealer"},
		{auditorKey, "ivy", "auditor"},
	} {
		keys += fmt.Sprintf("\t\t- sha256: %s\n\t\t\tprincipal: {id: %s, roles: [%s]}\n", server.HashAPIKey(k.key), k.id, k.roles)
	}
	return writeConfig(t, `agents:
	flights:
		model:
			provider: scripted-demo
		tools: [flightStatus, bookFlight]
		requester_roles: [traveller]
		privacy:
			enabled: true
			vault_key_env: TG_TEST_VAULT
			disclosures:
				bookFlight: [EMAIL_ADDRESS, CREDIT_CARD]
		reveal_roles: [revealer]
		approvals:
			- tools: [bookFlight]
				roles: [approver]
store:
	sqlite: data/toolgate.db
read_all_roles: [revealer]
audit:
	roles: [auditor]
authentication:
	api_keys:
`+keys)
}

// jsonText is v as JSON text.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// holdsPrivate reports the private values s holds.
func holdsPrivate(s string) []string {
	var out []string
	for _, v := range privateValues {
		if strings.Contains(strings.ToLower(s), v) {
			out = append(out, v)
		}
	}
	return out
}

func TestReveal(t *testing.T) {
	path := privacyConfig(t)
	fc, err := serve.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, fc)
	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.PrivateInput+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("turn: %v, want paused", out)
	}
	pause := out["pause"].(map[string]any)["id"].(string)
	bookCall := func(item map[string]any) string {
		for _, c := range item["calls"].([]any) {
			if c := c.(map[string]any); c["tool"] == "bookFlight" {
				return c["arguments"].(string)
			}
		}
		t.Fatalf("no bookFlight call in %v", item)
		return ""
	}

	// The inbox shows tokens.
	inbox := f.must(200, "GET", "/v1/inbox", approverKey, "")
	if got := holdsPrivate(jsonText(t, inbox)); got != nil {
		t.Errorf("the inbox shows %v", got)
	}
	item := inbox["pauses"].([]any)[0].(map[string]any)
	if args := bookCall(item); !strings.Contains(args, "[EMAIL_ADDRESS_1]") || item["revealed"] != nil {
		t.Errorf("inbox arguments %s (revealed %v), want tokens", args, item["revealed"])
	}
	// So does the context of the decision: the request as the model saw it.
	if req := item["context"].(map[string]any)["request"].(string); !strings.Contains(req, "[EMAIL_ADDRESS_1]") {
		t.Errorf("the inbox context's request %q, want tokens", req)
	}
	// The approver reads the paused conversation, with tokens too.
	if got := holdsPrivate(jsonText(t, f.must(200, "GET", "/v1/conversations/"+conv, approverKey, ""))); got != nil {
		t.Errorf("the approver's view of the paused conversation shows %v", got)
	}
	// Each item says whether its caller may reveal it.
	if item["may_reveal"] != nil {
		t.Errorf("the approver's item says may_reveal %v, want it omitted", item["may_reveal"])
	}
	if got := f.must(200, "GET", "/v1/inbox", revealerKey, "")["pauses"].([]any)[0].(map[string]any)["may_reveal"]; got != true {
		t.Errorf("the revealer's item says may_reveal %v, want true", got)
	}
	// Only a revealer may reveal; the reveal is audited.
	if code, out := f.do("GET", "/v1/inbox?reveal=true", approverKey, ""); code != 403 || out["error"] != "forbidden" {
		t.Errorf("an approver's reveal: %d %v, want 403", code, out)
	}
	f.must(400, "GET", "/v1/inbox?reveal=perhaps", revealerKey, "")
	item = f.must(200, "GET", "/v1/inbox?reveal=true", revealerKey, "")["pauses"].([]any)[0].(map[string]any)
	if args := bookCall(item); !strings.Contains(args, "ada.lovelace@example.com") || !strings.Contains(args, "4111 1111 1111 1111") || item["revealed"] != true {
		t.Errorf("revealed arguments %s (revealed %v), want the originals", args, item["revealed"])
	}
	if req := item["context"].(map[string]any)["request"].(string); !strings.Contains(req, "ada.lovelace@example.com") {
		t.Errorf("the revealed context's request %q, want the original", req)
	}
	// Without ?reveal the revealer sees tokens too.
	if got := holdsPrivate(jsonText(t, f.must(200, "GET", "/v1/inbox", revealerKey, ""))); got != nil {
		t.Errorf("the revealer's inbox without reveal shows %v", got)
	}

	// The conversation view: tokens for its owner, originals on reveal.
	convPath := "/v1/conversations/" + conv
	view := f.must(200, "GET", convPath, travellerKey, "")
	if got := holdsPrivate(jsonText(t, view)); got != nil {
		t.Errorf("the owner's view shows %v", got)
	}
	if !strings.Contains(jsonText(t, view["messages"]), "[EMAIL_ADDRESS_1]") {
		t.Errorf("the view shows no token: %v", view["messages"])
	}
	f.must(403, "GET", convPath+"?reveal=true", travellerKey, "")
	view = f.must(200, "GET", convPath+"?reveal=true", revealerKey, "")
	if got := holdsPrivate(jsonText(t, view)); len(got) < 2 || view["revealed"] != true {
		t.Errorf("the revealed view shows %v (revealed %v), want the originals", got, view["revealed"])
	}

	// Decide: allowed here, denied with personal data in the message in a
	// second conversation.
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	conv2 := f.must(201, "POST", "/v1/conversations", travellerKey, `{}`)["id"].(string)
	out = f.must(200, "POST", "/v1/conversations/"+conv2+"/messages", travellerKey, `{"input":"`+flightdemo.PrivateInput+`"}`)
	pause2 := out["pause"].(map[string]any)["id"].(string)
	f.must(200, "POST", decisionsPath(conv2, pause2), approverKey, `{"decisions":[{"key":"call_book","verdict":"deny","message":"not for ada.lovelace@example.com"}]}`)
	// The history shows what the approver typed through the guard.
	if h := f.must(200, "GET", "/v1/history", approverKey, ""); len(h["items"].([]any)) != 2 || holdsPrivate(jsonText(t, h)) != nil {
		t.Errorf("the history %v shows %v, want two items and tokens", h, holdsPrivate(jsonText(t, h)))
	}

	l, err := auditsqlite.Open(t.Context(), filepath.Join(filepath.Dir(path), "data", "toolgate.db"), &auditsqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got []string
	for _, r := range auditRecords(t, l, conv) {
		got = append(got, summary(r))
	}
	want := []string{
		"requested P call_book person:ada awaiting a decision",
		"revealed P call_status person:rex originals shown in the inbox",
		"revealed P call_book person:rex originals shown in the inbox",
		"revealed -  person:rex originals shown in the conversation view",
		"decided P call_book person:bob allow",
		"executed P call_status person:bob ok",
		"executed P call_book person:bob ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep, err := audit.Verify(t.Context(), l, nil); err != nil || rep.Records != 11 {
		t.Errorf("Verify = %+v, %v; want 11 intact records", rep, err)
	}
	if out := f.must(200, "GET", convPath+"/audit", auditorKey, ""); out["verified"] != true {
		t.Errorf("the auditor's view: %v", out)
	}

	// No original value anywhere in the audit table, in any row or column.
	db, err := sql.Open("sqlite", filepath.Join(filepath.Dir(path), "data", "toolgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT seq, conversation_id, body FROM audit_records")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var seq int
		var c, body string
		if err := rows.Scan(&seq, &c, &body); err != nil {
			t.Fatal(err)
		}
		n++
		if got := holdsPrivate(c + body); got != nil {
			t.Errorf("row %d holds %v: %s", seq, got, body)
		}
	}
	if err := rows.Err(); err != nil || n != 11 {
		t.Errorf("scanned %d rows (%v), want 11", n, err)
	}
}
