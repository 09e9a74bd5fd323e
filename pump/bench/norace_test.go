//go:build !race

package bench

// raceEnabled reports a test binary built with the race detector.
const raceEnabled = false
