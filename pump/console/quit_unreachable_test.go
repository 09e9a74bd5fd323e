package console

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// unreachableBackend is a local organism whose every conversation waits
// on gateway b's peer, which cannot be reached (organism.PeerWaiter).
type unreachableBackend struct{ *organism.Local }

func (unreachableBackend) WaitsOnUnreachablePeer(string) (string, bool) { return "b", true }

func (unreachableBackend) HasPeers() bool { return true }

// TestQuitDoesNotWaitOnUnreachablePeer: a piped session does not hold its
// @ line, nor its /quit, for a conversation whose call waits on a peer
// organism that cannot be reached — that call goes on only when the peer
// is back, or fails at its call_timeout minutes later. It ends at once,
// naming the conversation and why it did not wait.
func TestQuitDoesNotWaitOnUnreachablePeer(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // the gate holds the answer all along
	b := unreachableBackend{testOrganism(t, release)}
	c, err := New(b, Config{LineWait: 10 * time.Minute, ReplyTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), strings.NewReader("@gate slow\n/quit\n"), &out) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStillRunning) || !strings.Contains(err.Error(), "(waits on gateway b, unreachable)") {
			t.Errorf("Run = %v; want ErrStillRunning naming the unreachable gateway", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the session still waits on a conversation whose peer is unreachable")
	}
	got := normalizeIDs(out.String())
	if want := "note: thread <t1> waits on gateway b, which is unreachable; not waiting for it"; !strings.Contains(got, want) {
		t.Errorf("transcript:\n%s\nwant a line with %q", got, want)
	}
}
