//go:build !race

package harness

// RaceDetector reports whether this build has the race detector (go test -race).
const RaceDetector = false
