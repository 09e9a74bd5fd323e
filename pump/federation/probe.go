package federation

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Probing a link a call waits on. An idle link is pinged every pingEvery
// and given up after silenceLimit without a frame, which tells a frozen
// peer (a stopped process, a dropped route) in up to 30 s. While a call of
// this side waits on the peer, that is too late for its caller: a link
// silent for probeSilence is pinged, and closed when nothing at all comes
// back within probeTimeout (the peer's pong, or any byte), so the caller
// is told the peer is unreachable in seconds, as when the link closes.
// A peer still reading a large envelope over a slow link is silent too,
// and answers a ping only once it has read what came before: while more
// than probeUnread bytes this side wrote may still be on their way (no
// pong has said the peer read them), the link is not probed, and only
// silenceLimit gives it up, as before.
// The checks run every probeCheck only while a call waits; an idle link
// wakes once a pingEvery, as before.
var (
	probeSilence = 2 * time.Second
	probeTimeout = 4 * time.Second
	probeCheck   = 500 * time.Millisecond
	probeUnread  = int64(64 << 10)
)

// ErrPeerSilent is why a link was closed when its peer, pinged while calls
// waited on it, did not answer within probeTimeout.
var ErrPeerSilent = errors.New("the peer did not answer a ping")

// heard records that something came from the peer just now: a frame, a
// piece of one, a ping or a pong.
func (c *conn) heard() { c.heardAt.Store(int64(time.Since(c.born))) }

// lastHeard is when the peer was last heard of, as a duration since the
// link was made.
func (c *conn) lastHeard() time.Duration { return time.Duration(c.heardAt.Load()) }

// probeSoon wakes the keepalive of the gateway's link, if it has one, as a
// call begins to wait on the peer: it checks the link's silence from then
// on (keepalive).
func (g *gateway) probeSoon() {
	g.mu.Lock()
	c := g.conn
	g.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case c.probe <- struct{}{}:
	default:
	}
}

// callsWaiting reports whether a call of this side waits on the peer.
func (g *gateway) callsWaiting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending) > 0
}

// keepalive pings the peer every pingEvery and, while a call waits on it,
// whenever the link has been silent for probeSilence; a link pinged so
// whose peer is not heard of within probeTimeout is closed with
// ErrPeerSilent (its calls then wait as on any link down, and their
// callers are told the peer is unreachable). It returns when the link
// ends.
func (c *conn) keepalive() {
	lastPing := c.lastHeard()
	probed := time.Duration(-1) // when the pending probe's ping left; -1: none pending
	t := time.NewTimer(c.nextCheck(0, probed, c.g.callsWaiting()))
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-c.probe:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-t.C:
		}
		now := time.Since(c.born)
		waiting := c.g.callsWaiting()
		if probed >= 0 {
			switch heard := c.lastHeard(); {
			case heard > probed:
				probed = -1 // answered
			case now-probed >= probeTimeout:
				c.close(fmt.Errorf("%w within %s, silent for %s while calls waited on it (a frozen or overloaded organism?)",
					ErrPeerSilent, probeTimeout, (now - heard).Round(time.Second)))
				return
			}
		}
		if probed < 0 {
			probe := waiting && now-c.lastHeard() >= probeSilence && c.written.Load()-c.read.Load() <= probeUnread
			if probe || now-lastPing >= pingEvery {
				deadline := writeTimeout
				if probe {
					deadline = probeTimeout
				}
				// The ping carries how much this side had written: the
				// pong says the peer read that much (readUpTo).
				if err := c.ping(time.Now().Add(deadline)); err != nil {
					if probe {
						err = fmt.Errorf("%w: the ping was not written within %s while calls waited on it: %w",
							ErrPeerSilent, probeTimeout, err)
					}
					c.close(fmt.Errorf("ping: %w", err))
					return
				}
				lastPing = now
				if probe {
					probed = now
				}
			}
		}
		t.Reset(c.nextCheck(now-lastPing, probed, waiting))
	}
}

// readUpTo records what a pong says: the peer read the bytes this side
// had written when it sent the ping (its data, from keepalive; a pong of
// anything else says nothing).
func (c *conn) readUpTo(data string) {
	n, err := strconv.ParseInt(data, 10, 64)
	if err != nil {
		return
	}
	for {
		old := c.read.Load()
		if n <= old || c.read.CompareAndSwap(old, n) {
			return
		}
	}
}

// nextCheck is how long keepalive sleeps: until the next regular ping
// (sincePing is how long ago the last one left), or probeCheck while a
// call waits or a probe is pending.
func (c *conn) nextCheck(sincePing, probed time.Duration, waiting bool) time.Duration {
	next := max(pingEvery-sincePing, 0)
	if waiting || probed >= 0 {
		next = min(next, probeCheck)
	}
	return next
}

// answerPing is the link's ping handler: as gorilla/websocket's default,
// a pong with the ping's data (queued for the link's writer: the reader
// does not wait for it), and it records that the peer was heard of.
func (c *conn) answerPing(data string) error {
	c.heard()
	c.pong([]byte(data))
	return nil
}

// readMessage reads the next data message of the link as
// websocket.Conn.ReadMessage does, recording every piece of it that comes
// (heard): a large envelope still arriving over a slow link is no silence.
func (c *conn) readMessage() (int, []byte, error) {
	mt, r, err := c.ws.NextReader()
	if err != nil {
		return mt, nil, err
	}
	c.heard()
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if n > 0 {
			c.heard()
		}
		if errors.Is(err, io.EOF) {
			return mt, b, nil
		}
		if err != nil {
			return mt, b, err
		}
	}
}
