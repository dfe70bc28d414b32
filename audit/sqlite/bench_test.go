package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// BenchmarkAppend appends one record per call: one synchronous SQLite
// commit each.
func BenchmarkAppend(b *testing.B) {
	b.ReportAllocs()
	l := openAt(b, filepath.Join(b.TempDir(), "audit.db"), nil)
	r := sample(1)
	for b.Loop() {
		rec := *r
		if err := l.Append(b.Context(), &rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendBatch100 appends 100 records per call, in one commit; the
// figures are per call.
func BenchmarkAppendBatch100(b *testing.B) {
	b.ReportAllocs()
	l := openAt(b, filepath.Join(b.TempDir(), "audit.db"), nil)
	batch := make([]*audit.Record, 100)
	for b.Loop() {
		for i := range batch {
			batch[i] = sample(i)
		}
		if err := l.Append(b.Context(), batch...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify10000 reads and verifies a log of 10,000 records from its
// file.
func BenchmarkVerify10000(b *testing.B) {
	b.ReportAllocs()
	path := filepath.Join(b.TempDir(), "audit.db")
	l := openAt(b, path, nil)
	for range 10 {
		batch := make([]*audit.Record, 1000)
		for i := range batch {
			batch[i] = sample(i)
		}
		if err := l.Append(b.Context(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		rep, err := audit.Verify(b.Context(), l, nil)
		if err != nil || rep.Records != 10000 {
			b.Fatal(rep, err)
		}
	}
}
