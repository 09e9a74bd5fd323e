package registry

import (
	"cmp"
	"container/list"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrSlotsExceeded is returned by Append when a thread already holds
// MaxSlotsPerThread slots.
var ErrSlotsExceeded = errors.New("exceeded max slots")

// ErrInvalidSlot is returned for a slot without a thread id, and by Restore
// for persisted slots that do not form contiguous histories.
var ErrInvalidSlot = errors.New("invalid slot")

// SlotSink is told about every slot appended and every thread whose history
// is deleted (explicitly, by eviction, by Collect or because the thread
// ended). The store implements it for durability.
type SlotSink interface {
	// SlotAppended is called once per appended slot. s.Raw is never
	// modified again (Append copies it, AppendShared's caller hands it
	// over): the sink may keep it without copying.
	SlotAppended(s Slot)
	// ThreadDeleted is called once per deleted thread history.
	ThreadDeleted(threadID string)
}

// ContextStats summarises a ContextBuffer.
type ContextStats struct {
	// ThreadCount is the number of threads with history.
	ThreadCount int
	// TotalSlots is the number of slots over all threads.
	TotalSlots int
	// MaxThreads and MaxSlotsPerThread are the configured limits.
	MaxThreads, MaxSlotsPerThread int
	// MaxNotes and NoteTTL bound the notes of removed histories
	// (ContextConfig).
	MaxNotes int
	NoteTTL  time.Duration
	// Threads lists the thread ids, oldest-created first.
	Threads []string
	// Evicted counts threads evicted to stay within MaxThreads.
	Evicted int64
	// Kept is the number of threads whose history outlived the thread (see
	// ContextBuffer.KeepEnded); they are among ThreadCount.
	Kept int
}

// ContextBuffer holds per-thread, append-only message history within limits.
// It is safe for concurrent use.
type ContextBuffer struct {
	cfg ContextConfig

	mu      sync.RWMutex
	threads map[string]*ThreadContext
	// oldest and newest are the ends of the histories' creation order
	// (ThreadContext.prev, next).
	oldest, newest *ThreadContext
	// kept lists the histories kept after their thread ended (KeepEnded,
	// Retain), oldest-ended first: eviction takes them before any other.
	kept    *list.List
	evicted int64
	// keep decides which ended threads keep their history (KeepEnded).
	keep atomic.Pointer[func(first Slot) bool]
	// expired holds the pending notes of the histories Collect or an
	// eviction removed (context_expired.go).
	expired expiries
}

// NewContextBuffer returns an empty buffer; zero fields of cfg take their
// defaults.
func NewContextBuffer(cfg ContextConfig) (*ContextBuffer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &ContextBuffer{
		cfg:     cfg.WithDefaults(),
		threads: make(map[string]*ThreadContext),
		kept:    list.New(),
	}, nil
}

// Append records s on s.ThreadID, creating the thread's history if needed
// (evicting the oldest-created thread at MaxThreads). It assigns Index, sets
// Time when zero and PayloadType from the payload's Go type when empty,
// copies Raw, and returns the stored slot. A full thread gives an error
// wrapping ErrSlotsExceeded.
func (b *ContextBuffer) Append(s Slot) (Slot, error) {
	if s.Raw != nil {
		s.Raw = slices.Clone(s.Raw)
	}
	return b.AppendShared(s)
}

// AppendShared is Append that keeps s.Raw instead of copying it: the caller
// hands the bytes over and neither it nor anyone else modifies them again.
// The pump's canonical bytes are such (built once per message, shared with
// the journal); copying them cost every hop an allocation and a copy.
func (b *ContextBuffer) AppendShared(s Slot) (Slot, error) {
	if s.ThreadID == "" {
		return Slot{}, fmt.Errorf("registry: append: no thread id: %w", ErrInvalidSlot)
	}
	now := b.cfg.Clock()
	if s.Time.IsZero() {
		s.Time = now
	}
	if s.PayloadType == "" {
		s.PayloadType = payloadTypeName(s.Payload)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.getOrCreate(s.ThreadID, now)
	if len(c.slots) >= b.cfg.MaxSlotsPerThread {
		return Slot{}, fmt.Errorf("registry: thread %s %w (%d)", s.ThreadID, ErrSlotsExceeded, b.cfg.MaxSlotsPerThread)
	}
	s.Index = len(c.slots)
	c.slots = append(c.slots, s)
	c.touched = now
	if c.keptElem != nil { // the conversation goes on: its history is live again
		b.kept.Remove(c.keptElem)
		c.keptElem = nil
	}
	if b.cfg.Sink != nil {
		b.cfg.Sink.SlotAppended(s)
	}
	return s, nil
}

// GetOrCreate returns the history of thread id, creating it (and evicting the
// oldest-created thread at MaxThreads) if needed.
func (b *ContextBuffer) GetOrCreate(id string) *ThreadContext {
	now := b.cfg.Clock()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.getOrCreate(id, now)
}

// Thread returns the history of thread id, if any.
func (b *ContextBuffer) Thread(id string) (*ThreadContext, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, ok := b.threads[id]
	return c, ok
}

// Full reports whether thread id's history holds as many slots as a thread
// may: the next append to it fails with ErrSlotsExceeded.
func (b *ContextBuffer) Full(id string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, ok := b.threads[id]
	return ok && len(c.slots) >= b.cfg.MaxSlotsPerThread
}

// ThreadExists reports whether thread id has history.
func (b *ContextBuffer) ThreadExists(id string) bool {
	_, ok := b.Thread(id)
	return ok
}

// DeleteThread removes thread id's history and reports whether it existed.
func (b *ContextBuffer) DeleteThread(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.delete(id)
}

// ThreadsEnded deletes the history of every ended thread, except the
// threads KeepEnded keeps. Subscribe it with Threads.OnEnd.
func (b *ContextBuffer) ThreadsEnded(ids []string) {
	var keep func(Slot) bool
	if fn := b.keep.Load(); fn != nil {
		keep = *fn
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if c := b.threads[id]; c != nil && keep != nil && len(c.slots) > 0 && keep(c.slots[0]) {
			b.retain(c)
			continue
		}
		b.delete(id)
	}
}

// KeepEnded sets which histories outlive their thread: when a thread ends
// (ThreadsEnded), the history of one whose first slot keep accepts is kept —
// and persisted by the sink — until Collect finds it idle for the TTL, or
// MaxThreads evicts it (kept histories go first, oldest-ended first). A
// message appended to it later (the conversation continues on the same
// thread id) makes it live again. The pump keeps the conversations an
// outside party began with an agent, so that party may continue them. keep
// is called with the buffer locked and must not call back into it; nil
// keeps none (the default).
func (b *ContextBuffer) KeepEnded(keep func(first Slot) bool) {
	if keep == nil {
		b.keep.Store(nil)
		return
	}
	b.keep.Store(&keep)
}

// Retain marks the histories of ids, whose threads are no longer live, as
// kept (see KeepEnded): after a restart the organism retains the restored
// histories of threads that had ended. Unknown ids are ignored.
func (b *ContextBuffer) Retain(ids ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if c := b.threads[id]; c != nil {
			b.retain(c)
		}
	}
}

// retain keeps c's history past its thread's end. Callers hold b.mu.
func (b *ContextBuffer) retain(c *ThreadContext) {
	if c.keptElem == nil {
		c.keptElem = b.kept.PushBack(c)
	}
}

// Clear removes every thread's history.
func (b *ContextBuffer) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.oldest != nil {
		b.delete(b.oldest.id)
	}
}

