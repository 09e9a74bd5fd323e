package main

import (
	"os"
	"runtime/debug"
	"sync"
)

// startupGCPercent is the garbage collector's target (GOGC) while `xmlpipe
// run` starts: reading the live threads, watchers and context slots back
// makes several times the restored state in short-lived garbage, and at
// the default of 100 two or three collections ran during the restore,
// each taking a quarter of the CPU on a 2-core machine while a restart
// after a crash waits for /health. At 400 a restart of the crash soak's
// data directory (16k live threads) runs without them; the heap may reach
// five times the restored state instead of twice, until the bus serves
// and the target goes back.
const startupGCPercent = 400

// startupGC raises the collector's target for the start of the organism
// and returns the function that puts the previous one back (idempotent).
// A GOGC set in the environment is the operator's choice and is left as
// it is.
func startupGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(startupGCPercent)
	var once sync.Once
	return func() { once.Do(func() { debug.SetGCPercent(prev) }) }
}
