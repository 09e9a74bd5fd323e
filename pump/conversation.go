package pump

import (
	"errors"

	"github.com/xml-pipeline/xmlpipe/registry"
)

// convStart remembers where an external conversation's replies and failures
// go, and which routing snapshot it routes within. tbl is a pinned snapshot
// the caller hands over: a conversation starting now keeps it; one already
// in flight keeps its own, and tbl's pin is dropped. It returns the
// conversation's snapshot.
func (p *Pump) convStart(conv string, out Outlet, tbl *table) *table {
	s := p.convs.lock(conv)
	c := s.m[conv]
	if c == nil {
		c = p.newConvState(conv)
		s.m[conv] = c
	}
	return p.convJoin(s, c, out, tbl)
}

// convJoin, with c's shard s locked, has out (when set) get conv's events
// and c keep tbl's pin unless it routes within a snapshot already (then
// tbl's pin is dropped); it unlocks s and returns c's snapshot.
func (p *Pump) convJoin(s *convShard, c *convState, out Outlet, tbl *table) *table {
	if out != nil {
		c.outlet = out
	}
	mine := c.tbl
	if mine == nil {
		c.tbl, mine, tbl = tbl, tbl, nil
	}
	s.mu.Unlock()
	if tbl != nil {
		p.unpinTable(tbl)
	}
	return mine
}

// convRoutes returns, pinned, the routing snapshot of conv when it is in
// flight (nil when it is not).
func (p *Pump) convRoutes(conv string) *table {
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	if c == nil || c.tbl == nil {
		return nil
	}
	c.tbl.refs.Add(1) // the conversation holds a pin: never retired meanwhile
	return c.tbl
}

// convHold counts one more message of conv in flight.
func (p *Pump) convHold(conv string) {
	p.convHoldSpending(conv, false)
}

// convHoldSpending is convHold for a message whose forward made its
// sender's thread spent (spends): conv then ends its spent threads when
// it completes.
func (p *Pump) convHoldSpending(conv string, spends bool) {
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	if c == nil {
		c = p.newConvState(conv)
		s.m[conv] = c
	}
	c.inflight++
	c.spent = c.spent || spends
}

// convProfile records the profile of conv's root thread (see
// convState.profile).
func (p *Pump) convProfile(conv, profile string) {
	s := p.convs.lock(conv)
	if c := s.m[conv]; c != nil {
		c.profile = profile
	}
	s.mu.Unlock()
}

// convTurn records that the outside message journaled as seq (0: not
// journaled) was delivered on conv: when it is the first of the
// conversation's current turn, its seq becomes the turn's (Event.Turn).
func (p *Pump) convTurn(conv string, seq int64) {
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	if c == nil || c.turn != 0 {
		return
	}
	if seq <= 0 {
		seq = -p.unjournaledTurns.Add(1)
	}
	c.turn = seq
}

// turnOf returns conv's current Event.Turn (0: not in flight, or no
// outside message delivered on it yet).
func (p *Pump) turnOf(conv string) int64 {
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	if c := s.m[conv]; c != nil {
		return c.turn
	}
	return 0
}

// convDone counts one message of conv finished; at zero the conversation is
// complete and its outlet and the subscribers are told.
func (p *Pump) convDone(conv string) {
	s := p.convs.lock(conv)
	c := s.m[conv]
	if c == nil {
		s.mu.Unlock()
		return
	}
	c.inflight--
	if c.inflight > 0 {
		s.mu.Unlock()
		return
	}
	delete(s.m, conv)
	s.noteEnded(conv)
	if c.killed {
		p.killing.Add(-1)
	}
	if c.cancelled {
		p.killing.Add(-1)
	}
	held := p.nextTurn(s, conv, c)
	s.mu.Unlock()
	if c.tbl != nil {
		p.unpinTable(c.tbl)
	}
	prof := c.profile
	if prof == "" {
		prof = p.liveProfile(conv) // before its threads end
	}
	for _, t := range c.ending {
		p.endThread(t)
	}
	if c.spent && held == nil {
		p.endSpent(conv)
	}
	ev := Event{Kind: EventComplete, Time: p.opts.Clock(), Conversation: conv, Thread: conv, Profile: prof, Turn: c.turn,
		Waiting: len(c.held)}
	switch {
	case c.killed:
		ev.Error = KilledReason
	case c.cancelled:
		ev.Error = CancelledReason
	}
	p.publish(c.outlet, ev)
	if held != nil {
		p.startHeld(held, c.killed)
	}
}

