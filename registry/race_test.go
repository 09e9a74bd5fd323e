//go:build race

package registry

// raceEnabled reports a test binary built with the race detector, whose
// instrumentation changes what escapes to the heap: allocation counts
// mean nothing there.
const raceEnabled = true
