package registry

// queueCreated queues the creation of node r for the sink and reports
// whether it queued anything (not without a sink). Callers hold t.mu.
func (t *Threads) queueCreated(r nodeRef) bool {
	if t.cfg.Sink == nil {
		return false
	}
	rec := t.record(r)
	t.pending = append(t.pending, threadEvent{created: &rec})
	t.queued++
	return true
}

// queueEnded queues the end of ids for the sink and the OnEnd subscribers
// and reports whether it queued anything (not for no ids, nor without a sink
// or subscribers). Callers hold t.mu.
func (t *Threads) queueEnded(ids []string) bool {
	if len(ids) == 0 || (t.cfg.Sink == nil && len(t.subs) == 0) {
		return false
	}
	t.pending = append(t.pending, threadEvent{ended: ids})
	t.queued++
	return true
}

// unlockAndDeliver releases t.mu, which the caller holds, and when the
// caller queued events (queued) hands them to the sink and subscribers, in
// queue order, without holding t.mu, returning once every event queued before
// the call has been handed over. A call that queued nothing returns at once:
// it has nothing of its own to wait for, and taking the lock again only to
// find that out was, on a busy pump, a second round of contention per
// thread created or ended.
//
// Only one goroutine delivers at a time; one that finds delivery under way
// waits until the deliverer has dispatched its events (the deliverer loops
// until the queue is empty), so no caller returns before the sink has seen
// what it changed.
func (t *Threads) unlockAndDeliver(queued bool) {
	if !queued {
		t.mu.Unlock()
		return
	}
	target := t.queued
	for t.delivering && t.dispatched < target {
		t.delivered.Wait()
	}
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
			t.delivered.Broadcast()
		}
	}()
	for len(t.pending) > 0 {
		evs, subs := t.pending, t.subs
		t.pending = nil
		t.mu.Unlock()
		t.dispatch(evs, subs)
		t.mu.Lock()
		t.dispatched += uint64(len(evs))
		t.delivered.Broadcast()
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
