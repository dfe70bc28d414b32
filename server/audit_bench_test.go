package server_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// BenchmarkAuditedDecision measures a pause and its decision, as
// BenchmarkPauseAndDecide does, with the audit log in memory and in a
// SQLite file (four records per iteration: requested, decided, two
// executed); the difference to the run without a log is the audit's cost
// per decision.
func BenchmarkAuditedDecision(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    func(b *testing.B) *fixture
	}{
		{"none", func(b *testing.B) *fixture { return newFixture(b, nil) }},
		{"memory", func(b *testing.B) *fixture {
			return newAuditFixture(b, auditOptions{log: audit.NewMemoryLog()}).fixture
		}},
		{"sqlite", func(b *testing.B) *fixture { return newAuditFixture(b, auditOptions{}).fixture }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := bc.f(b)
			b.ReportAllocs()
			for b.Loop() {
				conv, pause := f.pause(travellerKey)
				req := httptest.NewRequest("POST", decisionsPath(conv, pause), strings.NewReader(allowBook))
				req.Header.Set("Authorization", "Bearer "+approverKey)
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("decision: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
