package console

import (
	"context"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// awaitOrHuman waits at most d for conversation conv to complete, like
// await, but gives up as soon as conv waits for a human: a piped session
// reads its input on one goroutine, so the /approve or /deny that would let
// conv go on can only be read once the wait ends. It returns whether conv
// completed and, when it gave up for that reason, the id of the approval
// conv waits for. When it did not complete, conv stays awaited.
func (c *Console) awaitOrHuman(ctx context.Context, conv string, d time.Duration) (done bool, approval string) {
	g, ok := c.b.(organism.Governor)
	if !ok || d <= 0 {
		return d > 0 && c.await(ctx, conv, d), ""
	}
	// Subscribed before the first look, so an approval created in between
	// still wakes the wait.
	wake := make(chan struct{}, 1)
	defer g.WatchGovernance(func(string) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	t := time.NewTimer(d)
	defer t.Stop()
	completed := c.out.wait(conv, c.convs.turnOf(conv))
	for {
		if id := pendingApproval(ctx, g, conv); id != "" {
			return false, id
		}
		select {
		case <-completed:
			c.out.release(conv)
			return true, ""
		case <-ctx.Done():
			c.out.release(conv)
			return false, ""
		case <-t.C:
			return false, ""
		case <-wake:
		}
	}
}

// pendingApproval returns the id of an approval conv waits for ("" for
// none, or when the approvals cannot be listed).
func pendingApproval(ctx context.Context, g organism.Governor, conv string) string {
	as, err := g.Approvals(ctx, organism.StatusPending)
	if err != nil {
		return ""
	}
	for _, a := range as {
		if a.Conversation == conv || a.Thread == conv {
			return a.ID
		}
	}
	return ""
}

// peerCheck is how often a session leaving looks whether a conversation it
// waits for waits on an unreachable peer organism (awaitLeaving).
const peerCheck = 250 * time.Millisecond

// awaitLeaving is awaitOrHuman for a session that is ending: it also gives
// up as soon as conv waits on a call to a peer organism that cannot be
// reached (organism.PeerWaiter) — that call goes on only once the peer is
// back, or fails at its call_timeout, minutes later — and names the
// gateway then.
func (c *Console) awaitLeaving(ctx context.Context, conv string, d time.Duration) (done bool, approval, peer string) {
	pw, ok := c.b.(organism.PeerWaiter)
	if !ok || !pw.HasPeers() {
		done, approval = c.awaitOrHuman(ctx, conv, d)
		return done, approval, ""
	}
	end := time.Now().Add(d)
	for {
		if gw, waits := pw.WaitsOnUnreachablePeer(conv); waits {
			return false, "", gw
		}
		left := time.Until(end)
		if left <= 0 {
			return false, "", ""
		}
		done, approval = c.awaitOrHuman(ctx, conv, min(left, peerCheck))
		if done || approval != "" || ctx.Err() != nil {
			return done, approval, ""
		}
	}
}
