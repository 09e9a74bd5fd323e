package registry

import (
	"fmt"
	"slices"
	"time"
)

// A conversation continued after its history was removed — by Collect,
// idle for the TTL, or evicted to keep at most MaxThreads histories —
// would begin again with nothing, and neither the model nor the user would
// know: the agent would answer as if it had never met them. So the buffer
// leaves a note of each such history it removes (an expiry), and the
// history begun again under the same thread id carries it
// (ThreadContext.Expired): its reader can tell the model and the user that
// the earlier history is gone, and why (Expiry.ModelNote, UserNote).
//
// Only the histories worth a note get one: with KeepEnded set, those it
// would keep (a conversation an outside party began with an agent), so the
// threads of hops evicted by the thousand cost nothing; without it, every
// history.
//
// A note is pending until its thread's history begins again, then goes
// with that history: deleting it deletes the note, and Collect or an
// eviction of it leaves a new one. Pending notes are bounded: at most
// MaxNotes (MaxThreads, at least 1000; the oldest dropped first) and none
// older than NoteTTL (30 days; Collect drops them). A sink that implements
// ExpirySink keeps them durable, and RestoreExpiries brings them back
// after a restart.

// ExpiryReason says why a thread's earlier history was removed.
type ExpiryReason string

const (
	// ExpiredIdle: Collect removed it, idle for the TTL.
	ExpiredIdle ExpiryReason = "ttl"
	// ExpiredEvicted: it was evicted to keep at most MaxThreads histories.
	ExpiredEvicted ExpiryReason = "evicted"
)

// Expiry says that a thread's earlier history was removed, when and why.
type Expiry struct {
	// Reason is why it was removed.
	Reason ExpiryReason
	// LastActive is when the removed history was last appended to.
	LastActive time.Time
	// Removed is when it was removed.
	Removed time.Time
	// TTL is the idle time after which it was removed (ExpiredIdle).
	TTL time.Duration
	// MaxThreads is the number of histories the buffer kept
	// (ExpiredEvicted).
	MaxThreads int
	// Since is the journal seq (Slot.Seq) of the first message of the
	// history begun again after this removal, once that history was
	// removed in turn; 0 otherwise (the live history's first slot says).
	Since int64
	// Earlier are the removals of the thread's histories before this one,
	// oldest first, each with its Since: a thread whose history was
	// removed, begun again and removed again keeps every note (at most
	// MaxEarlier, the oldest dropped first), not only the latest. Kept in
	// memory: the sink and RestoreExpiries carry the latest alone.
	Earlier []Expiry
}

// MaxEarlier bounds Expiry.Earlier.
const MaxEarlier = 16

// ExpiryNote is the note of one thread's removed history, as an
// ExpirySink keeps it and RestoreExpiries takes it back.
type ExpiryNote struct {
	ThreadID string
	Expiry
}

// ExpirySink is implemented by a SlotSink that keeps the expiry notes
// durable. Its methods are called with the buffer locked and must not call
// back into it.
type ExpirySink interface {
	// ExpiryNoted is called when a history is removed and noted.
	ExpiryNoted(n ExpiryNote)
	// ExpiryDropped is called when thread's note goes: with the history
	// begun again after it, or dropped by the bounds while pending.
	ExpiryDropped(threadID string)
}

// expiredModelNote is the system note of a request whose conversation's
// earlier history expired: %s is the idle time after which it did.
const expiredModelNote = "The earlier history of this conversation expired (no message for %s) and was " +
	"removed: you do not see it and cannot recall it. If the user refers to it, say that it is gone and " +
	"ask for what you need."

// evictedModelNote is the system note of a request whose conversation's
// earlier history was evicted: %d is MaxThreads.
const evictedModelNote = "The earlier history of this conversation was dropped (the organism keeps the " +
	"history of at most %d threads) and was removed: you do not see it and cannot recall it. If the user " +
	"refers to it, say that it is gone and ask for what you need."

// expiredUserNote is what the user is told when a conversation whose
// history expired goes on: the idle time and the agent.
const expiredUserNote = "[the earlier history of this conversation expired (no message for %s, " +
	"platform.context_buffer.ttl_hours): %s does not remember it]"

