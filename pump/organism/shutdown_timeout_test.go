package organism_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// StuckJob is held by its handler until its context ends.
type StuckJob struct{ Text string }

// TestShutdownTimeoutOption: an embedder bounds Shutdown's drain with
// Options.ShutdownTimeout instead of the default 10 s: a handler that
// runs until cancelled is cancelled once the bound passes, and Shutdown
// says the drain timed out.
func TestShutdownTimeoutOption(t *testing.T) {
	running := make(chan struct{}, 1)
	stuck := organism.Func("stuck", "Runs until cancelled", func(ctx context.Context, _ *StuckJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		running <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	o, err := organism.New(nil, organism.Options{Listeners: []organism.Listener{stuck}, ShutdownTimeout: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := o.Pump.Send(ctx, "app", "stuck", &StuckJob{Text: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("the handler never ran")
	}
	began := time.Now()
	err = o.Shutdown(ctx)
	took := time.Since(began)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the drain's bound run out", err)
	}
	// The default bound is 10 s; a loaded machine still ends a 200 ms
	// drain well before it.
	if took >= 8*time.Second {
		t.Errorf("Shutdown took %s with ShutdownTimeout 200ms", took)
	}
}
