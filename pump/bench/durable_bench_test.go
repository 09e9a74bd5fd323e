package bench

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// BenchmarkFlow runs b.N conversations (two envelopes each) of the bench's
// two-hop flow, a fixed amount of work where `xmlpipe bench` runs for a
// fixed time: the repeatable counterpart for CPU profiles. "memory" is the
// in-memory pump, "journal" adds a store journal, "durable" also persists
// the kernel registries as a durable organism does (restored,
// organism.DurableRegistries), "durable-unrestored" with the sinks of
// organism.StateSinks, which write more. It reports the process's CPU time
// (user + system), the store's statements and commits per envelope; the
// store is flushed before the clock stops, so the writer's backlog is
// counted. With -v it logs the rows each kind of statement wrote per
// envelope.
func BenchmarkFlow(b *testing.B) {
	for _, mode := range []string{"memory", "journal", "durable", "durable-unrestored"} {
		b.Run("mode="+mode, func(b *testing.B) { benchFlow(b, mode) })
	}
}

// benchFlow is BenchmarkFlow in one mode.
func benchFlow(b *testing.B, mode string) {
	var (
		cfg Config
		st  *store.Store
		err error
	)
	if mode != "memory" {
		dir := b.TempDir()
		if err := os.Chmod(dir, 0o700); err != nil { // as a data directory is
			b.Fatal(err)
		}
		if st, err = store.Open(dir, store.Options{}); err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		cfg.Journal = organism.StoreJournal(st, nil)
	}
	switch mode {
	case "durable":
		cfg.Threads, cfg.Todos, cfg.Context, err = organism.DurableRegistries(st, nil,
			registry.ThreadsConfig{Organism: "bench"}, registry.ContextConfig{})
		if err != nil {
			b.Fatal(err)
		}
	case "durable-unrestored":
		threadSink, todoSink, slotSink := organism.StateSinks(st, nil)
		cfg.Threads = registry.NewThreads(registry.ThreadsConfig{Organism: "bench", Sink: threadSink})
		cfg.Todos = registry.NewTodoRegistry(registry.TodoConfig{Lineage: cfg.Threads, Sink: todoSink})
		if cfg.Context, err = registry.NewContextBuffer(registry.ContextConfig{Sink: slotSink}); err != nil {
			b.Fatal(err)
		}
	}
	f, err := newFlow(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer f.p.Shutdown(context.Background())
	ctx := context.Background()
	// injectN injects n conversations from 4 goroutines and waits until
	// the sink counted them and the store committed what they wrote.
	injectN := func(n int64) {
		var (
			wg   sync.WaitGroup
			next = make(chan int64, 1024)
		)
		sunk0 := f.sunk.Load()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := range next {
					for {
						err := f.p.Inject(ctx, envelope(seq, greeting), nil)
						if err == nil {
							break
						}
						if !errors.Is(err, pump.ErrBusy) {
							b.Error(err)
							return
						}
					}
				}
			}()
		}
		for i := range n {
			next <- i + 1
		}
		close(next)
		wg.Wait()
		for f.sunk.Load()-sunk0 < n || f.p.InFlight() > 0 {
			time.Sleep(100 * time.Microsecond)
		}
		if st != nil {
			if err := st.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	injectN(2000) // warm up: the store's tables and caches, the pump's pools
	var stmts0, commits0 int64
	if st != nil {
		stmts0, commits0 = st.Statements(), st.Stats().Commits
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	injectN(int64(b.N))
	cpu := cpuTime() - cpu0
	b.StopTimer()
	envelopes := float64(2 * b.N)
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/envelopes, "cpu-µs/envelope")
	if st != nil {
		b.ReportMetric(float64(st.Statements()-stmts0)/envelopes, "statements/envelope")
		b.ReportMetric(float64(st.Stats().Commits-commits0)*1000/envelopes, "commits/1k-envelopes")
		if testing.Verbose() {
			type sum struct{ runs, rows int64 }
			by := map[string]*sum{}
			var keys []string
			for _, c := range st.StatementCounts() {
				q := c.Query
				if len(q) > 40 {
					q = q[:40]
				}
				if by[q] == nil {
					by[q] = &sum{}
					keys = append(keys, q)
				}
				by[q].runs += c.Runs
				by[q].rows += c.Rows
			}
			for _, q := range keys {
				b.Logf("%8.3f runs %8.3f rows /envelope  %s", float64(by[q].runs)/envelopes, float64(by[q].rows)/envelopes, q)
			}
		}
	}
}