// evictedUserNote is what the user is told when a conversation whose
// history was evicted goes on: MaxThreads and the agent.
const evictedUserNote = "[the earlier history of this conversation was dropped (the organism keeps the " +
	"history of at most %d threads, platform.context_buffer.max_threads): %s does not remember it]"

// ModelNote is the system note that tells a model its conversation's
// earlier history is gone, and why.
func (x Expiry) ModelNote() string {
	if x.Reason == ExpiredEvicted {
		return fmt.Sprintf(evictedModelNote, x.MaxThreads)
	}
	return fmt.Sprintf(expiredModelNote, idleText(x.TTL))
}

// UserNote is what the user of a conversation with agent is told, once,
// when it goes on after its earlier history went.
func (x Expiry) UserNote(agent string) string {
	if x.Reason == ExpiredEvicted {
		return fmt.Sprintf(evictedUserNote, x.MaxThreads, agent)
	}
	return fmt.Sprintf(expiredUserNote, idleText(x.TTL), agent)
}

// idleText words a TTL: whole hours as "24h", anything else as Go does.
func idleText(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// expiries are the pending notes: of histories removed whose thread has
// not begun a history again, bounded FIFO. Guarded by ContextBuffer.mu.
type expiries struct {
	m map[string]pendingExpiry
	// order lists the notes oldest first; an entry whose seq is not its
	// id's in m (taken, or noted again since) is skipped.
	order []expiryRef
	seq   uint64
}

// pendingExpiry is a pending note and the seq of its entry in order.
type pendingExpiry struct {
	x   Expiry
	seq uint64
}

// expiryRef is an entry of expiries.order.
type expiryRef struct {
	id  string
	seq uint64
}

// live reports whether r is its id's current note.
func (e *expiries) live(r expiryRef) bool {
	p, ok := e.m[r.id]
	return ok && p.seq == r.seq
}

// add notes id's expiry and returns the ids of the oldest notes dropped to
// keep at most limit.
func (e *expiries) add(id string, x Expiry, limit int) (dropped []string) {
	if e.m == nil {
		e.m = map[string]pendingExpiry{}
	}
	e.seq++
	e.m[id] = pendingExpiry{x: x, seq: e.seq}
	e.order = append(e.order, expiryRef{id: id, seq: e.seq})
	for len(e.m) > limit && len(e.order) > 0 {
		if r := e.order[0]; e.live(r) {
			delete(e.m, r.id)
			dropped = append(dropped, r.id)
		}
		e.order = e.order[1:]
	}
	if len(e.order) > 2*len(e.m)+16 { // entries taken or noted again: compact
		e.compact()
	}
	return dropped
}

// compact drops the entries of order that are no note any more.
func (e *expiries) compact() {
	live := make([]expiryRef, 0, len(e.m))
	for _, r := range e.order {
		if e.live(r) {
			live = append(live, r)
		}
	}
	e.order = live
}

// take removes and returns id's note.
func (e *expiries) take(id string) (Expiry, bool) {
	p, ok := e.m[id]
	if ok {
		delete(e.m, id)
	}
	return p.x, ok
}

// get returns id's note.
func (e *expiries) get(id string) (Expiry, bool) {
	p, ok := e.m[id]
	return p.x, ok
}

// dropBefore drops the notes of histories removed before cutoff and
// returns their ids.
func (e *expiries) dropBefore(cutoff time.Time) (dropped []string) {
	for _, r := range e.order {
		if p, ok := e.m[r.id]; ok && p.seq == r.seq && p.x.Removed.Before(cutoff) {
			delete(e.m, r.id)
			dropped = append(dropped, r.id)
		}
	}
	if len(dropped) > 0 {
		e.compact()
	}
	return dropped
}

// expirySink is the sink's ExpirySink, if it is one.
func (b *ContextBuffer) expirySink() ExpirySink {
	s, _ := b.cfg.Sink.(ExpirySink)
	return s
}

// noteworthy reports whether c's history, about to be removed, is worth a
// note: with KeepEnded set, one it keeps; else any with a slot. Callers
// hold b.mu.
func (b *ContextBuffer) noteworthy(c *ThreadContext) bool {
	if len(c.slots) == 0 {
		return false
	}
	fn := b.keep.Load()
	return fn == nil || (*fn)(c.slots[0])
}

// remove deletes c's history for reason and, when it is worth one, notes
// it. Callers hold b.mu.
func (b *ContextBuffer) remove(c *ThreadContext, reason ExpiryReason, now time.Time) {
	worth := b.noteworthy(c)
	b.delete(c.id)
	if !worth {
		return
	}
	x := Expiry{Reason: reason, LastActive: c.touched, Removed: now}
	if c.expiry != nil {
		// This history followed an earlier removal: its note goes on
		// before the new one, with the message this history began at.
		prev := *c.expiry
		prev.Earlier = nil
		if len(c.slots) > 0 {
			prev.Since = c.slots[0].Seq
		}
		x.Earlier = append(slices.Clone(c.expiry.Earlier), prev)
		if n := len(x.Earlier) - MaxEarlier; n > 0 {
			x.Earlier = x.Earlier[n:]
		}
	}
	switch reason {
	case ExpiredIdle:
		x.TTL = b.cfg.TTL
	case ExpiredEvicted:
		x.MaxThreads = b.cfg.MaxThreads
	}
	b.note(ExpiryNote{ThreadID: c.id, Expiry: x})
}

// note keeps n pending, within the bounds, and tells the sink. Callers
// hold b.mu.
func (b *ContextBuffer) note(n ExpiryNote) {
	dropped := b.expired.add(n.ThreadID, n.Expiry, b.cfg.MaxNotes)
	if s := b.expirySink(); s != nil {
		s.ExpiryNoted(n)
		for _, id := range dropped {
			s.ExpiryDropped(id)
		}
	}
}

// collectNotes drops the pending notes older than NoteTTL. Callers hold
// b.mu.
func (b *ContextBuffer) collectNotes(now time.Time) {
	dropped := b.expired.dropBefore(now.Add(-b.cfg.NoteTTL))
	if s := b.expirySink(); s != nil {
		for _, id := range dropped {
			s.ExpiryDropped(id)
		}
	}
}

// RestoreExpiries takes back persisted notes after Restore: the note of a
// thread with a restored history goes with it (ThreadContext.Expired),
// any other is pending again, within the bounds (the sink is told of those
// dropped). The sink is not told of the notes restored.
func (b *ContextBuffer) RestoreExpiries(notes []ExpiryNote) {
	notes = slices.Clone(notes)
	slices.SortStableFunc(notes, func(x, y ExpiryNote) int { return x.Removed.Compare(y.Removed) })
	now := b.cfg.Clock()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.expirySink()
	for _, n := range notes {
		if c := b.threads[n.ThreadID]; c != nil {
			x := n.Expiry
			c.expiry = &x
			continue
		}
		for _, id := range b.expired.add(n.ThreadID, n.Expiry, b.cfg.MaxNotes) {
			if s != nil {
				s.ExpiryDropped(id)
			}
		}
	}
	b.collectNotes(now)
}

// Expired reports whether the thread's history was begun again after an
// earlier one was removed, and when and why.
func (c *ThreadContext) Expired() (Expiry, bool) {
	c.buf.mu.RLock()
	defer c.buf.mu.RUnlock()
	if c.expiry == nil {
		return Expiry{}, false
	}
	return *c.expiry, true
}

// ExpiredEarlier reports whether thread id's history (live or not begun
// again yet) follows an earlier one that was removed.
func (b *ContextBuffer) ExpiredEarlier(id string) (Expiry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if c := b.threads[id]; c != nil {
		if c.expiry == nil {
			return Expiry{}, false
		}
		return *c.expiry, true
	}
	return b.expired.get(id)
}

// PendingExpiry reports whether thread id has no history and an earlier
// one was removed: the next message on it begins its history again, and
// is the first its user sends since. A transport that answers that message
// tells its user then (Expiry.UserNote).
func (b *ContextBuffer) PendingExpiry(id string) (Expiry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.threads[id] != nil {
		return Expiry{}, false
	}
	return b.expired.get(id)
}