// Collect removes the history of every thread without an append for at
// least the configured TTL, noting it (context_expired.go), drops the
// pending notes older than NoteTTL, and returns how many threads it
// removed.
func (b *ContextBuffer) Collect() int {
	now := b.cfg.Clock()
	cutoff := now.Add(-b.cfg.TTL)
	b.mu.Lock()
	defer b.mu.Unlock()
	var idle []string
	for id, c := range b.threads {
		if !c.touched.After(cutoff) {
			idle = append(idle, id)
		}
	}
	for _, id := range idle {
		b.remove(b.threads[id], ExpiredIdle, now)
	}
	b.collectNotes(now)
	return len(idle)
}

// Stats summarises the buffer.
func (b *ContextBuffer) Stats() ContextStats {
	b.mu.RLock()
	defer b.mu.RUnlock()
	st := ContextStats{
		ThreadCount:       len(b.threads),
		MaxThreads:        b.cfg.MaxThreads,
		MaxSlotsPerThread: b.cfg.MaxSlotsPerThread,
		MaxNotes:          b.cfg.MaxNotes,
		NoteTTL:           b.cfg.NoteTTL,
		Threads:           make([]string, 0, len(b.threads)),
		Evicted:           b.evicted,
		Kept:              b.kept.Len(),
	}
	for c := b.oldest; c != nil; c = c.next {
		st.TotalSlots += len(c.slots)
		st.Threads = append(st.Threads, c.id)
	}
	return st
}

