//go:build race

package wasm

// raceEnabled: the race detector keeps memory of its own that grows with
// every goroutine and lock, so the resident set says nothing of leaks.
const raceEnabled = true
