package server_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
)

// TestAuditInStore takes a pause through allow and deny with the records
// and the audit log in the SQLite store's database: the records are the
// same as with a separate log, the chain verifies, and the decision's
// outcome and the inbox agree with them.
func TestAuditInStore(t *testing.T) {
	f := newAuditFixture(t, auditOptions{inStore: true})
	conv, pause := f.pause(travellerKey)
	f.check(conv, "requested P call_book person:ada awaiting a decision")
	if item := f.inboxItem(approverKey); item == nil || item["pause_id"] != pause {
		t.Fatalf("inbox item %v, want pause %s", item, pause)
	}
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	f.check(conv,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob allow",
		"executed P call_status person:bob ok",
		"executed P call_book person:bob ok",
	)
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	ds := got["decisions"].([]any)
	if len(ds) != 1 || ds[0].(map[string]any)["outcome"] != "decided" {
		t.Errorf("decision records %v, want one decided", ds)
	}
	if items := f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any); len(items) != 0 {
		t.Errorf("the inbox still holds %v", items)
	}

	conv2, pause2 := f.pause(travellerKey)
	f.must(200, "POST", decisionsPath(conv2, pause2), approverKey, `{"decisions":[{"key":"call_book","verdict":"deny","message":"no"}]}`)
	f.check(conv2,
		"requested P call_book person:ada awaiting a decision",
		"decided P call_book person:bob deny",
		"executed P call_status person:bob ok",
		"denied P call_book person:bob denied; message "+audit.Digest([]byte("no")),
	)
	if rep, err := audit.Verify(t.Context(), f.log, nil); err != nil || rep.Records != 8 {
		t.Errorf("Verify = %+v, %v; want 8 intact records", rep, err)
	}
}

// TestPauseStoredWithItsRecords breaks the audit log's last record, so
// that no audit record can be appended, and posts a message that pauses:
// the request fails, and nothing of the pause is stored — no pause
// missing from the inbox or without its requested record. With the log
// repaired the same message pauses, fully recorded.
func TestPauseStoredWithItsRecords(t *testing.T) {
	f := newAuditFixture(t, auditOptions{inStore: true})
	conv0, _ := f.pause(travellerKey)
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(f.path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var body string
	if err := db.QueryRow("SELECT body FROM audit_records ORDER BY seq DESC LIMIT 1").Scan(&body); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE audit_records SET body = '{' WHERE seq = (SELECT max(seq) FROM audit_records)"); err != nil {
		t.Fatal(err)
	}

	conv := f.must(201, "POST", "/v1/conversations", travellerKey, `{"agent":"flights"}`)["id"].(string)
	if code, out := f.do("POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`); code != 500 {
		t.Fatalf("a message whose pause cannot be audited: %d %v, want 500", code, out)
	}
	got := f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")
	if got["pause"] != nil {
		t.Errorf("a pause was stored although its records were not: %v", got["pause"])
	}
	for _, item := range f.must(200, "GET", "/v1/inbox", approverKey, "")["pauses"].([]any) {
		if item.(map[string]any)["conversation_id"] == conv {
			t.Errorf("the inbox shows the pause whose records were not written")
		}
	}

	if _, err := db.Exec("UPDATE audit_records SET body = ? WHERE seq = (SELECT max(seq) FROM audit_records)", body); err != nil {
		t.Fatal(err)
	}
	out := f.must(200, "POST", "/v1/conversations/"+conv+"/messages", travellerKey, `{"input":"`+flightdemo.Input+`"}`)
	if out["status"] != "paused" {
		t.Fatalf("after the repair: %v, want paused", out)
	}
	f.check(conv, "requested P call_book person:ada awaiting a decision")
	f.check(conv0, "requested P call_book person:ada awaiting a decision")
}
