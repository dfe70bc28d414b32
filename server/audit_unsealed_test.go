package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// pendingLog is a memory log that also holds records committed but not
// sealed yet, as a log that seals after commit does: Records returns them
// after the sealed ones.
type pendingLog struct {
	audit.MemoryLog
	pending []audit.Record
}

func (l *pendingLog) Records(ctx context.Context, q *audit.Query) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		for r, err := range l.MemoryLog.Records(ctx, q) {
			if !yield(r, err) || err != nil {
				return
			}
		}
		for _, r := range l.pending {
			if q.Selects(&r) && !yield(&r, nil) {
				return
			}
		}
	}
}

// TestAuditEndpointShowsUnsealed: a record not sealed yet is shown with
// the conversation's records and in the export, with seq 0; the chain
// still verifies, and the verification counts it apart.
func TestAuditEndpointShowsUnsealed(t *testing.T) {
	l := &pendingLog{}
	f := newAuditFixture(t, auditOptions{log: l})
	conv, pause := f.pause(travellerKey)
	f.must(200, "POST", decisionsPath(conv, pause), approverKey, allowBook)
	l.pending = []audit.Record{{ConversationID: conv, PauseID: pause, Kind: audit.KindRevealed,
		Actor: audit.Actor{ID: "ada", Source: audit.SourcePerson}, Reason: "shown"}}
	if err := audit.Seal(audit.Anchor{}, &l.pending[0]); err != nil {
		t.Fatal(err)
	}
	l.pending[0].Seq, l.pending[0].Hash = 0, ""

	out := f.must(200, "GET", "/v1/conversations/"+conv+"/audit", auditorKey, "")
	recs := out["records"].([]any)
	last := recs[len(recs)-1].(map[string]any)
	v := out["verification"].(map[string]any)
	if len(recs) != 5 || last["kind"] != "revealed" || last["seq"] != 0.0 || last["hash"] != "" {
		t.Errorf("records %v, want the four sealed ones and the unsealed one last", recs)
	}
	if out["verified"] != true || v["records"] != 4.0 || v["unsealed"] != 1.0 {
		t.Errorf("verified %v, verification %v; want verified, 4 records and 1 unsealed", out["verified"], v)
	}

	req := httptest.NewRequest("GET", "/v1/audit/export?after=4", nil)
	req.Header.Set("Authorization", "Bearer "+auditorKey)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(w.Body.String()))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("export line %s: %v", sc.Text(), err)
		}
		kinds = append(kinds, string(r.Kind))
		if !r.Unsealed() {
			t.Errorf("export after the last sealed record: %+v, want only the unsealed one", r)
		}
	}
	if w.Code != 200 || len(kinds) != 1 || kinds[0] != "revealed" {
		t.Errorf("export after record 4: %d %v, want the unsealed record", w.Code, kinds)
	}
}
