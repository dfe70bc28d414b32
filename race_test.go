//go:build race

package toolgate

// RaceDetector reports whether the tests run with the race detector, which
// changes what escapes to the heap: allocation counts are not pinned then.
const RaceDetector = true