// Restore adds persisted slots (in any order; Payload is not persisted). Each
// thread's slots must carry the indices 0…n-1 exactly once, and the thread
// must have no history yet; otherwise nothing changes and the error wraps
// ErrInvalidSlot. Threads are created oldest first slot first; beyond
// MaxThreads the oldest are evicted (and the sink told). A thread may hold
// more than MaxSlotsPerThread restored slots; further appends then fail. A
// restored thread counts as appended to at restore time. The sink is not told
// about restored slots.
func (b *ContextBuffer) Restore(slots []Slot) error {
	byThread := make(map[string][]Slot)
	for _, s := range slots {
		if s.ThreadID == "" {
			return fmt.Errorf("registry: restore slot %d: no thread id: %w", s.Index, ErrInvalidSlot)
		}
		byThread[s.ThreadID] = append(byThread[s.ThreadID], s)
	}
	ids := make([]string, 0, len(byThread))
	for id, ss := range byThread {
		slices.SortFunc(ss, func(a, b Slot) int { return a.Index - b.Index })
		for i, s := range ss {
			if s.Index != i {
				return fmt.Errorf("registry: restore thread %s: slot index %d at position %d: %w", id, s.Index, i, ErrInvalidSlot)
			}
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y string) int {
		if c := byThread[x][0].Time.Compare(byThread[y][0].Time); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	now := b.cfg.Clock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if b.threads[id] != nil {
			return fmt.Errorf("registry: restore thread %s: already has history: %w", id, ErrInvalidSlot)
		}
	}
	for _, id := range ids {
		ss := byThread[id]
		c := b.getOrCreate(id, ss[0].Time)
		c.slots = ss
		c.touched = now
	}
	return nil
}

// getOrCreate returns id's history, creating it (as of created) and evicting
// the oldest-created thread at MaxThreads (kept histories first), noting
// the evicted history (context_expired.go). Callers hold b.mu.
func (b *ContextBuffer) getOrCreate(id string, created time.Time) *ThreadContext {
	if c := b.threads[id]; c != nil {
		return c
	}
	// The thread's own note is taken first: the note of the history
	// evicted below may drop the oldest pending one.
	x, expired := b.expired.take(id)
	for len(b.threads) >= b.cfg.MaxThreads {
		oldest := b.oldest
		if k := b.kept.Front(); k != nil {
			oldest = k.Value.(*ThreadContext)
		}
		b.remove(oldest, ExpiredEvicted, b.cfg.Clock())
		b.evicted++
	}
	c := &ThreadContext{buf: b, id: id, created: created, touched: created}
	if expired {
		c.expiry = new(Expiry) // allocated only here: most threads never expired
		*c.expiry = x          // the note goes with the history now (its sink row stays)
	}
	c.slots = c.first[:0]
	b.threads[id] = c
	c.prev = b.newest
	if b.newest != nil {
		b.newest.next = c
	} else {
		b.oldest = c
	}
	b.newest = c
	return c
}

// delete removes id's history and tells the sink. Callers hold b.mu.
func (b *ContextBuffer) delete(id string) bool {
	c := b.threads[id]
	if c == nil {
		return false
	}
	delete(b.threads, id)
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		b.oldest = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		b.newest = c.prev
	}
	c.prev, c.next = nil, nil
	if c.keptElem != nil {
		b.kept.Remove(c.keptElem)
		c.keptElem = nil
	}
	if b.cfg.Sink != nil {
		b.cfg.Sink.ThreadDeleted(id)
	}
	if c.expiry != nil { // the note of the history before goes with this one
		if s := b.expirySink(); s != nil {
			s.ExpiryDropped(id)
		}
	}
	return true
}
