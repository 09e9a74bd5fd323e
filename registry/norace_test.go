//go:build !race

package registry

// raceEnabled reports a test binary built with the race detector.
const raceEnabled = false
