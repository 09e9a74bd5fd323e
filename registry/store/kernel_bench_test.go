package store

import (
	"context"
	"strings"
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
	b.Run("flow=bus", func(b *testing.B) { benchKernelBus(b, 0) })
	// An agent's slots hold larger messages than the greeter's (an LLM's
	// answer): the shouter's slot carries 4 KiB more.
	b.Run("flow=bus-4KiB", func(b *testing.B) { benchKernelBus(b, 4096) })
}

// benchKernelBus replays the kernel writes of one @greeter reply on the
// bus, as a trace of xmlpipe bench --bus shows them: the conversation's
// thread begins with its first slot and a todo watcher, the shouter's and
// the response handler's threads begin under it with a slot each, the
// watcher is raised, and the response handler's thread ends (thread row
// and slots deleted) a batch later; the conversation's and the shouter's
// threads, their slots and the watcher stay. The writer commits every four
// replies, as the bus's 200 clients find it doing. Ids are in creation
// order, as the organism mints them. pad bytes of text are added to the
// shouter's slot.
func benchKernelBus(b *testing.B, pad int) {
	s, _ := openTest(b, Options{})
	ctx := context.Background()
	f := kernelFixture{at: newFakeClock().Now()}
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	slot := func(thread, payloadType, raw string) SlotRow {
		return SlotRow{Thread: thread, From: "greeter", To: "shouter", PayloadType: payloadType, Raw: []byte(raw),
			Time: f.at, OwnName: "shouter"}
	}
	var ended []string
	padding := strings.Repeat("x", pad)
	cpu0, frames0 := cpuTime(), s.Stats().WALFrames
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		conv, shout, handler := newID(), newID(), newID()
		w := f.watcher(newID(), conv, false)
		for _, put := range []func() error{
			func() error { return s.CreateThread(f.thread(conv, "hello-world", "console:bench", "greeter")) },
			func() error {
				return s.AppendSharedSlot(slot(conv, "Greeting", "<Greeting><Name>Dan</Name></Greeting>"))
			},
			func() error { return s.PutWatcher(w) },
			func() error {
				return s.CreateThread(f.thread(shout, "hello-world", "console:bench", "greeter", "shouter"))
			},
			func() error {
				return s.AppendSharedSlot(slot(shout, "GreetingResponse",
					"<GreetingResponse><Message>Hello, Dan!"+padding+"</Message><OriginalSender>response-handler</OriginalSender></GreetingResponse>"))
			},
			func() error {
				return s.CreateThread(f.thread(handler, "hello-world", "console:bench", "greeter", "shouter", "response-handler"))
			},
			func() error { w.Raised = true; return s.PutWatcher(w) },
			func() error {
				return s.AppendSharedSlot(slot(handler, "ShoutedResponse",
					"<ShoutedResponse><Message>HELLO, DAN!</Message></ShoutedResponse>"))
			},
		} {
			if err := put(); err != nil {
				b.Fatal(err)
			}
		}
		ended = append(ended, handler)
		if i++; i%4 == 0 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			for _, id := range ended {
				if err := s.DeleteThreads([]string{id}); err != nil {
					b.Fatal(err)
				}
				if err := s.DeleteSlots(id); err != nil {
					b.Fatal(err)
				}
			}
			ended = ended[:0]
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/reply")
	b.ReportMetric(float64(s.Stats().WALFrames-frames0)/float64(b.N), "frames/reply")
	b.ReportMetric(float64(s.Statements())/float64(b.N), "stmts/reply")
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
