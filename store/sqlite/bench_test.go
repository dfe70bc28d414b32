package sqlite_test

import (
	"testing"

	"github.com/toolgate/toolgate/toolgatetest"
)

func BenchmarkStore(b *testing.B) {
	s, _ := open(b)
	toolgatetest.BenchmarkStore(b, s)
}
