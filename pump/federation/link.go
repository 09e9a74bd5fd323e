package federation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Link timing.
const (
	pingEvery    = 10 * time.Second
	silenceLimit = 3 * pingEvery
	writeTimeout = 10 * time.Second
	// maxFrame caps one incoming frame.
	maxFrame = 8 << 20
	// handlersPerLink bounds the envelopes of one link handled at once
	// (calls being injected, meta questions being answered), and the
	// envelopes read but not delivered yet.
	handlersPerLink = 256
)

// conn is one live, authenticated link of a gateway.
type conn struct {
	g    *gateway
	ws   *websocket.Conn
	peer peer
	// out is what the link's writer writes (linkwrite.go).
	out  linkWriter
	once sync.Once
	done chan struct{}
	err  error
	// ready is closed once this side has asked the peer for the imports
	// it lacks (the first attempt): the peer's calls wait for it, so a
	// peer that calls back at once finds its exports already imported.
	ready     chan struct{}
	readyOnce sync.Once
	// acks writes the acknowledgements once they are durable.
	acks *acker
	// bye is closed once the peer said goodbye (frameGoodbye): it drains
	// the link, and no acknowledgement comes on it any more.
	bye     chan struct{}
	byeOnce sync.Once
	// handlers bounds the envelopes of this link handled at once (the
	// handler goroutines); an idle handler takes its next one from work.
	handlers chan struct{}
	work     chan func()
	hwg      sync.WaitGroup
	// importsFetched is set (before the link is adopted) once the imports
	// were fetched on the link made at start.
	importsFetched bool
	// unimportable is how many imported tags the fetch at start found the
	// peer exporting in a way no import can take (qualified, or with a
	// payload no local listener stands for): this link asks for them no
	// more, as the peer answers the same until it restarts.
	unimportable int
	// served is closed once the link made at start (refreshOnce) is no
	// longer served; nil for the others.
	served chan struct{}
	// junkEnvelopes logs the binary frames refused with nothing to answer
	// (no envelope, no link id), for the delivery goroutine (run).
	junkEnvelopes *junkFrames
	// refusals logs the envelopes refused by their link id (run).
	refusals *refusals
	// born is when the link was made; heardAt is when the peer was last
	// heard of, as a duration since born (probe.go).
	born    time.Time
	heardAt atomic.Int64
	// probe wakes keepalive as a call begins to wait on the peer.
	probe chan struct{}
	// written counts the bytes of the frames this side wrote, read the
	// bytes of them the peer is known to have read (its pong to a ping
	// sent after them): what lies between may still be on its way.
	written, read atomic.Int64
	// held are the peer's calls waiting for ready, with the cancels
	// behind them, in the order they came (ready.go); nil when none is.
	hmu  sync.Mutex
	held []heldEnvelope
}

// newConn is an authenticated link of g over ws to p, not served yet
// (run). withServed marks the link made at start (refreshOnce); dialed,
// a link this side dialed (its frames are masked).
func newConn(g *gateway, ws *websocket.Conn, p peer, withServed, dialed bool) *conn {
	c := &conn{g: g, ws: ws, peer: p, done: make(chan struct{}), ready: make(chan struct{}), bye: make(chan struct{}),
		born: time.Now(), probe: make(chan struct{}, 1)}
	if withServed {
		c.served = make(chan struct{})
	}
	c.out = linkWriter{kick: make(chan struct{}, 1), client: dialed}
	c.acks = newAcker(c, c.out.kick)
	return c
}

// drainLimit bounds a graceful stop's wait for what its links owe the
// peer (drain).
const drainLimit = 2 * time.Second

// drain ends the link gracefully, when ctx ends at the latest: it takes no
// more envelopes from the peer (those it does not take, the peer sends
// again on the next link: not processed here, they are no copies), lets
// the envelopes taken run their course to an acknowledgement or a refusal
// — each written only once what it acknowledges is durable, as ever —
// and waits for the peer's acknowledgements of the envelopes this side
// wrote on the link; it closes the link once those frames are written and
// read. Closing at once left the peer to resend what this side had
// processed but not yet acknowledged, and this side's next start to send
// again what the peer had processed: either next link dropped them as
// copies.
func (c *conn) drain(ctx context.Context) {
	if !c.acks.drain(ctx.Done()) {
		c.g.log.Info("federation: link closed before every acknowledgement it owed was written; the peer resends those envelopes",
			"limit", drainLimit)
	}
	// The peer, perhaps stopping too, waits for no acknowledgement from
	// this side any more: without a word each side waited out the bound.
	if err := c.writeFrame(frame{Type: frameGoodbye}); err != nil {
		c.g.log.Debug("federation: goodbye not written", "error", err)
	}
	if !c.g.awaitAcks(c, false, ctx.Done()) {
		c.g.log.Info("federation: link closed before the peer acknowledged every envelope written on it; the next start sends those again",
			"limit", drainLimit)
	}
	c.close(fmt.Errorf("%w: %w", ErrClosed, closingStop))
}

// handlerIdle is how long a link's handler goroutine waits for work
// before it leaves.
const handlerIdle = 10 * time.Second

