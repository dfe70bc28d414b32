package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/audit/sqlite"
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

// BenchmarkAppendTx appends two records per call inside one open
// transaction of a shared Log, as the writes of a group commit do, and
// commits once at the end: the CPU of an append without its fsync. With
// ReportsUndone the Log reads the head of its chain once for the
// transaction; without, once per call.
func BenchmarkAppendTx(b *testing.B) {
	for _, reports := range []bool{false, true} {
		b.Run(map[bool]string{false: "readsHead", true: "reportsUndone"}[reports], func(b *testing.B) {
			ctx := b.Context()
			db, inTx := sharedDB(b, filepath.Join(b.TempDir(), "shared.db"), "_txlock=immediate&_pragma=journal_mode(WAL)")
			l, err := sqlite.NewSharedWith(ctx, db, inTx, db, &sqlite.SharedOptions{ReportsUndone: reports})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			err = inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				for b.Loop() {
					if err := l.AppendTx(ctx, tx, sample(1), sample(2)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
