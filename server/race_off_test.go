//go:build !race

package server_test

// raceDetector is true when the tests run with the race detector.
const raceDetector = false