// handle runs fn on a handler goroutine of the link, at most
// handlersPerLink at once (it waits for room: backpressure on delivery):
// an idle one, else a new one. Handlers stay for the next envelope — a
// goroutine per envelope grew its stack anew for every call it injected —
// and leave once idle for handlerIdle, or when the link ends.
func (c *conn) handle(fn func()) {
	select {
	case c.work <- fn:
		return
	default:
	}
	select {
	case c.work <- fn:
	case c.handlers <- struct{}{}:
		c.hwg.Add(1)
		go c.handler(fn)
	}
}

// handler runs fn, then what handle passes it, until idle or the link
// ends.
func (c *conn) handler(fn func()) {
	defer func() { <-c.handlers; c.hwg.Done() }()
	idle := time.NewTimer(handlerIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(handlerIdle)
		select {
		case fn = <-c.work:
		case <-idle.C:
			return
		case <-c.done:
			return
		}
	}
}

// markReady lets the peer's calls through (once).
func (c *conn) markReady() { c.readyOnce.Do(func() { close(c.ready) }) }

// closing is why this side closes a link on purpose: in its own words
// (Error, as this side logs it) and in the peer's (told as the close
// frame's reason, at most maxCloseReason bytes, which the peer's status
// shows after "the peer closed the link: ").
type closing struct{ local, peer string }

func (c *closing) Error() string { return c.local }

// The causes of a link closed on purpose.
var (
	closingStop     = &closing{"stopping", "it is stopping"}
	closingRemoved  = &closing{"gateway removed", "its gateway was removed, or restarted by a reload"}
	closingRelinked = &closing{"relinked: the gateway's peer address or identity changed (reload)",
		"its gateway relinked (a reload changed its peer address or identity)"}
	closingReplaced = &closing{"replaced by a newer link", "a newer link replaced this one"}
)

// maxCloseReason is the longest reason a close frame carries (125 bytes
// of control frame payload, 2 of them the code).
const maxCloseReason = 123

// close ends the link (once) with cause; a closing cause is told to the
// peer.
func (c *conn) close(cause error) {
	c.once.Do(func() {
		c.err = cause
		close(c.done)
		var why *closing
		reason := ""
		if errors.As(cause, &why) && len(why.peer) <= maxCloseReason {
			reason = why.peer
		}
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, reason),
			time.Now().Add(time.Second))
		_ = c.ws.Close()
	})
}

var errLinkClosed = errors.New("federation: link closed")

// run serves the link until it ends: it reads frames, keeps the link alive
// with pings (and probes it while a call waits: keepalive), verifies the
// envelopes in parallel and delivers them to the gateway in the order they
// came.
func (c *conn) run() error {
	c.handlers = make(chan struct{}, handlersPerLink)
	c.work = make(chan func())
	go c.writeLoop()
	c.ws.SetReadLimit(maxFrame)
	_ = c.ws.SetReadDeadline(time.Now().Add(silenceLimit))
	c.ws.SetPongHandler(func(data string) error {
		c.heard()
		c.readUpTo(data)
		return c.ws.SetReadDeadline(time.Now().Add(silenceLimit))
	})
	c.ws.SetPingHandler(c.answerPing)
	c.heard()
	go c.keepalive()
	c.junkEnvelopes = &junkFrames{log: c.g.log, now: c.g.m.now}
	defer c.junkEnvelopes.end() // once stage.close has delivered the last
	c.refusals = &refusals{log: c.g.log, now: c.g.m.now}
	defer c.refusals.end() // once the handlers are done (hwg)
	stage := newOrderedStage(verifyWorkers(), handlersPerLink, c.g.checkInbound,
		func(in *inbound) {
			c.g.deliver(c, in)
			c.acks.delivered()
		})
	defer c.hwg.Wait()
	defer stage.close()
	junk := &junkFrames{log: c.g.log, now: c.g.m.now}
	defer junk.end()
	for {
		mt, b, err := c.readMessage()
		if err != nil {
			c.close(peerClosed(err))
			return c.err
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(silenceLimit))
		switch mt {
		case websocket.TextMessage:
			f, err := decodeFrame(b)
			if err != nil {
				junk.refused("federation: refused a frame that is not JSON", "error", err)
				continue
			}
			if f.Type == frameGoodbye {
				c.byeOnce.Do(func() { close(c.bye) })
				continue
			}
			if !c.g.onFrame(f) {
				junk.refused("federation: unexpected frame", "type", f.Type)
			}
		case websocket.BinaryMessage:
			// Acknowledgements of this side's envelopes (text frames)
			// are still read while the link drains; envelopes are not.
			if c.acks.take() {
				stage.add(b)
			}
		}
	}
}

// peerClosed is err, the end of reading a link, in an operator's words
// when the peer closed it on purpose (a normal close, its reason said).
func peerClosed(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure && ce.Code != websocket.CloseGoingAway {
		return err
	}
	if ce.Text == "" {
		return fmt.Errorf("the peer closed the link (no reason given): %w", err)
	}
	return fmt.Errorf("the peer closed the link: %s", strings.ToValidUTF8(ce.Text, "?"))
}
