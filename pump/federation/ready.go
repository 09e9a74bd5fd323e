package federation

// The peer's calls on a new link wait until this side has asked the peer
// for the imports it lacks (conn.ready), off the delivery path: the meta
// answer comes after them on the same link. What waits so keeps the
// link's order, and a cancel that comes behind a waiting call waits
// behind it too: handled at once, it found no conversation for the call
// (not injected yet) and was dropped, and the call, let through a moment
// later, ran for nobody. The caller's outbox sends such a pair after a
// reconnect: a call that left before the link was lost, then the cancel
// of a caller that stopped waiting while it was down.

// heldEnvelope is an envelope of the peer held until the link is ready:
// run handles it, drop forgives its acknowledgement (the link ended
// first; the peer sends it again on the next one).
type heldEnvelope struct {
	run, drop func()
}

// whenReady handles a call of the peer (run) once the link is ready, in
// the order it came among those held: at once when the link is ready and
// nothing is held, else after what is held. drop is called instead when
// the link ends first.
func (c *conn) whenReady(run, drop func()) {
	c.hmu.Lock()
	if c.held == nil {
		select {
		case <-c.ready:
			c.hmu.Unlock()
			run()
			return
		default:
		}
		c.hwg.Add(1)
		go c.runHeld()
	}
	c.held = append(c.held, heldEnvelope{run: run, drop: drop})
	c.hmu.Unlock()
}

// behindHeld handles a cancel of the peer (run) after the calls held
// before it — its own call may be one of them — or at once when none is;
// drop is called instead when the link ends first.
func (c *conn) behindHeld(run, drop func()) {
	c.hmu.Lock()
	if c.held == nil {
		c.hmu.Unlock()
		run()
		return
	}
	c.held = append(c.held, heldEnvelope{run: run, drop: drop})
	c.hmu.Unlock()
}

// runHeld waits until the link is ready, then handles what is held in
// order, what comes meanwhile included, until none is left; what is
// still held when the link ends is dropped.
func (c *conn) runHeld() {
	defer c.hwg.Done()
	select {
	case <-c.ready:
	case <-c.done:
	}
	for {
		c.hmu.Lock()
		batch := c.held
		if len(batch) == 0 {
			c.held = nil
			c.hmu.Unlock()
			return
		}
		c.held = make([]heldEnvelope, 0, 1)
		c.hmu.Unlock()
		for _, h := range batch {
			select {
			case <-c.done:
				h.drop()
			default:
				h.run()
			}
		}
	}
}
