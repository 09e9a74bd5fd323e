package pump

// A kill takes its conversation's messages out of the listener queues at
// once (purgeKilled): a message waiting at a paused or halted listener, or
// behind busy workers, is dead-lettered when Kill runs rather than when a
// worker would have taken it, so the queue depth, the admission budget and
// the conversation's completion are right from then on, not from the
// resume. A message queued after Kill's sweep (a halted handling put back,
// an output or a released hold reaching its listener) is swept as it is
// queued (enqueue).

// purgeKilled takes the queued messages of the killed conversation conv out
// of every listener's queue and finishes each as a worker would have
// (killQueued). It returns how many it took.
func (p *Pump) purgeKilled(conv string) int {
	n := 0
	for _, l := range p.liveListeners() {
		n += p.purgeAt(l, conv)
	}
	return n
}

// purgeAt takes the queued messages of the killed conversation conv out of
// l's queue (see purgeKilled).
func (p *Pump) purgeAt(l *listener, conv string) int {
	ds := l.queue.removeConv(conv)
	for _, d := range ds {
		p.killQueued(l, d)
	}
	return len(ds)
}

// enqueue queues d at l, or (ok false) reports l's pipeline closed. A
// delivery of a conversation killed meanwhile does not stay: Kill marks the
// conversation before it sweeps the queues, so either its sweep finds d or
// this check sees the mark (both may: one of them takes d).
func (p *Pump) enqueue(l *listener, d *delivery) (ok, woke bool) {
	ok, woke = l.queue.push(d)
	if ok && p.killed(d.conv) {
		p.purgeAt(l, d.conv)
	}
	return ok, woke
}

// killQueued finishes d, taken out of l's queue because its conversation
// was killed (or its answer cancelled: see Cancel), as a worker popping it would have (handle, finish): a dead
// letter, its journaled message marked delivered (recovery runs it not
// again), its accounting released; or, while the pump stops without
// handling it (dropsQueued), dropped undelivered for Recover, whose kill
// record keeps it from running.
func (p *Pump) killQueued(l *listener, d *delivery) {
	if p.dropsQueued(l, d) {
		p.drop(d)
		return
	}
	p.deadLetter(d.conv, d.thread, d.from, l.Name, d.payloadName, nil, p.dropReason(d.conv))
	d.mark.release()
	p.releaseDelivery(d)
	p.convDone(d.conv)
}

// dropsQueued reports whether d, popped from l's queue, is dropped
// undelivered instead of handled (see drop): the pump stops now, keeps its
// halt through a graceful stop at a halted l, or its drain timed out.
func (p *Pump) dropsQueued(l *listener, d *delivery) bool {
	return p.stopNow.Load() || (p.keepHalt.Load() && (p.haltedFor(l) || p.senderHalted(d.from))) || p.cutByDrain(d)
}
