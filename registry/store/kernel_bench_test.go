package store

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkKernelFlow measures the kernel-state writes of the bus path, one
// op per reply: two threads begin, a watcher is registered and, a batch
// later, raised; the writer commits every ten replies, as xmlpipe bench
// --bus finds it doing. It reports the process's CPU time and the WAL
// frames written per reply. With random ids (UUID v4, as thread ids a
// client chooses) each row dirties a page of its key index, so WAL writes
// and checkpoints are most of the cost; with ids in creation order (the
// organism's own thread ids and watcher ids) the rows of a batch share the
// index's last page.
func BenchmarkKernelFlow(b *testing.B) {
	b.Run("ids=random", func(b *testing.B) { benchKernelFlow(b, uuid.NewString) })
	b.Run("ids=ordered", func(b *testing.B) {
		benchKernelFlow(b, func() string { return uuid.Must(uuid.NewV7()).String() })
	})
}

// benchKernelFlow is BenchmarkKernelFlow with ids from newID.
func benchKernelFlow(b *testing.B, newID func() string) {
	s, _ := openTest(b, Options{})
	ctx := context.Background()
	f := kernelFixture{at: newFakeClock().Now()}
	var raise []WatcherRow
	cpu0, frames0 := cpuTime(), s.Stats().WALFrames
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for range 2 {
			if err := s.CreateThread(f.thread(newID(), "bus", "greeter")); err != nil {
				b.Fatal(err)
			}
		}
		w := f.watcher(newID(), newID(), false)
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
