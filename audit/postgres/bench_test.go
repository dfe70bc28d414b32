package postgres_test

import (
	"testing"

	"github.com/toolgate/toolgate/audit/audittest"
)

// BenchmarkAppend appends one record per call: one transaction of two
// round trips, holding the chain's lock.
func BenchmarkAppend(b *testing.B) {
	b.ReportAllocs()
	l := openIn(b, newSchema(b), nil)
	r := audittest.Sample(1)
	for b.Loop() {
		rec := *r
		if err := l.Append(b.Context(), &rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel appends from many goroutines at once: the
// chain's lock serializes them.
func BenchmarkAppendParallel(b *testing.B) {
	b.ReportAllocs()
	l := openIn(b, newSchema(b), nil)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Append(b.Context(), audittest.Sample(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
