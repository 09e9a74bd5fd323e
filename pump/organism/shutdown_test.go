package organism_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// errorLog is a slog.Handler keeping the messages of error records.
type errorLog struct {
	mu   *sync.Mutex
	errs *[]string
}

func (h errorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h errorLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += fmt.Sprintf(" %s=%v", a.Key, a.Value); return true })
	h.mu.Lock()
	*h.errs = append(*h.errs, msg)
	h.mu.Unlock()
	return nil
}
func (h errorLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h errorLog) WithGroup(string) slog.Handler      { return h }

// DrainJob is held by its handler until the test releases it.
type DrainJob struct{ Text string }

// DrainDone is what DrainJob's handler sends on.
type DrainDone struct{ Text string }

// TestConcurrentShutdownWaitsForTheDrain: two Shutdowns at once (a signal
// handler and a deferred call, say) while a handler still runs: the one
// that does not drain waits for the other instead of closing the store
// under it, so what the draining handler sends is journaled (no "store:
// closed"), and neither returns before the drain ends.
func TestConcurrentShutdownWaitsForTheDrain(t *testing.T) {
	entered, release, handled := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var errs []string
	o, err := organism.New(nil, organism.Options{
		DataDir: t.TempDir(),
		Logger:  slog.New(errorLog{mu: &mu, errs: &errs}),
		Listeners: []organism.Listener{
			organism.Func("held", "Waits to be released", func(_ context.Context, p *DrainJob, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				close(entered)
				<-release
				return xmlpipe.Send("after", &DrainDone{Text: p.Text}), nil
			}),
			organism.Func("after", "Takes what held sends", func(context.Context, *DrainDone, xmlpipe.Metadata) (xmlpipe.Response, error) {
				close(handled)
				return nil, nil
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), embedTimeout)
	defer cancel()
	asked := make(chan error, 1)
	go func() { _, err := o.Ask(ctx, "held", &DrainJob{Text: "x"}); asked <- err }()
	<-entered
	shut := make(chan error, 2)
	for range 2 {
		go func() { shut <- o.Shutdown(ctx) }()
	}
	// Neither Shutdown may return while the handler runs; release it when
	// one does (the defect) or after a grace period (a loaded machine only
	// makes the check weaker, never fails it).
	var early []error
	select {
	case err := <-shut:
		early = append(early, err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	for len(early) < 2 {
		early = append(early, <-shut)
	}
	for _, err := range early {
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	select {
	case <-handled:
	default:
		t.Error("the drained handler's message was not handled before Shutdown returned")
	}
	if err := <-asked; err != nil && !errors.Is(err, pump.ErrNoAnswer) {
		t.Errorf("Ask: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string(nil), errs); diff != "" {
		t.Errorf("error log (-want +got):\n%s", diff)
	}
}
