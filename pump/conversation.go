package pump

// convStart remembers where an external conversation's replies and failures go.
func (p *Pump) convStart(conv string, out Outlet) {
	p.convMu.Lock()
	defer p.convMu.Unlock()
	c := p.convs[conv]
	if c == nil {
		c = &convState{}
		p.convs[conv] = c
	}
	if out != nil {
		c.outlet = out
	}
}

// convHold counts one more message of conv in flight.
func (p *Pump) convHold(conv string) {
	p.convMu.Lock()
	defer p.convMu.Unlock()
	c := p.convs[conv]
	if c == nil {
		c = &convState{}
		p.convs[conv] = c
	}
	c.inflight++
}

// convDone counts one message of conv finished; at zero the conversation is
// complete and its outlet and the subscribers are told.
func (p *Pump) convDone(conv string) {
	p.convMu.Lock()
	c := p.convs[conv]
	if c == nil {
		p.convMu.Unlock()
		return
	}
	c.inflight--
	if c.inflight > 0 {
		p.convMu.Unlock()
		return
	}
	delete(p.convs, conv)
	if c.killed {
		p.killing.Add(-1)
	}
	p.convMu.Unlock()
	ev := Event{Kind: EventComplete, Time: p.opts.Clock(), Conversation: conv, Thread: conv}
	if c.outlet != nil {
		c.outlet.Deliver(ev)
	}
	p.subs.publish(ev)
}

// emitToConv delivers an event to a conversation's outlet and the subscribers.
func (p *Pump) emitToConv(conv string, ev Event) {
	p.convMu.Lock()
	var out Outlet
	if c := p.convs[conv]; c != nil {
		out = c.outlet
	}
	p.convMu.Unlock()
	if out != nil {
		out.Deliver(ev)
	}
	p.subs.publish(ev)
}

// enqueueInternal queues handler output (or a pump-generated error) for the
// ingress stages; it never blocks.
func (p *Pump) enqueueInternal(w *work) {
	p.hold()
	p.convHold(w.conv)
	if !p.work.push(w) {
		p.release()
		p.convDone(w.conv)
		from := "core" // a pump-generated <huh>/SystemError
		if w.sender != nil {
			from = w.sender.Name
		}
		p.deadLetter(w.conv, w.senderThread, from, w.egress, "", clip(w.raw), "pump shut down before the message was processed")
	}
}
