package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// busFlowAllocsMax is the most heap allocations one `@greeter Dan`
// conversation of the hello-world organism may make in memory, the bus's
// pump work included (BenchmarkBusFlow's "memory" mode, one conversation
// at a time): 87 measured after issue 35's cuts, which took
// BenchmarkBusFlow from 137 to 87. Raise it only for a reason.
const busFlowAllocsMax = 89

// TestBusFlowAllocations runs conversations of the bus's greeter flow one
// after the other through the in-memory hello-world organism and checks
// the allocations per conversation, counted over the whole process (the
// pump's workers are other goroutines), stay within busFlowAllocsMax.
func TestBusFlowAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's runtime allocates on its own")
	}
	local, err := organism.Assemble(organism.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		func(o organism.Options) (*organism.Organism, error) { return organism.Load("../../organism.yaml", o) })
	if err != nil {
		t.Fatal(err)
	}
	o := local.Organism()
	if err := o.Start(); err != nil {
		t.Fatal(errors.Join(err, o.Shutdown(context.Background())))
	}
	defer o.Shutdown(context.Background())
	p := o.Pump
	printed := make(chan struct{}, 1)
	defer local.Subscribe(func(out organism.Output) {
		if out.Kind == organism.OutputPrint && out.From == "shouter" {
			printed <- struct{}{}
		}
	})()
	defer p.Subscribe(pump.OutletFunc(func(pump.Event) {}))()
	greeter, ok := p.Lookup("greeter")
	if !ok {
		t.Fatal("no greeter")
	}
	v, err := organism.NewPayload(greeter.Payload.GoType(), "Dan")
	if err != nil {
		t.Fatal(err)
	}
	body, err := greeter.Payload.AppendPayload(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	converse := func() {
		who := pump.Principal{From: "console:bench", User: "bench", FreshThread: true}
		if _, err := p.SendEnvelope(ctx, pump.Envelope{From: who.From, To: greeter.Name, Thread: stage.NewThreadID(),
			Payload: body, As: &who}, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-printed:
		case <-time.After(time.Minute):
			t.Fatal("no answer within a minute")
		}
		for deadline := time.Now().Add(time.Minute); p.InFlight() > 0; time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatal("still in flight after a minute")
			}
		}
	}
	for range 200 { // warm up: pools, maps, the scheduler's structures
		converse()
	}
	// The least of a few rounds: a GC or a timer may allocate in one.
	const rounds, n = 3, 200
	best := -1.0
	for range rounds {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		for range n {
			converse()
		}
		runtime.ReadMemStats(&ms1)
		per := float64(ms1.Mallocs-ms0.Mallocs) / n
		if best < 0 || per < best {
			best = per
		}
	}
	t.Logf("%.1f allocations per conversation", best)
	if best > busFlowAllocsMax {
		t.Errorf("%.1f allocations per conversation, want at most %d", best, busFlowAllocsMax)
	}
}
