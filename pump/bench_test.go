package pump_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// BenchmarkTwoHop drives b.N conversations through shouter → sink (two
// envelopes each, both through the full chain), injected from as many
// goroutines as GOMAXPROCS. Profile it with
// `go test -run '^$' -bench TwoHop -cpuprofile cpu.out ./pump/`.
func BenchmarkTwoHop(b *testing.B) { twoHop(b, false) }

// BenchmarkTwoHopProfile is BenchmarkTwoHop with every conversation under a
// security profile that reaches both listeners: the cost of profiles on
// the hot path (a thread lookup per external message, a set check per
// routing).
func BenchmarkTwoHopProfile(b *testing.B) { twoHop(b, true) }

// BenchmarkTwoHopStorage is BenchmarkTwoHop with a healthy Storage set, as
// the organism sets its store: the cost of asking it (an atomic load) for
// every external message.
func BenchmarkTwoHopStorage(b *testing.B) { twoHop(b, false, &fakeStorage{}) }

// twoHop runs BenchmarkTwoHop, under a profile when profiled, with the
// storage st when set.
func twoHop(b *testing.B, profiled bool, st ...pump.Storage) {
	var wg sync.WaitGroup
	shout := listenerOf(b, "shouter", hello.Shout)
	sink := listenerOf(b, "sink", func(_ context.Context, _ *hello.ShoutedResponse, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		wg.Done()
		return nil, nil
	})
	shout.Workers, sink.Workers = 8, 8
	opts := pump.Options{Organism: "bench", MaxInFlight: 2048, Logger: slog.New(slog.DiscardHandler)}
	if len(st) > 0 {
		opts.Storage = st[0]
	}
	p, err := pump.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range []pump.Listener{shout, sink} {
		if err := p.Register(l); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	if profiled {
		if err := p.SetProfiles([]pump.ProfileDef{{Name: "bench", Listeners: []string{"shouter", "sink"}}}); err != nil {
			b.Fatal(err)
		}
		ctx = pump.WithProfile(ctx, "bench")
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	const text = "Hello Dan, what a pleasure to greet you on this fine day! Hello Dan, what a pleasure to greet you!"
	wg.Add(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			n++
			seq := n
			mu.Unlock()
			payload := `<GreetingResponse xmlns=""><Message>` + strconv.FormatInt(seq, 10) + " " + text +
				`</Message><OriginalSender>sink</OriginalSender></GreetingResponse>`
			raw := stage.AppendEnvelope(nil, client, "shouter", stage.NewThreadID(), []byte(payload))
			if err := p.Inject(ctx, raw, nil); err != nil {
				b.Error(err)
				wg.Done()
			}
		}
	})
	wg.Wait()
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "envelopes/s")
}
