package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// BenchmarkBusFlow runs b.N conversations of the main bus's `@greeter Dan`
// flow (greeter → shouter → response-handler, three envelopes) through the
// repository's hello-world organism, with the pump work a bus "send" does
// around each one (the payload built from the text, the thread checked,
// the conversation looked up, the envelope sent as the console user) and
// the bus's subscribers (every pump event, every console output) — but no
// sockets: the pump's own cost of a bus reply, in allocations and ns per
// conversation. "memory" is the organism without a data directory (as
// `xmlpipe bench --bus --in-memory`), "durable" with one: its journal and
// the persisted kernel registries (thread registry, context buffer, todo
// registry). It reports the process's CPU time per conversation; the
// durable organism's store is flushed before the clock stops.
func BenchmarkBusFlow(b *testing.B) {
	for _, mode := range []string{"memory", "durable"} {
		b.Run("mode="+mode, func(b *testing.B) { benchBusFlow(b, mode == "durable") })
	}
}

// benchBusFlow is BenchmarkBusFlow with or without a data directory.
func benchBusFlow(b *testing.B, durable bool) {
	opts := organism.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if durable {
		opts.DataDir = b.TempDir()
	}
	local, err := organism.Assemble(opts, func(o organism.Options) (*organism.Organism, error) {
		return organism.Load("../../organism.yaml", o)
	})
	if err != nil {
		b.Fatal(err)
	}
	o := local.Organism()
	if err := o.Start(); err != nil {
		b.Fatal(errors.Join(err, o.Shutdown(context.Background())))
	}
	defer o.Shutdown(context.Background())
	p := o.Pump
	var printed atomic.Int64
	defer local.Subscribe(func(out organism.Output) {
		if out.Kind == organism.OutputPrint && out.From == "shouter" {
			printed.Add(1)
		}
	})()
	defer p.Subscribe(pump.OutletFunc(func(pump.Event) {}))() // the bus's router hears every event
	greeter, ok := p.Lookup("greeter")
	if !ok {
		b.Fatal("no greeter")
	}
	ctx := context.Background()
	// send is the pump's part of a bus "send" of "@greeter Dan" on a new
	// conversation (pump/bus ws.go's send).
	send := func() error {
		v, err := organism.NewPayload(greeter.Payload.GoType(), "Dan")
		if err != nil {
			return err
		}
		body, err := greeter.Payload.AppendPayload(nil, v)
		if err != nil {
			return err
		}
		who := pump.Principal{From: "console:bench", User: "bench", FreshThread: true}
		thread := stage.NewThreadID()
		if err := p.CheckThread(who, thread); err != nil {
			return err
		}
		if root := p.Threads().Root(thread); root != "" {
			thread = root
		}
		for {
			_, err := p.SendEnvelope(ctx, pump.Envelope{From: who.From, To: greeter.Name, Thread: thread, Payload: body, As: &who}, nil)
			if !errors.Is(err, pump.ErrBusy) {
				return err
			}
		}
	}
	// sendN sends n conversations from 4 goroutines and waits until each
	// was printed and the store committed what they wrote.
	sendN := func(n int64) {
		var (
			wg   sync.WaitGroup
			next = make(chan struct{}, 1024)
		)
		printed0 := printed.Load()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range next {
					if err := send(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		for range n {
			next <- struct{}{}
		}
		close(next)
		wg.Wait()
		deadline := time.Now().Add(2 * time.Minute)
		for printed.Load()-printed0 < n || p.InFlight() > 0 {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d conversations printed, %d in flight", printed.Load()-printed0, n, p.InFlight())
			}
			time.Sleep(100 * time.Microsecond)
		}
		if st := o.Store(); st != nil {
			if err := st.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	sendN(1000) // warm up: the store's tables and caches, the pump's pools
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	sendN(int64(b.N))
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/conversation")
}
