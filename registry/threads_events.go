package registry

// threadEvent is one queued notification: a created node, ended ids, or
// the records of nodes used since their last report (SaveActivity).
type threadEvent struct {
	// created, when isCreated, is the record of a node created; held by
	// value, so queueing it allocates nothing once the queue is warm.
	created   ThreadRecord
	isCreated bool
	ended     []string
	touched   []ThreadRecord
}

// queueCreated queues the creation of node r for the sink and reports
// whether it queued anything (not without a sink); id and parent are r's
// id and its parent's when the caller has them as strings ("": formatted).
// Callers hold s.mu.
func (s *threadShard) queueCreated(r nodeRef, id, parent string) bool {
	if s.t.cfg.Sink == nil {
		return false
	}
	s.pending = append(s.pending, threadEvent{created: s.recordOf(r, id, parent), isCreated: true})
	s.queued++
	return true
}

// unlockEnded releases s.mu, which the caller holds, and reports ids as
// ended. With a sink the end is queued behind the shard's earlier events (a
// durable sink must see a thread created before it sees it end). Without one
// only OnEnd subscribers hear of it, and order between calls means nothing
// to them (ids are never reused, and they only drop state), so the caller
// tells them itself once unlocked: ends on one shard no longer wait for each
// other's delivery, which under load was the shard locks' main contention.
func (s *threadShard) unlockEnded(ids []string) {
	if s.t.cfg.Sink != nil {
		s.unlockAndDeliver(s.queueEnded(ids))
		return
	}
	subs := s.subs
	s.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	for _, fn := range subs {
		fn(ids)
	}
}

// queueEnded queues the end of ids for the sink and the OnEnd subscribers
// and reports whether it queued anything (not for no ids). Only
// unlockEnded calls it, with a sink. Callers hold s.mu.
func (s *threadShard) queueEnded(ids []string) bool {
	if len(ids) == 0 {
		return false
	}
	s.pending = append(s.pending, threadEvent{ended: ids})
	s.queued++
	return true
}

// unlockAndDeliver releases s.mu, which the caller holds, and when the
// caller queued events (queued) hands them to the sink and subscribers, in
// queue order, without holding s.mu, returning once every event queued before
// the call has been handed over. A call that queued nothing returns at once:
// it has nothing of its own to wait for, and taking the lock again only to
// find that out was, on a busy pump, a second round of contention per
// thread created or ended.
//
// Only one goroutine delivers at a time; one that finds delivery under way
// waits until the deliverer has dispatched its events (the deliverer loops
// until the queue is empty), so no caller returns before the sink has seen
// what it changed.
func (s *threadShard) unlockAndDeliver(queued bool) {
	if !queued {
		s.mu.Unlock()
		return
	}
	target := s.queued
	for s.delivering && s.dispatched < target {
		s.delivered.Wait()
	}
	if s.delivering || len(s.pending) == 0 {
		s.mu.Unlock()
		return
	}
	s.delivering = true
	finished := false
	defer func() {
		if !finished { // a callback panicked: let the next caller deliver
			s.mu.Lock()
			s.delivering = false
			s.mu.Unlock()
			s.delivered.Broadcast()
		}
	}()
	for len(s.pending) > 0 {
		evs, subs := s.pending, s.subs
		s.pending, s.spare = s.spare, nil
		s.mu.Unlock()
		s.dispatch(evs, subs)
		clear(evs) // the sink and subscribers keep what they were handed, not the queue
		s.mu.Lock()
		s.dispatched += uint64(len(evs))
		if cap(evs) <= maxSpareEvents { // reused: the next events queue in it
			if s.pending == nil {
				s.pending = evs[:0]
			} else if s.spare == nil {
				s.spare = evs[:0]
			}
		}
		s.delivered.Broadcast()
	}
	s.delivering = false
	finished = true
	s.mu.Unlock()
}

// maxSpareEvents bounds the queue a shard keeps for reuse: a burst's
// larger one goes to the garbage collector.
const maxSpareEvents = 64

// dispatch calls the sink and subscribers for each event.
func (s *threadShard) dispatch(evs []threadEvent, subs []func(ids []string)) {
	for _, ev := range evs {
		if ev.isCreated {
			s.t.cfg.Sink.ThreadCreated(ev.created)
			continue
		}
		if ev.touched != nil {
			s.t.cfg.Sink.(ActivitySink).ThreadsTouched(ev.touched)
			continue
		}
		if s.t.cfg.Sink != nil {
			s.t.cfg.Sink.ThreadsEnded(ev.ended)
		}
		for _, fn := range subs {
			fn(ev.ended)
		}
	}
}
