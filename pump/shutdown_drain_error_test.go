package pump_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// A graceful Shutdown whose drain ran out says which bound ran out: the
// pump's own ShutdownTimeout (the caller's context had time left, so
// "context deadline exceeded" alone would point at the wrong one) or the
// caller's context. Either way errors.Is still finds
// context.DeadlineExceeded, as xmlpipe run's shutdown expects.
func TestShutdownDrainErrorSaysWhichBound(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration // Options.ShutdownTimeout
		ctxAfter time.Duration // the caller's deadline
		want     string
	}{
		{name: "the pump's drain time", timeout: 100 * time.Millisecond, ctxAfter: time.Hour,
			want: "the drain ran out after 100ms (Options.ShutdownTimeout)"},
		{name: "the caller's context", timeout: time.Hour, ctxAfter: 100 * time.Millisecond,
			want: "the drain ran out: the caller's context ended"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			waiter := listenerOf(t, "waiter", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				entered <- struct{}{}
				<-ctx.Done()
				return nil, context.Cause(ctx)
			})
			p := newPump(t, pump.Options{ShutdownTimeout: tc.timeout}, waiter)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			mustSend(t, p, client, "waiter", &Ping{Text: "x"}, nil)
			select {
			case <-entered:
			case <-time.After(waitTimeout):
				t.Fatal("the handler did not start")
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.ctxAfter)
			defer cancel()
			err := p.Shutdown(ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("Shutdown = %v, want an error saying %q, wrapping %v", err, tc.want, context.DeadlineExceeded)
			}
		})
	}
}
