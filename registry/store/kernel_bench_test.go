package store

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkKernelFlow measures the kernel-state writes of the bus path, one
// op per reply: two threads begin (random UUID v4 ids), a watcher is
// registered and, a batch later, raised; the writer commits every ten
// replies, as xmlpipe bench --bus finds it doing. It reports the process's
// CPU time and the WAL frames written per reply. Its random keys dirty a
// page of each key index per row, so WAL writes and checkpoints are most of
// its cost.
func BenchmarkKernelFlow(b *testing.B) {
	s, _ := openTest(b, Options{})
	ctx := context.Background()
	f := kernelFixture{at: newFakeClock().Now()}
	var raise []WatcherRow
	cpu0, frames0 := cpuTime(), s.Stats().WALFrames
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for range 2 {
			if err := s.CreateThread(f.thread(uuid.NewString(), "bus", "greeter")); err != nil {
				b.Fatal(err)
			}
		}
		w := f.watcher(uuid.NewString(), uuid.NewString(), false)
		if err := s.PutWatcher(w); err != nil {
			b.Fatal(err)
		}
		w.Raised = true
		raise = append(raise, w)
		if i++; i%10 == 0 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			for _, w := range raise {
				if err := s.PutWatcher(w); err != nil {
					b.Fatal(err)
				}
			}
			raise = raise[:0]
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/reply")
	b.ReportMetric(float64(s.Stats().WALFrames-frames0)/float64(b.N), "frames/reply")
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
