package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the collector target the binary runs with unless GOGC
// is set. The pump's live heap is small (a few MB) while it allocates a few KB
// per envelope, so at Go's default of 100 it collects dozens of times a second
// and spends ~8 % of its CPU marking; at 400 the heap may grow to five times
// the live data (tens of MB) and collection drops to ~2 %. GOGC and
// GOMEMLIMIT in the environment still win.
const defaultGCPercent = 400

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}
