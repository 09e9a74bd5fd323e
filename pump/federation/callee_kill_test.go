package federation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestCalleeKillFailsTheCall: an operator's kill of the conversation that
// serves a peer's call (ctl kill-thread on the callee), or a cancel of its
// answer (ctl cancel-thread), fails the caller's
// call with a refusal saying so, rather than ending it with no answer and
// no error — as if the callee had answered nothing.
func TestCalleeKillFailsTheCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*callee, string) (string, error)
		want string
	}{
		{name: "kill", stop: func(c *callee, thread string) (string, error) { return c.pump.Kill(thread) },
			want: killedHere},
		{name: "cancel", stop: func(c *callee, thread string) (string, error) { return c.pump.Cancel(thread) },
			want: cancelledHere},
	} {
		t.Run(tc.name, func(t *testing.T) { calleeStopFailsTheCall(t, tc.stop, tc.want) })
	}
}

// calleeStopFailsTheCall is TestCalleeKillFailsTheCall with the callee's
// conversation stopped by stop, the call's refusal saying want.
func calleeStopFailsTheCall(t *testing.T, stop func(*callee, string) (string, error), want string) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	defer close(hold)
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	type result struct {
		r   xmlpipe.Response
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		done <- result{r, err}
	}()
	waitUntil(t, "the call never reached the callee", func() bool { return len(c.seen()) > 0 })
	g := a.m.gateways[0]
	var lt string
	waitUntil(t, "the caller holds no open call", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for id := range g.pending {
			lt = id
		}
		return lt != ""
	})
	if _, err := stop(c, derivedThread(c.m.secret, "a", lt)); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if !errors.Is(res.err, ErrRefused) || !strings.Contains(res.err.Error(), want) {
			t.Errorf("the call ended with %v, %v; want a refusal saying %q", res.r, res.err, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call still waits after the callee's conversation was killed")
	}
}
