package pump_test

import (
	"context"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestShutdownExpiredContextIdle: a Shutdown given a context that has
// already ended, on a pump with nothing in flight, has nothing left to
// wait for and succeeds — it used to report "0 messages still in flight:
// context deadline exceeded" about half the time (the select's pick).
func TestShutdownExpiredContextIdle(t *testing.T) {
	for i := range 50 {
		p := newPump(t, pump.Options{}, listenerOf(t, "pinger", func(context.Context, *Ping, xmlpipe.Metadata) (xmlpipe.Response, error) {
			return nil, nil
		}))
		if err := p.Start(); err != nil {
			t.Fatalf("Start: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("run %d: Shutdown of an idle pump with an ended context: %v, want nil", i, err)
		}
	}
}