// KilledReason is the Error of the EventComplete of a conversation Kill
// stopped: its sender learns that no answer comes.
const KilledReason = "conversation killed"

// deferEnd postpones the end of thread (its handler returned nil) until conv
// completes, when other messages of conv are still in flight: ending the
// thread now would cascade to sub-threads whose replies are on their way
// (a listener that asked two questions and got the first answer). It
// reports false when thread may end now.
func (p *Pump) deferEnd(conv, thread string) bool {
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	if c == nil || c.inflight <= 1 { // only the message being handled
		return false
	}
	if c.ending == nil {
		c.ending = c.endingOne[:0]
	}
	c.ending = append(c.ending, thread)
	return true
}

// endThread ends thread and its sub-threads (a handler returned nil).
func (p *Pump) endThread(thread string) {
	if err := p.threads.End(thread); err != nil && !errors.Is(err, registry.ErrUnknownThread) {
		p.log.Warn("end thread", "thread", thread, "error", err)
	}
}

// endSpent ends the spent threads of conv, which has nothing in flight any
// more (see registry.Threads.EndSpent): no answer can come back to them.
// A thread a todo watcher sits on stays. It runs before conv's completion
// is published, so whoever hears of it sees only the threads that live on.
func (p *Pump) endSpent(conv string) {
	p.threads.EndSpent(conv, p.todos.Watches)
}

// spend marks thread of conv spent although no handler forwarded on it
// (registry.Threads.Spend): its handler failed, or the message that opened
// it was refused. conv, in flight (the failure is still accounted), then
// ends it with its other spent threads when it completes, instead of
// leaving it, and the spent chain above it, to the TTL.
func (p *Pump) spend(conv, thread string) {
	if !p.threads.Spend(thread) {
		return
	}
	s := p.convs.lock(conv)
	if c := s.m[conv]; c != nil {
		c.spent = true
	}
	s.mu.Unlock()
}

// emitToConv delivers an event to a conversation's outlet and the subscribers.
func (p *Pump) emitToConv(conv string, ev Event) {
	s := p.convs.lock(conv)
	var out Outlet
	if c := s.m[conv]; c != nil {
		out = c.outlet
	}
	s.mu.Unlock()
	p.publish(out, ev)
}

// emit accounts handler output of delivery d and keeps it on d until the
// handler's worker has finished with the handler; the worker then runs its
// ingress stages (runOutputs). It never blocks.
func (p *Pump) emit(d *delivery, w *work) {
	p.hold()
	p.convHoldSpending(w.conv, w.spends)
	w.after = d.after.retain()
	if w.about == "" {
		w.about = d.about(w.ref)
	}
	if d.outputs == nil && !d.oneTaken {
		d.outputs, d.oneTaken = d.one[:0], true
	}
	d.outputs = append(d.outputs, w)
}

// runOutputs runs the ingress stages of a delivery's outputs, inline when an
// ingress slot is free, else on the ingress workers — or, for a turn whose
// records are journaled as one group, one after the other (runTurn).
func (p *Pump) runOutputs(d *delivery) {
	if t := d.turn; t != nil {
		d.turn = nil
		p.runTurn(d, t)
		return
	}
	for i, w := range d.outputs {
		d.outputs[i] = nil
		if !p.processInline(w) {
			p.queueInternal(w)
		}
	}
	d.outputs = d.outputs[:0]
}

// enqueueInternal queues handler output (or a pump-generated error) for the
// ingress stages; it never blocks.
func (p *Pump) enqueueInternal(w *work) {
	p.hold()
	p.convHold(w.conv)
	p.queueInternal(w)
}

// queueInternal hands accounted internal work to the ingress workers.
func (p *Pump) queueInternal(w *work) {
	if !p.work.push(w) {
		p.queueFailed(w)
	}
}

// Running reports whether conversation conv has messages in flight (it has
// not completed).
func (p *Pump) Running(conv string) bool {
	s := p.convs.lock(conv)
	defer s.mu.Unlock()
	c := s.m[conv]
	return c != nil && c.inflight > 0
}

// queueFailed abandons accounted internal work the closed work queue
// refused: a dead letter.
func (p *Pump) queueFailed(w *work) {
	p.release()
	p.convDone(w.conv)
	from := "core" // a pump-generated <huh>/SystemError
	if w.sender != nil {
		from = w.sender.Name
	}
	p.deadLetter(w.conv, w.senderThread, from, w.egress, "", clip(w.raw), "pump shut down before the message was processed")
}
