package federation

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// linkedPair is organism A calling B's echo through one link (in memory
// state, real TLS on loopback). The import is registered from echo's own
// schema, as meta introspection would deliver it.
func linkedPair(b *testing.B) (a *pump.Pump, local *pump.Pump) {
	b.Helper()
	aKey := newKey(b)
	c := newCallee(b, aKey)
	log := slog.New(slog.DiscardHandler)
	pa, err := pump.New(pump.Options{Organism: "a", Logger: log, MaxConcurrentPipelines: 8})
	if err != nil {
		b.Fatal(err)
	}
	if err := pa.Start(); err != nil {
		b.Fatal(err)
	}
	m, err := New(Options{Organism: "a", Key: aKey, Pump: pa, Logger: log,
		Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(b, c.key),
			Import: []string{"Echo"}}}})
	if err != nil {
		b.Fatal(err)
	}
	pt, _ := xmlpipe.PayloadTypeOf[Echo]()
	if err := m.gateways[0].register([]imported{{Tag: "Echo", Name: "echo", Description: "echo", XSD: pt.XSD()}}); err != nil {
		b.Fatal(err)
	}
	m.Start()
	b.Cleanup(func() {
		_ = m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = pa.Shutdown(ctx)
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if m.Status()[0].Connected {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no link")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return pa, c.pump
}

// callEcho sends one Echo on p and waits for its reply.
func callEcho(b *testing.B, p *pump.Pump, payload any) {
	done := make(chan struct{}, 1)
	var replied atomic.Bool
	_, err := p.Send(context.Background(), "console", "echo", payload, pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventReply && replied.CompareAndSwap(false, true) {
			done <- struct{}{}
		}
		if e.Kind == pump.EventHuh {
			b.Errorf("huh: %s", e.Error)
			done <- struct{}{}
		}
	}))
	if err != nil {
		b.Fatal(err)
	}
	<-done
}

// BenchmarkCallAcrossLink is one call at a time A → link → B → link → A
// (ns/op is the round trip); BenchmarkCallLocal the same call on B's own
// pump: the difference is what the link adds (two hops).
func BenchmarkCallAcrossLink(b *testing.B) {
	a, _ := linkedPair(b)
	p := &Echo{Text: "hello"}
	b.ResetTimer()
	for range b.N {
		callEcho(b, a, p)
	}
}

// BenchmarkCallLocal is the baseline of BenchmarkCallAcrossLink.
func BenchmarkCallLocal(b *testing.B) {
	_, local := linkedPair(b)
	p := &Echo{Text: "hello"}
	b.ResetTimer()
	for range b.N {
		callEcho(b, local, p)
	}
}

// BenchmarkLinkThroughput runs many calls at once through one link;
// calls/s is the link's message rate (each call is two signed envelopes).
func BenchmarkLinkThroughput(b *testing.B) {
	a, _ := linkedPair(b)
	b.SetParallelism(32)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		p := &Echo{Text: "hello"}
		for pb.Next() {
			callEcho(b, a, p)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
