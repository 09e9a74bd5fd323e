package wasm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCall measures one call: through a pooled reactor instance, echo
// is the host's per-call overhead (swap stdin, call handle, copy stdout) and
// calc adds the guest's own encoding/xml work; a command module instantiates
// per call; with a directory mounted, ops opens and reads a file in /data
// per call (the host filesystem's cost). It reports the median too.
func BenchmarkCall(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("inside"), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		guest string
		kind  Kind
		sb    Sandbox
		in    string
	}{
		{"", "echo", Reactor, Sandbox{}, "<Calc><A>2</A><B>40</B><Op>add</Op></Calc>"},
		{"", "calc", Reactor, Sandbox{}, "<Calc><A>2</A><B>40</B><Op>add</Op></Calc>"},
		{"", "calc", Command, Sandbox{}, "<Calc><A>2</A><B>40</B><Op>add</Op></Calc>"},
		{"-dir", "echo", Reactor, Sandbox{Dir: dir}, "<Calc><A>2</A><B>40</B><Op>add</Op></Calc>"},
		{"-dir-read", "ops", Reactor, Sandbox{Dir: dir}, "<Ops><Do>read</Do><Path>/data/hello.txt</Path></Ops>"},
		{"-dir", "calc", Command, Sandbox{Dir: dir}, "<Calc><A>2</A><B>40</B><Op>add</Op></Calc>"},
	} {
		b.Run(tc.guest+"-"+string(tc.kind)+tc.name, func(b *testing.B) {
			m := compileGuest(b, tc.guest, tc.kind, tc.sb)
			in := []byte(tc.in)
			ctx := context.Background()
			if _, err := m.Call(ctx, in); err != nil { // warm the pool
				b.Fatal(err)
			}
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := m.Call(ctx, in); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(t0))
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "median-µs")
		})
	}
}

// rssKB reads the process's resident set size from /proc (Linux).
func rssKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// TestCallsDoNotGrowRSS runs 10,000 calls and checks that the resident set
// after them is within a bound of the one after the first 1,000 (warm-up:
// pool filled, guest heap grown).
func TestCallsDoNotGrowRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	m := compileGuest(t, "calc", Reactor, Sandbox{Instances: 2})
	ctx := context.Background()
	in := []byte("<Calc><A>2</A><B>40</B><Op>add</Op></Calc>")
	call := func(n int) {
		for range n {
			out, err := m.Call(ctx, in)
			if err != nil || string(out) != "<CalcResult><Value>42</Value></CalcResult>" {
				t.Fatalf("%s, %v", out, err)
			}
		}
	}
	heap := func() uint64 {
		debug.FreeOSMemory() // a GC, and the freed pages back to the OS
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc >> 10
	}
	call(1000)
	h0 := heap()
	before := rssKB(t)
	call(9000)
	h1 := heap()
	after := rssKB(t)
	t.Logf("RSS after 1,000 calls %d kB, after 10,000 %d kB (Go heap %d kB, %d kB)", before, after, h0, h1)
	if raceEnabled {
		// The race detector's own memory grows with every call: only the
		// Go heap tells a leak here.
		if h1 > h0+8*1024 {
			t.Fatalf("Go heap grew by %d kB over 9,000 calls", h1-h0)
		}
		return
	}
	if after <= before+16*1024 {
		return
	}
	// Other tests of the package run meanwhile and move the resident set:
	// a leak grows again over the next 9,000 calls, noise does not.
	call(9000)
	h2 := heap()
	again := rssKB(t)
	t.Logf("RSS after 19,000 calls %d kB (Go heap %d kB)", again, h2)
	if again > after+8*1024 {
		t.Fatalf("RSS grew by %d kB over 9,000 calls, then by %d kB over 9,000 more", after-before, again-after)
	}
}
