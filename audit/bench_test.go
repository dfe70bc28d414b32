package audit_test

import (
	"testing"

	"github.com/toolgate/toolgate/audit"
)

func BenchmarkMemoryAppend(b *testing.B) {
	b.ReportAllocs()
	l := audit.NewMemoryLog()
	r := sample(1)
	for b.Loop() {
		rec := *r
		if err := l.Append(b.Context(), &rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify10000 verifies a log of 10,000 records kept in memory:
// the cost of hashing and checking, without storage.
func BenchmarkVerify10000(b *testing.B) {
	b.ReportAllocs()
	l := audit.NewMemoryLog()
	appendSamples(b, l, 10000)
	for b.Loop() {
		rep, err := audit.Verify(b.Context(), l, nil)
		if err != nil || rep.Records != 10000 {
			b.Fatal(rep, err)
		}
	}
}

func BenchmarkDigest(b *testing.B) {
	b.ReportAllocs()
	args := []byte(`{"flight":"VX205","passenger":{"name":"Ada Lovelace","email":"ada@example.com"},"seats":2}`)
	for b.Loop() {
		audit.Digest(args)
	}
}
