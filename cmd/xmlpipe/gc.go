package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultGCPercent is the collector target the binary runs with unless GOGC
// is set. The pump's live heap is small (a few MB) while it allocates a few KB
// per envelope, so at Go's default of 100 it collects dozens of times a second
// and spends ~8 % of its CPU marking; at 400 the heap may grow to five times
// the live data and collection drops to ~2 %.
const defaultGCPercent = 400

// defaultMemoryFloor bounds what GOGC=400 may buy with memory: unless GOGC or
// GOMEMLIMIT is set, the binary runs with a soft memory limit (Go memory:
// heap, stacks and runtime metadata, not C allocations or the binary's text)
// of max(defaultMemoryFloor, liveHeapFactor × the live heap), updated after
// every collection. Five times the live heap of an organism with tens of
// thousands of live conversations (20–30 MB: threads, watchers, connections)
// is 100–150 MB of mostly garbage; under the floor the collector runs a
// little more often instead. The limit rises with the live heap, so a large
// organism's heap may always grow to about three times its live data and is
// never collected near-continuously, as it would be under a fixed limit it
// outgrows.
const defaultMemoryFloor = 96 << 20

// liveHeapFactor is how many times the live heap the soft limit allows at
// least (see defaultMemoryFloor).
const liveHeapFactor = 3

// liveHeapMetric is the runtime metric of the heap marked live by the last
// collection.
const liveHeapMetric = "/gc/heap/live:bytes"

func init() {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if !gogc {
		debug.SetGCPercent(defaultGCPercent)
	}
	if !gogc && !limit {
		debug.SetMemoryLimit(defaultMemoryFloor)
		followLiveHeap(defaultMemoryFloor)
	}
}

// followLiveHeap sets the soft memory limit to max(floor, liveHeapFactor ×
// the live heap) after every collection, for the life of the process.
func followLiveHeap(floor int64) {
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	var arm func()
	arm = func() {
		// A cleanup runs once its object is found unreachable, i.e. after
		// the next collection; each run re-arms with a new object. 32 bytes
		// keep the object out of the tiny allocator, whose blocks are freed
		// together and may never be.
		runtime.AddCleanup(new([32]byte), func(struct{}) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				live := int64(sample[0].Value.Uint64())
				debug.SetMemoryLimit(max(floor, liveHeapFactor*live))
			}
			arm()
		}, struct{}{})
	}
	arm()
}
