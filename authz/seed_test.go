package authz_test

import (
	"flag"
	"testing"
)

// seedFlag overrides the seed of the randomized tests of this package:
//
//	go test -run TestName ./authz -args -seed=12345
var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (0: each test's own; the seed used is logged)")

// testSeed returns the seed a randomized test uses: -seed when given,
// otherwise def. It logs it, so that a failing run can be repeated.
func testSeed(t *testing.T, def uint64) uint64 {
	t.Helper()
	seed := def
	if *seedFlag != 0 {
		seed = *seedFlag
	}
	t.Logf("seed %d (-seed=%d repeats this run)", seed, seed)
	return seed
}
