//go:build race

package server_test

// raceDetector is true when the tests run with the race detector, which
// slows the pure-Go SQLite driver down about sevenfold.
const raceDetector = true
