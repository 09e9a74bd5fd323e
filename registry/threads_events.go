package registry

// queueCreated queues the creation of n for the sink. Callers hold t.mu.
func (t *Threads) queueCreated(n *node) {
	if t.cfg.Sink == nil {
		return
	}
	rec := n.record()
	t.pending = append(t.pending, threadEvent{created: &rec})
}

// queueEnded queues the end of ids for the sink and the OnEnd subscribers.
// Callers hold t.mu.
func (t *Threads) queueEnded(ids []string) {
	if len(ids) == 0 || (t.cfg.Sink == nil && len(t.subs) == 0) {
		return
	}
	t.pending = append(t.pending, threadEvent{ended: ids})
}

// deliver hands queued events to the sink and subscribers, in queue order,
// without holding t.mu. Only one goroutine delivers at a time; one that finds
// delivery under way leaves its events to the deliverer, which loops until
// the queue is empty.
func (t *Threads) deliver() {
	t.mu.Lock()
	if t.delivering || len(t.pending) == 0 {
		t.mu.Unlock()
		return
	}
	t.delivering = true
	finished := false
	defer func() {
		if !finished { // a callback panicked: let the next caller deliver
			t.mu.Lock()
			t.delivering = false
			t.mu.Unlock()
		}
	}()
	for len(t.pending) > 0 {
		evs, subs := t.pending, t.subs
		t.pending = nil
		t.mu.Unlock()
		t.dispatch(evs, subs)
		t.mu.Lock()
	}
	t.delivering = false
	finished = true
	t.mu.Unlock()
}

// dispatch calls the sink and subscribers for each event.
func (t *Threads) dispatch(evs []threadEvent, subs []func(ids []string)) {
	for _, ev := range evs {
		if ev.created != nil {
			t.cfg.Sink.ThreadCreated(*ev.created)
			continue
		}
		if t.cfg.Sink != nil {
			t.cfg.Sink.ThreadsEnded(ev.ended)
		}
		for _, fn := range subs {
			fn(ev.ended)
		}
	}
}
