package server_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/flightdemo"
	"github.com/toolgate/toolgate/server"
)

// historyIDs returns the conversation ids of a history answer's items and
// the answer's next cursor.
func historyIDs(t *testing.T, out map[string]any) (ids []string, next string) {
	t.Helper()
	for _, it := range out["items"].([]any) {
		ids = append(ids, it.(map[string]any)["conversation_id"].(string))
	}
	next, _ = out["next"].(string)
	return ids, next
}

// TestHistory: decided and expired pauses are listed newest first, to
// those who may know them, filtered and paged; bad queries get 400.
func TestHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pauseTTL = time.Hour
		f := newAuditFixture(t, auditOptions{memory: true, ttl: pauseTTL})
		decided, pause := f.pause(travellerKey)
		f.must(200, "POST", decisionsPath(decided, pause), approverKey, allowBook)
		time.Sleep(time.Minute)
		expired, _ := f.pause(travellerKey)
		time.Sleep(pauseTTL)
		synctest.Wait()
		open, _ := f.pause(travellerKey) // still open: not in the history

		out := f.must(200, "GET", "/v1/history", approverKey, "")
		if ids, next := historyIDs(t, out); !slices.Equal(ids, []string{expired, decided}) || next != "" {
			t.Fatalf("history %v next %q, want [%s %s] newest first", ids, next, expired, decided)
		}
		items := out["items"].([]any)
		first, second := items[0].(map[string]any), items[1].(map[string]any)
		if first["outcome"] != "expired" || first["source"] != "expiry" || first["requester"] != "ada" || first["agent"] != "flights" {
			t.Errorf("expired item %v", first)
		}
		if second["outcome"] != "decided" || second["decided_by"] != "bob" {
			t.Errorf("decided item %v", second)
		}
		for _, it := range []map[string]any{first, second} {
			if got := it["tools"].([]any); len(got) != 2 || got[0] != "flightStatus" || got[1] != "bookFlight" {
				t.Errorf("item %v: tools %v, want the reply's two", it["pause_id"], got)
			}
		}

		for q, want := range map[string][]string{
			"outcome=decided":   {decided},
			"outcome=expired":   {expired},
			"outcome=failed":    nil,
			"decider=bob":       {decided},
			"decider=cy":        nil,
			"tool=bookFlight":   {expired, decided},
			"tool=cancelFlight": nil,
			"agent=flights":     {expired, decided},
			"agent=other":       nil,
			"requester=ada":     {expired, decided},
			"requester=eve":     nil,
			"tool=bookFlight&outcome=decided&requester=ada": {decided},
		} {
			ids, _ := historyIDs(t, f.must(200, "GET", "/v1/history?"+q, approverKey, ""))
			if !slices.Equal(ids, want) {
				t.Errorf("?%s: %v, want %v", q, ids, want)
			}
		}

		// Pages of one.
		ids, next := historyIDs(t, f.must(200, "GET", "/v1/history?limit=1", approverKey, ""))
		if !slices.Equal(ids, []string{expired}) || next == "" {
			t.Fatalf("first page %v next %q", ids, next)
		}
		ids, next2 := historyIDs(t, f.must(200, "GET", "/v1/history?limit=1&after="+url.QueryEscape(next), approverKey, ""))
		if !slices.Equal(ids, []string{decided}) || next2 != "" {
			t.Errorf("second page %v next %q, want [%s] and no more", ids, next2, decided)
		}

		// Who may know: the requester (a reader), the admin; not a guest.
		for key, want := range map[string]int{travellerKey: 2, adminKey: 2, guestKey: 0, auditorKey: 0} {
			if ids, _ := historyIDs(t, f.must(200, "GET", "/v1/history", key, "")); len(ids) != want {
				t.Errorf("history of %s: %v, want %d items", key, ids, want)
			}
		}
		if ids, _ := historyIDs(t, f.must(200, "GET", "/v1/history", approverKey, "")); slices.Contains(ids, open) {
			t.Errorf("the open pause %s is in the history", open)
		}

		// Hostile and bad queries.
		junk := base64.RawURLEncoding.EncodeToString([]byte("x\ny"))
		for _, q := range []string{"limit=0", "limit=201", "limit=abc", "limit=-1", "outcome=deciding", "outcome=DECIDED",
			"after=%25%25", "after=" + junk, "after=" + base64.RawURLEncoding.EncodeToString([]byte("1\n\n")),
			"tool=" + strings.Repeat("x", 300), "decider=" + strings.Repeat("é", 200), "after=" + strings.Repeat("A", 2000)} {
			code, out := f.do("GET", "/v1/history?"+q, approverKey, "")
			if code != http.StatusBadRequest || out["error"] != "invalid_request" {
				t.Errorf("?%s: %d %v, want 400 invalid_request", q, code, out)
			}
		}
		if code, _ := f.do("GET", "/v1/history", "", ""); code != http.StatusUnauthorized {
			t.Errorf("without a key: %d, want 401", code)
		}
	})
}

