//go:build !race

package auth

// raceEnabled reports a test binary built with the race detector.
const raceEnabled = false
