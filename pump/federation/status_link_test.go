package federation

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStatusTellsTheLink: a gateway's status says what an operator asks
// of a federation without reading logs: the link's state (up, down or
// connecting) and since when, the peer's address (the URL this side
// dials, or the address an inbound link came from), the envelopes that
// crossed each way and the callers waiting on the peer's answer.
func TestStatusTellsTheLink(t *testing.T) {
	aKey := newKey(t)
	hold := make(chan struct{})
	c := newCalleeHolding(t, aKey, hold)
	before := time.Now()
	a := newCaller(t, aKey, c, t.TempDir())
	defer a.m.Close()
	waitUntil(t, "the link never came up", func() bool { return a.m.Status()[0].State == LinkUp })
	done := make(chan error, 1)
	go func() {
		_, err := a.echo.Handle(context.Background(), a.once, callMetadata())
		done <- err
	}()
	waitUntil(t, "the caller never counted as waiting", func() bool { return a.m.Status()[0].Waiting == 1 })
	close(hold)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call was never answered")
	}
	type view struct {
		State, PeerAddress string
		Connected          bool
		Waiting            int
		In, Out            bool
	}
	see := func(s GatewayStatus) view {
		return view{State: s.State, PeerAddress: s.PeerAddress, Connected: s.Connected, Waiting: s.Waiting,
			In: s.EnvelopesIn > 0, Out: s.EnvelopesOut > 0}
	}
	var s GatewayStatus
	waitUntil(t, "the caller still waits", func() bool { s = a.m.Status()[0]; return s.Waiting == 0 && s.EnvelopesIn > 0 })
	if d := cmp.Diff(view{State: LinkUp, PeerAddress: c.url(), Connected: true, In: true, Out: true}, see(s)); d != "" {
		t.Errorf("the caller's gateway (-want +got):\n%s", d)
	}
	if s.Since.Before(before) || s.Since.After(time.Now()) {
		t.Errorf("up since %v, want a time since the test began (%v)", s.Since, before)
	}
	// The callee's gateway dials nothing: its peer's address is where the
	// inbound link came from.
	var cs GatewayStatus
	waitUntil(t, "the callee never counted the answer", func() bool { cs = c.m.Status()[0]; return cs.EnvelopesOut > 0 })
	if cs.State != LinkUp || cs.PeerAddress == "" || cs.RemoteURL != "" || cs.EnvelopesIn == 0 {
		t.Errorf("the callee's gateway: %+v, want up, with the dialer's address and the call counted in", cs)
	}
	// Down: the peer gone, the link leaves LinkUp and says since when.
	cut := time.Now()
	stopCallee(t, c)
	waitUntil(t, "the link never went down", func() bool { s = a.m.Status()[0]; return s.State != LinkUp })
	if s.State != LinkDown && s.State != LinkConnecting {
		t.Errorf("state %q, want %q or %q", s.State, LinkDown, LinkConnecting)
	}
	if s.Since.Before(cut) {
		t.Errorf("down since %v, before the link was cut (%v)", s.Since, cut)
	}
}
