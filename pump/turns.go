package pump

import (
	"bytes"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Turns of a conversation. An outside party continues a conversation by
// sending on its thread; each such message begins a turn. Turns of one
// conversation never overlap: a continuation that arrives while a turn is
// still in flight — the listener may have answered already, its answer not
// yet accepted — is journaled and acknowledged as any message is, then
// held until that turn completes, and its turn begins after, in the order
// the continuations came. So the earlier turn's answer never ends the
// thread under the next one (whose answer would have nowhere to go), the
// listener's history holds the earlier answer when it reads the next
// message, and each turn's events — its answer, its failures, its
// completion — go to the outlet that sent it: a client with two
// connections (or two callers in one program) hears each turn where it
// sent it. A held message is journaled and not marked delivered, so a
// crash re-delivers it; a held message of a conversation that Kill stops
// is dropped with it (a dead letter, marked delivered) and its sender told
// by a completion with KilledReason.

// heldTurn is an outside message's turn (turnStart): begun once the
// message is journaled, or held as a continuation waiting for its
// conversation's turn in flight to complete — then run begins its turn,
// or drops it (killed). Its methods are what closures were, so a turn
// costs one allocation, not one per step.
type heldTurn struct {
	p       *Pump
	w       *work
	m       *stage.Inbound
	hop     *ingressHop // process's (turnStart)
	targets []*listener
	deliver func(seq int64)
	// seq is the message's journal seq; keep the routing snapshot pinned
	// for it until its turn begins.
	seq  int64
	keep *table
	// waiting is, for a dropped turn, how many dropped after it (its
	// completion's Event.Waiting).
	waiting int
}

// convBegin begins an outside message's turn of conv, as convStart does
// (out gets the turn's events, tbl is the pinned routing snapshot handed
// over), and returns the conversation's snapshot — unless a turn of conv
// is in flight or other continuations wait before it: then h joins the
// conversation's held turns, keeping tbl's pin, and convBegin reports
// true. A held turn being started (h is the turn the conversation's state
// was kept for) begins on that state.
func (p *Pump) convBegin(conv string, out Outlet, tbl *table, h *heldTurn) (*table, bool) {
	s := p.convs.lock(conv)
	c := s.m[conv]
	switch {
	case c == nil:
		c = p.newConvState(conv)
		s.m[conv] = c
	case h != nil && c.reserved == h:
		c.reserved = nil
	default:
		c.held = append(c.held, h)
		s.mu.Unlock()
		return nil, true
	}
	return p.convJoin(s, c, out, tbl), false
}

// nextTurn is called by convDone with conv's shard locked, once conv's
// turn in flight completed (c, already removed from the table): it keeps a
// state for the first held continuation, in flight until that one began
// its turn (startHeld), and returns the held turns to run — the first
// alone, or every one when Kill stopped the conversation (each then drops
// its message).
func (p *Pump) nextTurn(s *convShard, conv string, c *convState) []*heldTurn {
	if len(c.held) == 0 {
		return nil
	}
	if c.killed {
		return c.held
	}
	next := c.held[0]
	s.m[conv] = &convState{held: c.held[1:], reserved: next, inflight: 1}
	return c.held[:1]
}

// startHeld runs held turns nextTurn returned, on a goroutine of their own:
// convDone is called from handler workers and delivery gates, which must
// not deliver another conversation's messages under their feet.
func (p *Pump) startHeld(hs []*heldTurn, killed bool) {
	go func() {
		for i, h := range hs {
			h.waiting = len(hs) - 1 - i
			h.run(killed)
		}
	}()
}

// turnStart wraps deliver, the hand-off of outside message m (work w) to its
// targets once journaled as seq, so that it begins the message's turn of
// hop.conv (convBegin) — or, while a turn of it is in flight, acknowledges
// the message at once and holds it, the held turn handing it over later.
// hop's conv, threads, tbl and pin are process's: a held message joins its thread
// again when its turn begins (the turn before may have ended it, as a
// reply ends the thread it travelled back from), and the pinned snapshot
// it was routed in is the held turn's meanwhile.
func (p *Pump) turnStart(w *work, m *stage.Inbound, hop *ingressHop, targets []*listener,
	deliver func(int64)) func(int64) {
	h := &heldTurn{p: p, w: w, m: m, hop: hop, targets: targets, deliver: deliver}
	return h.start
}

// start is turnStart's hand-off of the message journaled as seq.
func (h *heldTurn) start(seq int64) {
	h.seq = seq
	h.keep = h.hop.pin
	h.hop.pin = nil
	// The acknowledgement is this goroutine's: a held turn may begin on
	// another before begin returns.
	w := h.w
	done, accepted := w.done, w.accepted
	w.done, w.accepted = nil, nil
	h.begin()
	if accepted != nil {
		accepted(bytes.Clone(h.m.Canonical))
	}
	if done != nil {
		done(h.m.Thread, seq, nil) // journaled; handed over, or its turn to come
	}
}

// begin begins the turn, or holds it (and reports so).
func (h *heldTurn) begin() bool {
	p := h.p
	own, held := p.convBegin(h.hop.conv, h.w.outlet, h.keep, h)
	if held {
		p.hold() // a drain waits for it
		return true
	}
	h.keep = nil
	h.hop.tbl = own
	h.deliver(h.seq)
	return false
}

// drop gives the held message up: marked delivered (never re-delivered),
// a dead letter, and its sender told.
func (h *heldTurn) drop(reason, completion string) {
	p, m, conv := h.p, h.m, h.hop.conv
	if h.keep != nil {
		p.unpinTable(h.keep)
	}
	p.newDeliveryMark(h.seq, 1).release()
	p.deadLetter(conv, m.Thread, m.From, h.targets[0].Name, m.PayloadName, m.Canonical, reason)
	p.publish(h.w.outlet, Event{Kind: EventComplete, Time: p.opts.Clock(), Conversation: conv, Thread: conv,
		Error: completion, Turn: h.seq, Waiting: h.waiting})
}

// run begins the held turn once the turn before it completed, or drops it
// (killed).
func (h *heldTurn) run(killed bool) {
	p := h.p
	defer p.release()
	if killed {
		h.drop(KilledReason, KilledReason)
		return
	}
	defer p.convDone(h.hop.conv) // the state nextTurn kept for h
	c, ts, _, err := p.assignThreads(nil, h.w, h.m, h.targets)
	if err != nil {
		h.drop("continuation: "+err.Error(), "")
		return
	}
	h.hop.conv, h.hop.threads = c, ts
	h.begin()
}
