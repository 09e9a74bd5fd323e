package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestMemoryLimitFollowsLiveHeap: without GOGC and GOMEMLIMIT the binary
// runs with a soft memory limit of defaultMemoryFloor that rises to
// liveHeapFactor × the live heap when that is larger, and falls back when
// the live heap shrinks.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, set := os.LookupEnv(env); set {
			t.Skipf("%s is set: the binary leaves the collector alone", env)
		}
	}
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	if got := debug.SetGCPercent(defaultGCPercent); got != defaultGCPercent {
		t.Errorf("GOGC = %d, want %d", got, defaultGCPercent)
	}
	if got := limit(); got < defaultMemoryFloor {
		t.Fatalf("memory limit %d, want at least the floor %d", got, defaultMemoryFloor)
	}
	waitLimit := func(what string, ok func(int64) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok(limit()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: memory limit still %d MB", what, limit()>>20)
			}
			runtime.GC() // the limit follows after each collection
			time.Sleep(10 * time.Millisecond)
		}
	}

	const big = 64 << 20 // live: liveHeapFactor × big is above the floor
	func() {
		live := make([]byte, big)
		for i := range live {
			live[i] = byte(i)
		}
		waitLimit("with 64 MB live", func(l int64) bool { return l >= liveHeapFactor*big })
		runtime.KeepAlive(live)
	}()
	waitLimit("after the 64 MB died", func(l int64) bool { return l == defaultMemoryFloor })
}