// exportLines reads the records of an export, failing on a line that is
// not one.
func exportLines(t *testing.T, body string) []audit.Record {
	t.Helper()
	var out []audit.Record
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// TestAuditExport: auditors export the log as JSON lines, each record
// verifiable; others are refused; bad queries get 400.
func TestAuditExport(t *testing.T) {
	f := newAuditFixture(t, auditOptions{})
	conv, pause := f.pause(travellerKey)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	other, _ := f.pause(travellerKey)

	req := httptestRequest(t, "/v1/audit/export", auditorKey)
	rec := f.serve(req)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/jsonl" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("export: %d %v", rec.Code, rec.Header())
	}
	all := exportLines(t, rec.Body.String())
	if len(all) < 5 {
		t.Fatalf("%d records exported, want the decided pause's and the open one's", len(all))
	}
	for i, r := range all {
		if r.Seq != uint64(i+1) || r.ComputeHash() != r.Hash || i > 0 && r.PrevHash != all[i-1].Hash {
			t.Errorf("record %d (seq %d) does not chain", i, r.Seq)
		}
	}
	code, body := f.raw("GET", "/v1/audit/export?conversation="+other, auditorKey, "")
	recs := exportLines(t, body)
	if code != 200 || len(recs) == 0 || slices.ContainsFunc(recs, func(r audit.Record) bool { return r.ConversationID != other }) {
		t.Errorf("export of %s: %d, %d records %v", other, code, len(recs), recs)
	}
	code, body = f.raw("GET", "/v1/audit/export?after=2", auditorKey, "")
	if recs := exportLines(t, body); code != 200 || len(recs) != len(all)-2 || recs[0].Seq != 3 {
		t.Errorf("export after 2: %d, %d records", code, len(recs))
	}

	// Only auditors: a conversation's reader, an approver, the admin may
	// not.
	for _, key := range []string{travellerKey, approverKey, adminKey, guestKey} {
		if code, out := f.do("GET", "/v1/audit/export", key, ""); code != http.StatusForbidden || out["error"] != "forbidden" {
			t.Errorf("export by %s: %d %v, want 403", key, code, out)
		}
	}
	if code, _ := f.do("GET", "/v1/audit/export", "", ""); code != http.StatusUnauthorized {
		t.Errorf("export without a key: %d, want 401", code)
	}
	for _, q := range []string{"after=-1", "after=x", "after=1e3", "after=99999999999999999999999", "conversation=" + strings.Repeat("c", 300)} {
		if code, out := f.do("GET", "/v1/audit/export?"+q, auditorKey, ""); code != http.StatusBadRequest {
			t.Errorf("export ?%s: %d %v, want 400", q, code, out)
		}
	}

	// A service without an audit log.
	g := newFixtureWith(t, nil, flightdemo.Model(), func(c *server.Config) { c.AuditRoles = []string{"admin"} })
	if code, out := g.do("GET", "/v1/audit/export", adminKey, ""); code != http.StatusNotFound || out["error"] != "no_audit" {
		t.Errorf("export without a log: %d %v, want 404 no_audit", code, out)
	}
}

// httptestRequest is a GET of path with key.
func httptestRequest(t *testing.T, path, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://toolgate.test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return req
}

// TestApproverReadsPausedConversation: the approvers who may decide an
// open pause read its conversation (and its events) while it waits; a
// principal who may not decide it still gets 404, and so does the
// approver once it is decided.
func TestApproverReadsPausedConversation(t *testing.T) {
	f := newFixture(t, nil)
	conv, pause := f.pause(travellerKey)
	got := f.must(200, "GET", "/v1/conversations/"+conv, approverKey, "")
	p := got["pause"].(map[string]any)
	d := p["deciders"].(map[string]any)
	if d["may_decide"] != true || !slices.Equal(toStrings(d["roles"]), []string{"approver"}) {
		t.Errorf("the approver's deciders %v", d)
	}
	d = f.must(200, "GET", "/v1/conversations/"+conv, travellerKey, "")["pause"].(map[string]any)["deciders"].(map[string]any)
	if d["may_decide"] != false || !slices.Equal(toStrings(d["roles"]), []string{"approver"}) {
		t.Errorf("the requester's deciders %v, want the approver role and may_decide false", d)
	}
	for _, key := range []string{guestKey} {
		f.must(404, "GET", "/v1/conversations/"+conv, key, "")
		f.must(404, "GET", "/v1/conversations/"+conv+"/events", key, "")
	}
	// Reading is all: the approver posts nothing to it.
	f.must(404, "POST", "/v1/conversations/"+conv+"/messages", approverKey, `{"input":"hello"}`)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	f.must(404, "GET", "/v1/conversations/"+conv, approverKey, "")

	// The requester who is also an approver may not decide their own
	// call, and reads their own conversation as its owner; another
	// traveller's paused conversation stays hidden from a requester.
	own, _ := f.pause(selfKey)
	f.must(200, "GET", "/v1/conversations/"+own, selfKey, "")
	f.must(404, "GET", "/v1/conversations/"+own, travellerKey, "")
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestInboxContext: an inbox item carries the user's request, the model's
// words, each tool's description and why each awaiting call waits.
func TestInboxContext(t *testing.T) {
	f := newFixture(t, nil)
	f.pause(travellerKey)
	item := f.inboxItem(approverKey)
	ctx := item["context"].(map[string]any)
	if ctx["request"] != flightdemo.Input || ctx["said"] != "I will check the flight and book it." {
		t.Errorf("context %v, want the request and the reply's text", ctx)
	}
	calls := ctx["calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("context calls %v", calls)
	}
	status, book := calls[0].(map[string]any), calls[1].(map[string]any)
	if status["key"] != "call_status" || status["reason"] != nil || status["description"] == "" {
		t.Errorf("the free call's context %v", status)
	}
	if book["key"] != "call_book" || book["reason"] != "tool_requires_confirmation" || book["description"] == "" {
		t.Errorf("the awaiting call's context %v", book)
	}
	rules := book["rules"].([]any)
	if len(rules) != 1 || rules[0].(map[string]any)["index"] != 1.0 || !slices.Equal(toStrings(rules[0].(map[string]any)["roles"]), []string{"approver"}) {
		t.Errorf("rules %v", rules)
	}
}
