//go:build race

package bench

// raceEnabled reports a test binary built with the race detector, whose
// runtime allocates on its own: allocation counts mean nothing there.
const raceEnabled = true
