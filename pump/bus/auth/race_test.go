//go:build race

package auth

// raceEnabled reports a test binary built with the race detector, whose
// shadow memory roughly doubles the resident size of memory Go code
// touches.
const raceEnabled = true
