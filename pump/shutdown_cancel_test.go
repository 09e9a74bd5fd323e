package pump_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestShutdownDrainTimeoutCancelsHandlers: a graceful Shutdown whose drain
// times out cancels the handlers still running (cause ErrDrainTimedOut,
// which is an ErrShutdown) and returns once they do or the pump gives up
// on them after CancelGrace — never waiting on a Remote handler (no
// timeout) whose peer does not answer, detached or not, nor on one that
// ignores its context. The cut message is left undelivered for Recover.
func TestShutdownDrainTimeoutCancelsHandlers(t *testing.T) {
	cases := []struct {
		name    string
		detach  bool
		ignores bool // the handler ignores its context
	}{
		{name: "waits on its peer"},
		{name: "detached, waits on its peer", detach: true},
		{name: "ignores its context", ignores: true},
		{name: "detached, ignores its context", detach: true, ignores: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newMarkJournal()
			entered := make(chan struct{})
			stuck := newGate()
			t.Cleanup(stuck.open)
			causes := make(chan error, 1)
			l := listenerOf(t, "remote", func(ctx context.Context, in *Job, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
				if tc.detach && !pump.Detach(ctx) {
					t.Error("Detach reported false for a Remote listener")
				}
				close(entered)
				if tc.ignores {
					stuck.wait(t.Context())
				} else {
					<-ctx.Done()
				}
				causes <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			})
			l.Remote, l.Workers = true, 1
			// The pump logs an abandoned handler's return after the test
			// may have ended: not through t's output, and awaited below
			// where the handler is abandoned for sure.
			abandoned := &logSignal{msg: "abandoned handler returned", seen: make(chan struct{})}
			p := newPump(t, pump.Options{Journal: j, ShutdownTimeout: 100 * time.Millisecond,
				CancelGrace: 50 * time.Millisecond, Logger: slog.New(abandoned)}, l)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			mustSend(t, p, client, "remote", &Job{Label: "waiting"}, nil)
			<-entered
			stopped := make(chan error, 1)
			go func() { stopped <- p.Shutdown(context.Background()) }()
			select {
			case err := <-stopped:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Shutdown = %v, want the drain's timeout", err)
				}
			case <-time.After(waitTimeout):
				t.Fatalf("Shutdown still waits on the handler %v after its drain timed out", waitTimeout)
			}
			stuck.open()
			if err := <-causes; !errors.Is(err, pump.ErrDrainTimedOut) || !errors.Is(err, pump.ErrShutdown) {
				t.Errorf("the handler's context ended with cause %v, want ErrDrainTimedOut (an ErrShutdown)", err)
			}
			poll(t, "nothing in flight", func() bool { return p.InFlight() == 0 })
			if tc.ignores {
				select {
				case <-abandoned.seen:
				case <-time.After(waitTimeout):
					t.Fatalf("the abandoned handler's return was not seen within %v", waitTimeout)
				}
			}
			journaled, delivered := j.deliveredText("waiting")
			if diff := cmp.Diff([2]bool{true, false}, [2]bool{journaled, delivered}); diff != "" {
				t.Errorf("the cut message [journaled, delivered] (-want +got):\n%s", diff)
			}
		})
	}
}
