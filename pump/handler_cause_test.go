package pump_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestHandlerCauseByXmlpipeNames: a handler — which imports package
// xmlpipe, never pump — tells why its context ended with xmlpipe's names
// alone: its listener's timeout, a kill, an immediate shutdown.
func TestHandlerCauseByXmlpipeNames(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		// stop cancels the running handler's call of conversation conv
		// (nil: its timeout does).
		stop func(t *testing.T, p *pump.Pump, conv string)
		want error
	}{
		{name: "timeout", timeout: 20 * time.Millisecond, want: xmlpipe.ErrHandlerTimeout},
		{name: "kill", stop: func(t *testing.T, p *pump.Pump, conv string) {
			if _, err := p.Kill(conv); err != nil {
				t.Errorf("Kill: %v", err)
			}
		}, want: xmlpipe.ErrConversationKilled},
		{name: "immediate shutdown", stop: func(t *testing.T, p *pump.Pump, _ string) {
			if err := p.ShutdownNow(waitCtx(t)); err != nil {
				t.Errorf("ShutdownNow: %v", err)
			}
		}, want: xmlpipe.ErrShutdown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			started, causes := make(chan struct{}, 1), make(chan error, 1)
			l := listenerOf(t, "waiter", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				started <- struct{}{}
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, nil
			})
			l.Timeout = tc.timeout
			p := startPump(t, pump.Options{}, l)
			conv := mustSend(t, p, client, "waiter", &Ping{Text: "wait"}, nil)
			select {
			case <-started:
			case <-waitCtx(t).Done():
				t.Fatal("the handler never started")
			}
			if tc.stop != nil {
				tc.stop(t, p, conv)
			}
			select {
			case cause := <-causes:
				if !errors.Is(cause, tc.want) {
					t.Errorf("context.Cause = %v, want it to be xmlpipe's %q", cause, tc.want)
				}
			case <-waitCtx(t).Done():
				t.Fatal("the handler's context never ended")
			}
		})
	}
}
